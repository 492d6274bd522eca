"""LedgerEnv, the agent's side of an episode: budget, prompt, specs, log, isolation, no truth.

The truth of the hand-written scenario carries strings that exist nowhere else
(`SECRET_EXPLANATION`, `SECRET_SUMMARY`); the exposure tests walk every public member of a
live episode and look for them, for the `Truth` object and for the label outside label lists.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import re
import sqlite3
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from pydantic import BaseModel

from env.labels import ROOT_CAUSES
from env.ledger_env import DEFAULT_TOOL_BUDGET, LedgerEnv, ToolRecord
from env.scenario import Scenario, ToolCall, Truth, reveal_truth
from env.tools import TOOL_NAMES
from tests.env.conftest import (
    APRIL,
    COMPLAINT,
    CUSTOMER,
    MARCH,
    MAY,
    SECRET_EXPLANATION,
    SECRET_SUMMARY,
    TEAM_SUB,
    call,
    error,
    generated,
    ok,
    query,
)

# budget and the end of an episode -----------------------------------------------------------


def test_the_default_tool_budget_is_thirty(hand_scenario: Scenario) -> None:
    assert DEFAULT_TOOL_BUDGET == 30
    assert LedgerEnv(hand_scenario).tool_budget == 30


def test_after_the_budget_the_episode_is_truncated_and_further_calls_refused(
    env: LedgerEnv,
) -> None:
    for _ in range(29):
        ok(env, "get_customer", customer_id=CUSTOMER)
    assert not env.done
    ok(env, "get_customer", customer_id=CUSTOMER)  # the 30th call is still answered
    assert env.truncated and env.done and not env.submitted
    message = error(env, "get_customer", customer_id=CUSTOMER)
    assert "over" in message
    assert "error" in call(
        env, "submit_findings", root_cause="no_error", affected_invoices=[], summary=""
    )
    assert env.tool_calls == 30 and env.findings is None


def test_invalid_calls_count_against_the_budget(hand_scenario: Scenario) -> None:
    episode = LedgerEnv(hand_scenario, tool_budget=2)
    error(episode, "no_such_tool")
    error(episode, "get_customer", customer_id="CUS-NOPE00")
    assert episode.truncated
    assert "over" in error(episode, "get_customer", customer_id=CUSTOMER)


def test_submitting_on_the_last_budgeted_call_counts_as_a_submission(
    hand_scenario: Scenario,
) -> None:
    episode = LedgerEnv(hand_scenario, tool_budget=2)
    ok(episode, "get_customer", customer_id=CUSTOMER)
    ok(episode, "submit_findings", root_cause="no_error", affected_invoices=[], summary="")
    assert episode.submitted and episode.done and not episode.truncated


def test_a_call_after_submit_findings_is_refused(env: LedgerEnv) -> None:
    ok(env, "submit_findings", root_cause="no_error", affected_invoices=[], summary="")
    assert "findings were submitted" in error(env, "get_customer", customer_id=CUSTOMER)
    assert "findings were submitted" in error(
        env, "draft_credit_note", invoice_id=MARCH, amount="1.00", reason="late"
    )
    assert query(env.final_database(), "SELECT COUNT(*) FROM credit_notes") == [(0,)]


def test_truncate_ends_an_unsubmitted_episode_from_outside(env: LedgerEnv) -> None:
    env.truncate()
    assert env.truncated and env.done
    assert "tool budget" in error(env, "get_customer", customer_id=CUSTOMER)


def test_truncate_after_submission_leaves_it_a_submission(env: LedgerEnv) -> None:
    ok(env, "submit_findings", root_cause="no_error", affected_invoices=[], summary="")
    env.truncate()
    assert env.submitted and not env.truncated


# prompt, specs and log ----------------------------------------------------------------------


def test_initial_messages_are_the_system_prompt_then_the_complaint(env: LedgerEnv) -> None:
    system, user = env.initial_messages()
    assert system["role"] == "system" and user == {"role": "user", "content": COMPLAINT}
    for label in ROOT_CAUSES:
        assert label in system["content"], label
    assert "30" in system["content"]  # the budget
    assert "{labels}" not in system["content"] and "{budget}" not in system["content"]


def test_the_system_prompt_states_the_budget_it_was_given(hand_scenario: Scenario) -> None:
    seven = LedgerEnv(hand_scenario, tool_budget=7).system_prompt
    assert "7" in seven and seven != LedgerEnv(hand_scenario).system_prompt


def test_tool_specs_are_openai_function_tools_for_the_nine_tools_only(env: LedgerEnv) -> None:
    specs = env.tool_specs()
    assert [spec["function"]["name"] for spec in specs] == list(TOOL_NAMES)
    assert len(specs) == 9
    for spec in specs:
        assert set(spec) == {"type", "function"} and spec["type"] == "function"
        assert set(spec["function"]) == {"name", "description", "parameters"}
        assert spec["function"]["description"]
        assert spec["function"]["parameters"]["type"] == "object"
    json.dumps(specs)  # plain JSON, ready for any chat API


def test_the_tool_log_records_name_arguments_result_and_error_flag(env: LedgerEnv) -> None:
    first = env.call("get_invoice", json.dumps({"invoice_id": MAY}))
    second = env.call("get_invoice", '{"invoice_id": "INV-NOPE00"}')
    third = env.call(12, None)  # type: ignore[arg-type]
    log = env.tool_log
    assert log[0] == ToolRecord("get_invoice", json.dumps({"invoice_id": MAY}), first, False)
    assert log[1] == ToolRecord("get_invoice", '{"invoice_id": "INV-NOPE00"}', second, True)
    assert (log[2].name, log[2].arguments, log[2].result, log[2].is_error) == (
        "12",
        "None",
        third,
        True,
    )
    assert env.tool_outputs == (first, second, third)
    assert env.tool_calls == 3


# isolation ----------------------------------------------------------------------------------


def test_sixty_four_concurrent_episodes_on_one_scenario_never_see_each_others_writes(
    hand_scenario: Scenario,
) -> None:
    count = 64
    start = threading.Barrier(count)
    results: dict[int, tuple[list[tuple[Any, ...]], list[dict[str, Any]]]] = {}
    failures: list[BaseException] = []

    def episode(k: int) -> None:
        try:
            env = LedgerEnv(hand_scenario, episode_id=f"ep-{k}")
            start.wait()
            invoice = (MARCH, APRIL, MAY)[k % 3]
            ok(env, "draft_credit_note", invoice_id=invoice, amount=f"{k + 1}.00", reason=f"k{k}")
            notes = ok(env, "get_invoice", invoice_id=invoice)["credit_notes"]
            rows = query(
                env.final_database(),
                "SELECT invoice_id, amount_cents, episode_id FROM credit_notes",
            )
            results[k] = (rows, notes)
            env.close()
        except BaseException as exc:  # surfaced in the main thread below
            failures.append(exc)

    threads = [threading.Thread(target=episode, args=(k,)) for k in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not failures, failures
    assert len(results) == count
    for k, (rows, notes) in results.items():
        assert rows == [((MARCH, APRIL, MAY)[k % 3], (k + 1) * 100, f"ep-{k}")]
        assert [(n["credit_note_id"], n["amount"]) for n in notes] == [("CN-0001", f"{k + 1}.00")]
    assert query(hand_scenario.database, "SELECT COUNT(*) FROM credit_notes") == [(0,)]


def test_a_new_episode_starts_from_the_pristine_database(hand_scenario: Scenario) -> None:
    first = LedgerEnv(hand_scenario)
    ok(first, "draft_credit_note", invoice_id=MARCH, amount="5.00", reason="first episode")
    second = LedgerEnv(hand_scenario)
    assert ok(second, "get_invoice", invoice_id=MARCH)["credit_notes"] == []
    assert second.final_database() == hand_scenario.database
    first.close()
    second.close()


def test_closing_releases_the_database_and_later_calls_still_answer_json(
    hand_scenario: Scenario,
) -> None:
    episode = LedgerEnv(hand_scenario)
    episode.close()
    episode.close()  # closing twice is harmless
    with pytest.raises(sqlite3.ProgrammingError):
        episode.final_database()
    assert "error" in json.loads(
        episode.call("get_customer", json.dumps({"customer_id": CUSTOMER}))
    )


# nothing but the nine tools, and never the truth --------------------------------------------


def _walk(value: Any, depth: int = 0) -> Iterator[Any]:
    """Every object reachable through containers, dataclasses and pydantic models.

    The label enum of submit_findings is yielded whole, not item by item: a list of every
    label says nothing about which one is true.
    """
    yield value
    if depth > 12 or value == list(ROOT_CAUSES):
        return
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _walk(key, depth + 1)
            yield from _walk(item, depth + 1)
    elif isinstance(value, list | tuple | set | frozenset):
        for item in value:
            yield from _walk(item, depth + 1)
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for field in dataclasses.fields(value):
            yield from _walk(getattr(value, field.name), depth + 1)
    elif isinstance(value, BaseModel):
        yield from _walk(value.model_dump(), depth + 1)


# The policy lists the labels one per line ("  - duplicate_payment"); those lines are the only
# place a label may appear. If the policy's list format changes, change this pattern with it.
_LABEL_LINE = re.compile(r"^\s*- (" + "|".join(ROOT_CAUSES) + r")\s*$", re.MULTILINE)


def _text_without_label_lists(value: Any) -> str:
    if isinstance(value, bytes):
        return value.decode("latin-1")
    return _LABEL_LINE.sub("", value) if isinstance(value, str) else ""


def _public_values(env: LedgerEnv) -> dict[str, Any]:
    """Every public attribute and property, and the result of every zero-argument method."""
    values: dict[str, Any] = {}
    for name in dir(env):
        if name.startswith("_") or name in ("close", "truncate"):
            continue
        value = getattr(env, name)
        if callable(value):
            parameters = inspect.signature(value).parameters.values()
            if any(p.default is inspect.Parameter.empty for p in parameters):
                continue  # `call`: what it returns is checked through tool_log/tool_outputs
            value = value()
        values[name] = value
    return values


def assert_exposes_no_truth(env: LedgerEnv, truth: Truth) -> None:
    secrets = [truth.explanation, *(str(c.arguments.get("summary", "")) for c in truth.reference)]
    secrets = [s for s in secrets if s]
    for name, value in _public_values(env).items():
        for item in _walk(value):
            assert not isinstance(item, Truth | ToolCall), name
            if isinstance(item, tuple) and item == truth.reference:
                raise AssertionError(f"{name} exposes the reference solution")
            text = _text_without_label_lists(item)
            # "no_error" is named by the policy and the submit_findings docs themselves
            if truth.label != "no_error":
                assert truth.label not in text, f"{name} names the true label"
            for secret in secrets:
                assert secret not in text, f"{name} exposes the truth: {secret[:60]}"


def _investigate(env: LedgerEnv, customer_id: str, true_label: str) -> None:
    """A broad investigation that drafts a note and submits a label other than the true one."""
    other = next(label for label in ROOT_CAUSES if label not in (true_label, "no_error"))
    ok(env, "get_customer", customer_id=customer_id)
    invoices = ok(env, "list_invoices", customer_id=customer_id)["invoices"]
    for item in invoices[:4]:
        ok(env, "get_invoice", invoice_id=item["invoice_id"])
        ok(env, "recompute_invoice", invoice_id=item["invoice_id"])
        ok(env, "get_subscription_timeline", subscription_id=item["subscription_id"])
    ok(env, "list_payments", customer_id=customer_id)
    target = next(  # not a trial's zero invoice, nor one an earlier credit note fully returned
        i["invoice_id"]
        for i in invoices
        if i["total"] != "0.00"
        and ok(env, "get_invoice", invoice_id=i["invoice_id"])["amount_credited"] != i["total"]
    )
    ok(env, "draft_credit_note", invoice_id=target, amount="0.01", reason="p")
    item = {"invoice_id": target, "overcharge_amount": "0.01"}
    ok(env, "submit_findings", root_cause=other, affected_invoices=[item], summary="probe")


def test_no_public_member_of_the_episode_exposes_the_hand_written_truth(
    hand_scenario: Scenario,
) -> None:
    truth = reveal_truth(hand_scenario)
    assert truth.explanation == SECRET_EXPLANATION  # the check below looks for real secrets
    assert truth.reference[-1].arguments["summary"] == SECRET_SUMMARY
    env = LedgerEnv(hand_scenario)
    assert_exposes_no_truth(env, truth)
    _investigate(env, CUSTOMER, "duplicate_payment")
    assert TEAM_SUB in env.tool_log[4].result  # real data was read, and still no truth
    assert_exposes_no_truth(env, reveal_truth(hand_scenario))
    env.truncate()
    env.close()


def test_no_public_member_exposes_the_truth_of_generated_scenarios() -> None:
    scenarios = generated("train", range(1_000_000, 1_000_300), 6)
    assert scenarios, "no fault builder is importable yet"
    for scenario in scenarios:
        truth = reveal_truth(scenario)
        env = LedgerEnv(scenario)
        _investigate(env, scenario.customer_id, truth.label)
        assert_exposes_no_truth(env, truth)
        env.close()


def test_the_exposure_check_catches_a_leak(hand_scenario: Scenario) -> None:
    leaky = LedgerEnv(hand_scenario)
    leaky.debug = reveal_truth(hand_scenario).explanation  # type: ignore[attr-defined]
    with pytest.raises(AssertionError, match="exposes the truth"):
        assert_exposes_no_truth(leaky, reveal_truth(hand_scenario))
    leaky.debug = "root cause: duplicate_payment"  # type: ignore[attr-defined]
    with pytest.raises(AssertionError, match="names the true label"):
        assert_exposes_no_truth(leaky, reveal_truth(hand_scenario))
    leaky.close()


def test_the_episode_holds_no_reference_to_the_scenario_or_its_truth(
    hand_scenario: Scenario,
) -> None:
    env = LedgerEnv(hand_scenario)
    for value in vars(env).values():
        assert value is not hand_scenario
        assert not isinstance(value, Scenario | Truth)
    env.close()
