"""Property tests: whatever the model sends, `LedgerEnv.call` answers with a JSON object.

Random JSON, wrong types, SQL injection, huge and odd unicode strings, unknown tools and
non-string names or arguments: `call` never raises, always returns a JSON object string (just
`{"error": ...}` when the call is invalid), and only a valid `draft_credit_note` changes the
database (full table dumps compared before and after each call).
"""

from __future__ import annotations

import inspect
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from env.ledger_env import LedgerEnv
from env.tools import TOOL_NAMES, BillingTools
from tests.env.conftest import APRIL, CUSTOMER, MARCH, TEAM_SUB, build_hand_scenario, table_dump

SCENARIO = build_hand_scenario()
BEFORE = table_dump(SCENARIO.database)
PARAMETERS = {
    name: list(inspect.signature(getattr(BillingTools, name)).parameters)[1:] for name in TOOL_NAMES
}
INJECTIONS = [
    "x' OR 1=1 --",
    "'; DROP TABLE invoices; --",
    "INV-HAND01'; DELETE FROM credit_notes; --",
    '" OR ""="',
    "1; UPDATE invoices SET total_cents = 0",
    "CUS-HAND01' UNION SELECT * FROM customers --",
]
NASTY = [
    *INJECTIONS,
    "x" * 100_000,
    "y" * 19_000,
    "",
    " ",
    "\x00",
    "\ud800",
    "\u202e\u0644\u0639\u0631\u0628\u064a\u0629",
    "日本語の請求書",
    "🧾💸" * 50,
    "%s%s%n",
    "{labels}",
    "NaN",
    "Infinity",
    "1e-999999",
    "١٢.٣٤",
    "2025-02-30",
    "0000-00-00",
]
REAL = [CUSTOMER, MARCH, APRIL, TEAM_SUB, "DE", "2025-03-01", "1.00", "0.19", "no_error"]
HYPOTHESIS = settings(max_examples=200, deadline=None)

strings = st.one_of(st.text(max_size=30), st.sampled_from(NASTY), st.sampled_from(REAL))
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(min_value=-(10**40), max_value=10**40),
    st.floats(allow_nan=False, allow_infinity=False),
    strings,
)
json_values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=12), inner, max_size=4)
    ),
    max_leaves=12,
)


def run_call(name: Any, arguments: Any) -> dict[str, Any]:
    """Makes one call on a fresh episode and checks every invariant of the contract."""
    episode = LedgerEnv(SCENARIO, tool_budget=5)
    text = episode.call(name, arguments)
    assert isinstance(text, str)
    text.encode("utf-8")  # the trainer logs and tokenizes it
    result = json.loads(text)
    assert isinstance(result, dict)
    if "error" in result:
        assert set(result) == {"error"} and isinstance(result["error"], str) and result["error"]
    image = episode.final_database()
    if name == "draft_credit_note" and "error" not in result:
        after = table_dump(image)
        assert {t for t in BEFORE if BEFORE[t] != after[t]} == {"credit_notes"}
        assert len(after["credit_notes"]) == len(BEFORE["credit_notes"]) + 1
    elif image != SCENARIO.database:  # identical bytes are identical tables; else compare rows
        assert table_dump(image) == BEFORE
    assert len(episode.tool_log) == 1
    episode.close()
    return result


@st.composite
def tool_arguments(draw: st.DrawFn) -> tuple[str, dict[str, Any]]:
    """A real tool with a mix of its own parameter names and junk keys, any JSON values."""
    name = draw(st.sampled_from(TOOL_NAMES))
    keys = draw(st.lists(st.sampled_from(PARAMETERS[name]) | st.text(max_size=12), max_size=6))
    return name, {key: draw(json_values) for key in keys}


@HYPOTHESIS
@given(tool_arguments())
def test_random_json_arguments_never_break_a_tool(call: tuple[str, dict[str, Any]]) -> None:
    name, arguments = call
    run_call(name, json.dumps(arguments))


@st.composite
def well_shaped_arguments(draw: st.DrawFn) -> tuple[str, dict[str, Any]]:
    """Every parameter of the right JSON type but with nasty or random content."""
    name = draw(st.sampled_from(TOOL_NAMES))
    spec = json.loads(json.dumps(_schemas()[name]))
    arguments: dict[str, Any] = {}
    for key, prop in spec["properties"].items():
        if key not in spec.get("required", []) and draw(st.booleans()):
            continue
        kind = prop.get("type")
        if kind == "integer":
            arguments[key] = draw(st.integers(min_value=-(10**30), max_value=10**30))
        elif kind == "boolean":
            arguments[key] = draw(st.booleans())
        elif kind == "array":
            item = st.fixed_dictionaries({"invoice_id": strings, "overcharge_amount": strings})
            arguments[key] = draw(st.lists(item, max_size=3))
        elif "enum" in prop:
            arguments[key] = draw(st.sampled_from(prop["enum"]) | strings)
        else:
            arguments[key] = draw(strings)
    return name, arguments


