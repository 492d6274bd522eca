"""`LedgerEnv.call` never raises, whatever Python object it is given, and every refusal says
what to fix (issue 10, item 6).

A policy bug, a broken parser or a hostile harness can hand `call` anything: nested containers,
bytes, NaN, huge integers, objects whose `repr` raises, lone surrogates. Each must come back as
one `{"error": ...}` JSON object that names the rule broken, with a printable log entry, and the
episode must go on. The findings limits are checked message by message, not just for "error".
"""

from __future__ import annotations

import json
import math
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from env.findings import MAX_ITEMS, MAX_SUMMARY
from env.ledger_env import LedgerEnv
from env.tool_specs import MAX_ARGUMENT_CHARS, MAX_NUMBER_DIGITS
from env.tools import TOOL_NAMES
from tests.env.conftest import CUSTOMER, MARCH, build_hand_scenario

SCENARIO = build_hand_scenario()
BOUNDED = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True
)
NAME_RULE = "unknown tool: the name must be a string, one of: "
ARGUMENTS_RULE = f"arguments must be a JSON object string under {MAX_ARGUMENT_CHARS} chars"


class Hostile:
    """An object every printing of which raises."""

    def __repr__(self) -> str:
        raise RuntimeError("repr refused")

    def __str__(self) -> str:
        raise RuntimeError("str refused")

    def __format__(self, spec: str) -> str:
        raise RuntimeError("format refused")


class HostileText(str):
    """A str subclass whose methods lie or raise: `call` must use the characters only."""

    def __str__(self) -> str:
        raise RuntimeError("str refused")

    def __eq__(self, other: object) -> bool:
        raise RuntimeError("eq refused")

    __hash__ = str.__hash__

    def encode(self, *args: Any, **kwargs: Any) -> bytes:
        raise RuntimeError("encode refused")


def nested_list(depth: int) -> list[Any]:
    value: list[Any] = []
    for _ in range(depth):
        value = [value]
    return value


def answer(name: Any, arguments: Any) -> tuple[dict[str, Any], LedgerEnv]:
    """One call on a fresh episode; checks the contract every answer keeps."""
    env = LedgerEnv(SCENARIO, tool_budget=5)
    text = env.call(name, arguments)
    assert isinstance(text, str)
    text.encode("utf-8")  # the trainer tokenizes it and the log writes it as UTF-8
    result = json.loads(text)
    assert isinstance(result, dict)
    (record,) = env.tool_log
    for field in (record.name, record.arguments, record.result):
        assert isinstance(field, str)
        field.encode("utf-8")
    assert len(record.name) <= 1000
    assert record.is_error == ("error" in result)
    assert not env.done  # a refused call does not end the episode
    return result, env


def error_of(name: Any, arguments: Any) -> str:
    result, env = answer(name, arguments)
    env.close()
    assert set(result) == {"error"}, result
    assert isinstance(result["error"], str) and result["error"]
    return result["error"]


# arbitrary Python objects ---------------------------------------------------------------------

_leaves = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(min_value=-(10**5000), max_value=10**5000),  # beyond int -> str digit limit
    st.floats(),  # NaN and infinities included
    st.decimals(),
    st.complex_numbers(),
    st.binary(max_size=20),
    st.text(max_size=20),
    st.sampled_from(["\ud800", "\udfff", "a\ud800b", "\x00", "\u202e"]),
    st.builds(Hostile),
    st.builds(HostileText, st.text(max_size=10)),
    st.builds(object),
    st.sampled_from([type, len, Ellipsis, NotImplemented, math.inf, Decimal("NaN")]),
)
python_objects = st.recursive(
    _leaves,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.lists(inner, max_size=4).map(tuple),
        st.frozensets(st.integers(), max_size=4),
        st.dictionaries(st.text(max_size=8) | st.integers(), inner, max_size=4),
    ),
    max_leaves=15,
)
not_text = python_objects.filter(lambda value: not isinstance(value, str))


@BOUNDED
@given(not_text, st.sampled_from(['{"customer_id": "CUS-HAND01"}', "{}", ""]))
def test_a_tool_name_that_is_not_text_is_refused_with_the_tool_names(name: Any, raw: str) -> None:
    error = error_of(name, raw)
    assert error.startswith(NAME_RULE) and all(tool in error for tool in TOOL_NAMES)


