"""Found look-ups are facts (rewards/README.md G1.1), in the reward and in the grader.

A key a tool resolved to a record is a fact of that output; a free parameter (a date or
jurisdiction passed to `get_tax_rate`, a recompute override, a credit note's amount) stays an
echo. Played through `LedgerEnv` on a real eval scenario; each case is judged by both readers.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from env.episode import record_episode
from env.findings import Findings
from env.generation.generator import generate
from env.generation.splits import split_seeds
from env.ledger_env import LedgerEnv, ToolRecord
from env.scenario import Scenario, reveal_truth
from eval.grounding import call_views, trace_findings
from rewards.provenance import trace_episode

Call = tuple[str, dict[str, Any]]


@pytest.fixture(scope="module")
def scenario() -> Scenario:
    return generate("eval", split_seeds("eval")[0])


def _log(scenario: Scenario, calls: list[Call]) -> tuple[ToolRecord, ...]:
    env = LedgerEnv(scenario, episode_id="ep-lookups")
    try:
        for name, arguments in calls:
            env.call(name, json.dumps(arguments))
        return record_episode(env).tool_log
    finally:
        env.close()


def _status(scenario: Scenario, calls: list[Call], cited: str) -> tuple[str, str]:
    """(the reward's status of `cited`, the grader's), for a summary that cites it alone."""
    log = _log(scenario, calls)
    findings = Findings(root_cause="no_error", affected_invoices=[], summary=f"See {cited}.")
    reward = {t.cited.raw: t.status for t in trace_episode(findings, log).traces}
    own = set()  # no credit notes drafted in these episodes
    grader = {t.text: t.status for t in trace_findings(findings, call_views(log, own))}
    return reward[cited], grader[cited]


def _named(scenario: Scenario) -> str:
    return reveal_truth(scenario).disputed_invoices[0]


@pytest.mark.parametrize("tool", ["get_invoice", "recompute_invoice"])
def test_an_invoice_id_the_tool_returned_is_a_found_fact(scenario, tool) -> None:
    invoice = _named(scenario)
    assert invoice in scenario.complaint  # the direct route: only the complaint names it
    calls: list[Call] = [(tool, {"invoice_id": invoice})]
    assert _status(scenario, calls, invoice) == ("evidence", "evidence")


def test_a_customer_id_get_customer_returned_is_a_found_fact(scenario) -> None:
    calls: list[Call] = [("get_customer", {"customer_id": scenario.customer_id})]
    assert _status(scenario, calls, scenario.customer_id) == ("evidence", "evidence")


def test_a_subscription_id_the_timeline_returned_is_a_found_fact(scenario) -> None:
    reference = reveal_truth(scenario).reference
    subscription = next(
        c.arguments["subscription_id"] for c in reference if c.name == "get_subscription_timeline"
    )
    calls: list[Call] = [("get_subscription_timeline", {"subscription_id": subscription})]
    assert _status(scenario, calls, subscription) == ("evidence", "evidence")


def test_an_invoice_list_payments_was_filtered_by_is_a_found_fact(scenario) -> None:
    invoice = _named(scenario)
    filtered = {"customer_id": scenario.customer_id, "invoice_id": invoice}
    calls: list[Call] = [("list_payments", filtered)]
    assert _status(scenario, calls, invoice) == ("evidence", "evidence")


def test_an_unknown_id_is_an_error_and_no_fact(scenario) -> None:
    calls: list[Call] = [("get_invoice", {"invoice_id": "INV-ZZZZZZ"})]
    assert _status(scenario, calls, "INV-ZZZZZZ") == ("untraceable", "untraceable")


def test_a_date_passed_to_get_tax_rate_stays_an_echo(scenario) -> None:
    calls: list[Call] = [("get_tax_rate", {"jurisdiction": "CA-ON", "date": "2025-10-10"})]
    assert _status(scenario, calls, "2025-10-10") == ("echo_only", "echo_only")


def test_a_recompute_override_stays_an_echo_while_its_invoice_id_is_a_fact(scenario) -> None:
    invoice = _named(scenario)
    calls: list[Call] = [("recompute_invoice", {"invoice_id": invoice, "seats": 97})]
    assert _status(scenario, calls, "97") == ("echo_only", "echo_only")
    assert _status(scenario, calls, invoice) == ("evidence", "evidence")


def test_a_credit_notes_invoice_and_amount_stay_echoes(scenario) -> None:
    invoice = _named(scenario)
    note = {"invoice_id": invoice, "amount": "17.31", "reason": "test"}
    calls: list[Call] = [("draft_credit_note", note)]
    assert _status(scenario, calls, "17.31") == ("echo_only", "echo_only")
    assert _status(scenario, calls, invoice) == ("echo_only", "echo_only")