def _schemas() -> dict[str, Any]:
    from env.tool_specs import openai_tools

    return {tool["function"]["name"]: tool["function"]["parameters"] for tool in openai_tools()}


@HYPOTHESIS
@given(well_shaped_arguments())
def test_well_typed_nasty_values_never_break_a_tool(call: tuple[str, dict[str, Any]]) -> None:
    name, arguments = call
    run_call(name, json.dumps(arguments))


raw_texts = st.one_of(
    st.text(max_size=200),
    st.sampled_from(NASTY),
    json_values.map(json.dumps),
    st.sampled_from(["", "{", "[]", "null", "1", '"x"', "{}", '{"a":', "{'a': 1}", "NaN"]),
)


@HYPOTHESIS
@given(st.sampled_from(TOOL_NAMES), raw_texts)
def test_raw_argument_text_that_is_not_a_json_object_is_an_error(name: str, raw: str) -> None:
    result = run_call(name, raw)
    try:
        parsed = json.loads(raw)
    except (ValueError, RecursionError):
        parsed = None
    if not isinstance(parsed, dict) and raw != "":
        assert "error" in result


non_strings = st.one_of(
    st.none(),
    st.integers(),
    st.floats(),
    st.binary(max_size=20),
    st.lists(st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=5), st.integers(), max_size=3),
)


@HYPOTHESIS
@given(st.one_of(st.text(max_size=50), st.sampled_from(NASTY), non_strings), raw_texts)
def test_unknown_or_non_string_tool_names_are_an_error(name: Any, raw: str) -> None:
    if name in TOOL_NAMES:
        name = name + "_x"
    result = run_call(name, raw)
    assert "unknown tool" in result["error"]


@HYPOTHESIS
@given(st.sampled_from(TOOL_NAMES), non_strings)
def test_non_string_arguments_are_an_error(name: str, arguments: Any) -> None:
    assert "error" in run_call(name, arguments)


@HYPOTHESIS
@given(strings, strings)
def test_a_credit_note_changes_the_database_only_when_it_is_accepted(
    amount: str, reason: str
) -> None:
    run_call(
        "draft_credit_note",
        json.dumps({"invoice_id": MARCH, "amount": amount, "reason": reason}),
    )


@pytest.mark.parametrize("injection", INJECTIONS)
@pytest.mark.parametrize("name", TOOL_NAMES)
def test_sql_injection_in_every_string_parameter_is_just_data(name: str, injection: str) -> None:
    schema = _schemas()[name]
    for key, prop in schema["properties"].items():
        if prop.get("type") != "string":
            continue
        arguments = {
            "customer_id": CUSTOMER,
            "invoice_id": MARCH,
            "subscription_id": TEAM_SUB,
            "jurisdiction": "DE",
            "date": "2025-03-01",
            "amount": "1.00",
            "reason": "r",
            "root_cause": "no_error",
            "affected_invoices": [],
            "summary": "s",
        }
        arguments = {k: v for k, v in arguments.items() if k in schema["properties"]}
        arguments[key] = injection
        run_call(name, json.dumps(arguments))


def test_an_integer_too_long_to_parse_is_an_error_not_an_exception() -> None:
    # json.loads raises ValueError (not JSONDecodeError) for ints over 4300 digits; the tools
    # refuse any number over 30 digits before that, naming the limit
    raw = '{"invoice_id": "INV-HAND01", "seats": ' + "9" * 5000 + "}"
    error = run_call("recompute_invoice", raw)["error"]
    assert error.startswith("number 9999") and "out of range" in error and len(error) < 200


def test_deeply_nested_arguments_are_an_error_not_an_exception() -> None:
    raw = '{"customer_id": ' + "[" * 5000 + "]" * 5000 + "}"
    assert "error" in run_call("get_customer", raw)


def test_huge_argument_text_is_refused_with_the_limit() -> None:
    raw = json.dumps({"customer_id": "x" * 100_000})
    assert "under 20000 chars" in run_call("get_customer", raw)["error"]


def test_a_lone_surrogate_in_an_argument_name_still_returns_utf8_text() -> None:
    raw = '{"customer_id": "CUS-HAND01", "\\ud800": 1}'
    assert "error" in run_call("get_customer", raw)