@BOUNDED
@given(st.sampled_from(TOOL_NAMES), not_text)
def test_arguments_that_are_not_text_are_refused_with_what_to_send(
    name: str, arguments: Any
) -> None:
    assert error_of(name, arguments) == ARGUMENTS_RULE


@BOUNDED
@given(python_objects, python_objects)
def test_any_pair_of_python_objects_gets_a_json_answer(name: Any, arguments: Any) -> None:
    result, env = answer(name, arguments)
    env.close()
    # a HostileText's == raises: compare its characters (hypothesis draws tool names too)
    if not isinstance(name, str) or "".join(list(name)) not in TOOL_NAMES:
        assert "unknown tool" in result["error"]


@BOUNDED
@given(st.from_type(type).flatmap(st.from_type).filter(lambda v: not isinstance(v, str)))
def test_an_instance_of_any_type_is_refused_as_arguments(arguments: Any) -> None:
    assert error_of("get_customer", arguments) == ARGUMENTS_RULE


# the explicit cases of the issue --------------------------------------------------------------


def test_a_5000_deep_nested_list_is_refused_as_a_name_and_as_arguments() -> None:
    deep = nested_list(5000)

    assert error_of(deep, "{}").startswith(NAME_RULE)
    assert error_of("get_customer", deep) == ARGUMENTS_RULE
    assert "not valid JSON" in error_of("get_customer", "[" * 5000 + "]" * 5000)


def test_an_object_whose_repr_and_str_raise_is_refused_and_logged_printably() -> None:
    result, env = answer(Hostile(), Hostile())

    assert result["error"].startswith(NAME_RULE)
    assert "Hostile" in env.tool_log[0].name and "Hostile" in env.tool_log[0].arguments
    assert error_of("get_customer", Hostile()) == ARGUMENTS_RULE


def test_a_str_subclass_is_read_as_its_characters() -> None:
    result, env = answer(
        HostileText("get_customer"), HostileText(json.dumps({"customer_id": CUSTOMER}))
    )

    assert result["customer_id"] == CUSTOMER
    assert env.tool_log[0].name == "get_customer"


def test_a_huge_int_whose_repr_raises_is_refused() -> None:
    huge = 10**5000  # repr raises ValueError: too many digits

    assert error_of(huge, "{}").startswith(NAME_RULE)
    assert error_of("get_customer", huge) == ARGUMENTS_RULE


@pytest.mark.parametrize("surrogate", ["\ud800", "\udfff", "INV-\ud800"])
def test_a_lone_surrogate_anywhere_is_refused_as_undecodable_text(surrogate: str) -> None:
    as_name = error_of(surrogate, "{}")
    as_raw = error_of("get_customer", surrogate)
    as_value = error_of("get_invoice", json.dumps({"invoice_id": surrogate}))
    as_raw_value = error_of("get_invoice", '{"invoice_id": "' + surrogate + '"}')
    as_summary = error_of(
        "submit_findings",
        json.dumps({"root_cause": "no_error", "affected_invoices": [], "summary": surrogate}),
    )

    assert as_name.startswith("unknown tool '") and "available tools" in as_name
    assert as_raw == "arguments for get_customer are not valid JSON; send a JSON object"
    for error, where in ((as_value, "invoice_id of get_invoice"),
                         (as_raw_value, "invoice_id of get_invoice"),
                         (as_summary, "summary of submit_findings")):  # fmt: skip
        assert f"argument {where} contains undecodable text" in error
        assert "send valid Unicode text" in error


def test_a_surrogate_in_a_nested_key_names_its_path() -> None:
    raw = json.dumps({
        "root_cause": "no_error", "affected_invoices": [{"\ud800": "x"}], "summary": "",
    })  # fmt: skip

    error = error_of("submit_findings", raw)

    assert "argument affected_invoices[0] of submit_findings contains undecodable text" in error


