"""The frozen tool contract (design §3): names, parameter schemas and result keys.

`test_tool_contract_snapshot.json` is the contract. A change to a tool name, a parameter
schema or a result key fails here with a diff. Regenerate after an intended, announced change:
    LEDGERGYM_UPDATE_SNAPSHOT=1 pytest tests/env/test_tool_contract.py
"""

from __future__ import annotations

import difflib
import inspect
import json
import os
from pathlib import Path
from typing import Any

import pytest

from env.ledger_env import LedgerEnv
from env.scenario import Scenario
from env.tool_specs import TOOL_CONTRACT_VERSION, openai_tools, parse_docstring
from env.tools import TOOL_NAMES, WRITE_TOOLS, BillingTools
from tests.env.conftest import (
    APRIL,
    CUSTOMER,
    GROWTH_SUB,
    MARCH,
    MAY,
    TEAM_SUB,
    ok,
    table_dump,
)

SNAPSHOT = Path(__file__).with_name("test_tool_contract_snapshot.json")
OPAQUE = {"details"}  # free-form per event type: data, not contract

# One successful call sequence that exercises every result shape (coupon set and unset, a plan
# change, a credit note on the invoice, a tax window open and closed).
SUCCESS_CALLS: list[tuple[str, dict[str, Any]]] = [
    ("get_customer", {"customer_id": CUSTOMER}),
    ("list_invoices", {"customer_id": CUSTOMER}),
    ("draft_credit_note", {"invoice_id": MARCH, "amount": "10.00", "reason": "probe"}),
    *[("get_invoice", {"invoice_id": i}) for i in (MARCH, APRIL, MAY)],
    ("list_payments", {"customer_id": CUSTOMER}),
    *[("get_subscription_timeline", {"subscription_id": s}) for s in (TEAM_SUB, GROWTH_SUB)],
    ("get_tax_rate", {"jurisdiction": "DE", "date": "2025-03-01"}),
    ("get_tax_rate", {"jurisdiction": "DE", "date": "2024-03-01"}),
    *[("recompute_invoice", {"invoice_id": i}) for i in (MARCH, APRIL, MAY)],
    (
        "submit_findings",
        {"root_cause": "no_error", "affected_invoices": [], "summary": "probe"},
    ),
]


def key_paths(value: Any, prefix: str = "") -> set[str]:
    """{"a": [{"b": 1}], "c": {"d": 2}} -> {"a", "a[].b", "c", "c.d"}."""
    paths: set[str] = set()
    if isinstance(value, dict):
        for key, item in value.items():
            path = f"{prefix}.{key}" if prefix else key
            paths.add(path)
            if key not in OPAQUE:
                paths |= key_paths(item, path)
    elif isinstance(value, list):
        for item in value:
            paths |= key_paths(item, f"{prefix}[]")
    return paths


def current_contract(scenario: Scenario) -> dict[str, Any]:
    episode = LedgerEnv(scenario, tool_budget=100)
    result_keys: dict[str, set[str]] = {}
    for name, arguments in SUCCESS_CALLS:
        result = ok(episode, name, **arguments)
        result_keys.setdefault(name, set()).update(key_paths(result))
    episode.close()
    tools = openai_tools()
    return {
        "version": TOOL_CONTRACT_VERSION,
        "tools": [tool["function"]["name"] for tool in tools],
        "parameters": {tool["function"]["name"]: tool["function"]["parameters"] for tool in tools},
        "result_keys": {name: sorted(result_keys[name]) for name in TOOL_NAMES},
    }


def _text(contract: dict[str, Any]) -> str:
    return json.dumps(contract, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def test_the_tool_contract_matches_the_snapshot(hand_scenario: Scenario) -> None:
    current = _text(current_contract(hand_scenario))
    if os.environ.get("LEDGERGYM_UPDATE_SNAPSHOT") == "1":
        SNAPSHOT.write_text(current, encoding="utf-8")
    if not SNAPSHOT.exists():
        pytest.fail(f"{SNAPSHOT.name} is missing; write it with LEDGERGYM_UPDATE_SNAPSHOT=1")
    frozen = SNAPSHOT.read_text(encoding="utf-8")
    if current != frozen:
        diff = "".join(
            difflib.unified_diff(
                frozen.splitlines(keepends=True),
                current.splitlines(keepends=True),
                fromfile=f"{SNAPSHOT.name} (frozen contract)",
                tofile="current tools",
            )
        )
        pytest.fail(
            "The tool contract changed (design §3 says it is frozen). If the change is intended "
            "and announced, regenerate with LEDGERGYM_UPDATE_SNAPSHOT=1.\n" + diff,
            pytrace=False,
        )


def test_key_paths_walk_dicts_and_list_items() -> None:
    value = {"a": [{"b": 1}, {"c": {"d": 2}}], "e": None, "details": {"free": 1}}
    assert key_paths(value) == {"a", "a[].b", "a[].c", "a[].c.d", "e", "details"}


def test_exactly_the_nine_contract_tools_are_exposed() -> None:
    names = [tool["function"]["name"] for tool in openai_tools()]
    assert names == [
        "get_customer",
        "list_invoices",
        "get_invoice",
        "list_payments",
        "get_subscription_timeline",
        "get_tax_rate",
        "recompute_invoice",
        "draft_credit_note",
        "submit_findings",
    ]
    assert list(TOOL_NAMES) == names
    assert WRITE_TOOLS == ("draft_credit_note",)


def test_every_tool_docstring_has_an_args_line_for_every_parameter() -> None:
    for name in TOOL_NAMES:
        method = getattr(BillingTools, name)
        parameters = list(inspect.signature(method).parameters)[1:]
        description, documented = parse_docstring(method.__doc__ or "")
        assert description, name
        assert list(documented) == parameters, name
        assert all(text.strip() for text in documented.values()), name


def test_every_parameter_schema_forbids_unknown_arguments_and_has_descriptions() -> None:
    for tool in openai_tools():
        schema = tool["function"]["parameters"]
        assert schema["type"] == "object" and schema["additionalProperties"] is False
        for name, prop in schema["properties"].items():
            assert prop.get("description"), (tool["function"]["name"], name)


def test_only_draft_credit_note_changes_the_database(hand_scenario: Scenario) -> None:
    episode = LedgerEnv(hand_scenario, tool_budget=100)
    for name, arguments in SUCCESS_CALLS:
        before = table_dump(episode.final_database())
        ok(episode, name, **arguments)
        after = table_dump(episode.final_database())
        if name in WRITE_TOOLS:
            changed = {table for table in before if before[table] != after[table]}
            assert changed == {"credit_notes"}
            assert len(after["credit_notes"]) == len(before["credit_notes"]) + 1
        else:
            assert after == before, f"{name} changed the database"
    episode.close()