@pytest.mark.timeout(60)  # unguarded, the exact value of 1e999999999 takes minutes to build
@pytest.mark.parametrize("literal", ["1e999999999", "-1e-999999999", "0e-99999999", "9" * 40])
def test_a_json_number_no_argument_can_mean_is_refused_at_once(literal: str) -> None:
    raw = '{"invoice_id": "INV-HAND01", "seats": ' + literal + "}"

    error = error_of("recompute_invoice", raw)

    assert error.startswith(f"number {literal[:40]}")
    assert f"is out of range; send numbers of at most {MAX_NUMBER_DIGITS} digits" in error


# the findings limits: each refusal names its rule ---------------------------------------------


def findings(label: str, items: list[dict[str, Any]], summary: str = "") -> str:
    return json.dumps({"root_cause": label, "affected_invoices": items, "summary": summary})


def item(invoice_id: str = MARCH, amount: Any = "1.00") -> dict[str, Any]:
    return {"invoice_id": invoice_id, "overcharge_amount": amount}


def test_too_many_affected_invoices_names_the_limit() -> None:
    items = [item(f"INV-AAAA{n:04d}") for n in range(MAX_ITEMS + 1)]

    error = error_of("submit_findings", findings("wrong_tax_rate", items))

    assert error == (
        f"findings refused: affected_invoices: affected_invoices lists {MAX_ITEMS + 1} invoices; "
        f"at most {MAX_ITEMS} are accepted"
    )


def test_a_summary_over_the_limit_names_its_length_and_the_limit() -> None:
    error = error_of("submit_findings", findings("no_error", [], "x" * (MAX_SUMMARY + 1)))

    assert error == (
        f"findings refused: summary: summary is {MAX_SUMMARY + 1} characters; shorten it to at "
        f"most {MAX_SUMMARY}"
    )


def test_a_repeated_invoice_id_names_the_invoice() -> None:
    error = error_of("submit_findings", findings("wrong_tax_rate", [item(), item(amount="2.00")]))

    assert f"each invoice may be listed once in affected_invoices; {MARCH} is listed" in error
    assert "give one item per invoice with its whole overcharge" in error


def test_a_fault_label_without_invoices_and_no_error_with_invoices_are_refused() -> None:
    empty = error_of("submit_findings", findings("wrong_tax_rate", []))
    listed = error_of("submit_findings", findings("no_error", [item()]))

    assert "root_cause wrong_tax_rate needs at least one affected invoice" in empty
    assert "send no_error if nothing was overcharged" in empty
    assert "root_cause no_error cannot list affected invoices" in listed
    assert "send affected_invoices []" in listed


@pytest.mark.parametrize("invoice_id", [MARCH + "\n", MARCH.lower(), " " + MARCH, MARCH + "\r\n"])
def test_an_invoice_id_that_is_not_exact_is_refused_with_the_shape(invoice_id: str) -> None:
    error = error_of("submit_findings", findings("wrong_tax_rate", [item(invoice_id)]))

    assert f"invoice_id {invoice_id!r} is not an invoice id like 'INV-7F3K2Q'" in error


@pytest.mark.parametrize("tool", ["submit_findings", "draft_credit_note"])
@pytest.mark.parametrize("number", ["165.4899999999999999999", "165.499", "1.001", "0.001"])
def test_an_inexact_json_number_amount_is_refused_not_rounded(tool: str, number: str) -> None:
    if tool == "submit_findings":
        raw = findings("wrong_tax_rate", [item(amount="@")]).replace('"@"', number)
    else:
        raw = '{"invoice_id": "' + MARCH + '", "amount": ' + number + ', "reason": "r"}'

    error = error_of(tool, raw)

    assert f"amount '{number}' is not a plain decimal like '148.20'" in error
    assert "at most two decimals" in error


@pytest.mark.parametrize("number", ["12.4", "12.40", "12.400", "1.24e1"])
def test_a_json_number_that_is_exactly_two_decimals_is_accepted(number: str) -> None:
    raw = findings("wrong_tax_rate", [item(amount="@")]).replace('"@"', number)
    env = LedgerEnv(SCENARIO)

    result = json.loads(env.call("submit_findings", raw))

    assert result["status"] == "submitted"
    assert env.findings is not None
    assert env.findings.affected_invoices[0].overcharge_amount == "12.40"
    env.close()
