"""The auditor: deterministic, within its budget, never raising, and right where a person can check.

Episodes run through `LedgerEnv` exactly as an agent's would (`run_program` below, once through
`ProgramPolicy`, once through `eval.run --model auditor`); the truth is read only here, to grade.
"""

from __future__ import annotations

import ast
import asyncio
import json
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent.audit_evidence import Evidence
from agent.auditor import auditor_program, reading_order
from agent.messages import assistant_message
from agent.program_policy import Program, auditor_policy
from env.episode import EpisodeRecord, drafted_credits, record_episode
from env.generation.generator import generate
from env.generation.splits import split_assignment, split_seeds
from env.labels import ROOT_CAUSES
from env.ledger_env import DEFAULT_TOOL_BUDGET, LedgerEnv
from env.scenario import Scenario, reveal_truth
from eval.grader import grade_episode
from tests.env.conftest import CUSTOMER, MARCH, build_hand_scenario

AGENT = Path(__file__).resolve().parents[2] / "agent"
PROGRAM_FILES = (
    "auditor.py",
    "audit_checks.py",
    "audit_plans.py",
    "audit_printed.py",
    "audit_evidence.py",
    "ladder.py",
)


def run_program(
    program: Program, scenario: Scenario, budget: int = DEFAULT_TOOL_BUDGET
) -> EpisodeRecord:
    """Drives a program through one episode, the same calls `ProgramPolicy` would make."""
    env = LedgerEnv(scenario, tool_budget=budget)
    try:
        steps = program(scenario)
        try:
            step = next(steps)
            while not env.done:
                step = steps.send(env.call(step.name, json.dumps(step.arguments)))
        except StopIteration:
            pass
        return record_episode(env)
    finally:
        env.close()


def _first(split: str, label: str | None = None, difficulty: str | None = None) -> Scenario:
    for seed in split_seeds(split):
        assignment = split_assignment(split, seed)
        if label in (None, assignment.label) and difficulty in (None, assignment.difficulty):
            return generate(split, seed)
    raise LookupError(f"no {label} {difficulty} scenario in {split}")


def _calls(record: EpisodeRecord) -> list[tuple[str, Any]]:
    return [(r.name, json.loads(r.arguments)) for r in record.tool_log]


def _busy_scenarios() -> list[Scenario]:
    """L3 scenarios of a few shapes: many invoices, decoys, a second subscription."""
    labels = ("trial_period_charged", "coupon_not_applied", "no_error", "seat_count_mismatch")
    return [_first("eval", label, "L3") for label in labels]


def test_the_same_scenario_gives_the_same_trajectory_twice() -> None:
    for scenario in _busy_scenarios():
        first, second = (run_program(auditor_program, scenario) for _ in range(2))
        assert _calls(first) == _calls(second)
        assert [r.result for r in first.tool_log] == [r.result for r in second.tool_log]


def test_the_chat_policy_replays_to_the_same_calls_as_the_direct_driver() -> None:
    scenario = _first("eval", "downgrade_not_applied", "L2")
    policy = auditor_policy()
    env = LedgerEnv(scenario)
    messages = env.initial_messages()
    while not env.done:
        reply = asyncio.run(policy.respond(messages, env.tool_specs(), scenario))
        messages.append(assistant_message(reply.choice))
        for call in reply.choice.message.tool_calls or []:
            assert call.type == "function"
            result = env.call(call.function.name, call.function.arguments)
            messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
        if not reply.choice.message.tool_calls:
            break
    logged = [(r.name, json.loads(r.arguments)) for r in env.tool_log]
    env.close()
    assert logged == _calls(run_program(auditor_program, scenario))


@pytest.mark.parametrize("budget", [1, 3, 4, 6, 10, 16, 30])
def test_it_never_exceeds_the_tool_budget_and_still_submits(budget: int) -> None:
    for scenario in _busy_scenarios():
        record = run_program(partial(auditor_program, budget=budget), scenario, budget)
        assert record.tool_calls <= budget
        assert record.submitted
        assert record.tool_log[-1].name == "submit_findings"


def test_it_finds_the_hand_checked_duplicate_payment() -> None:
    # conftest: PAY-HAND01 and PAY-HAND02 both succeeded for INV-HAND01, total 128.75 EUR
    scenario = build_hand_scenario()
    record = run_program(auditor_program, scenario)
    assert record.findings is not None
    assert record.findings.root_cause == "duplicate_payment"
    reported = {i.invoice_id: i.overcharge_amount for i in record.findings.affected_invoices}
    assert reported == {MARCH: "128.75"}
    assert drafted_credits(record.final_database, record.episode_id) == {MARCH: 12875}
    assert ("list_payments", {"customer_id": CUSTOMER}) in _calls(record)


def test_it_credits_nothing_when_the_customer_is_mistaken() -> None:
    scenario = _first("eval", "no_error", "L3")
    record = run_program(auditor_program, scenario)
    assert record.findings is not None
    assert record.findings.root_cause == "no_error"
    assert record.findings.affected_invoices == []
    assert drafted_credits(record.final_database, record.episode_id) == {}


@pytest.mark.parametrize("label", ROOT_CAUSES)
def test_it_solves_the_first_l1_scenario_of_each_root_cause(label: str) -> None:
    split = "heldout" if label == "timezone_period_boundary" else "eval"
    scenario = _first(split, label, "L1")
    record = run_program(auditor_program, scenario)
    grade = grade_episode(reveal_truth(scenario), record, scenario.database)
    assert grade.success and not grade.false_reversal


def test_the_program_files_never_name_the_truth() -> None:
    forbidden = {"reveal_truth", "_truth", "Truth"}
    for name in PROGRAM_FILES:
        tree = ast.parse((AGENT / name).read_text(encoding="utf-8"))
        names = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Name):
                names.add(node.id)
            elif isinstance(node, ast.Attribute):
                names.add(node.attr)
            elif isinstance(node, ast.alias):
                names.update({node.name.rsplit(".", 1)[-1], node.asname or ""})
            elif isinstance(node, ast.arg):
                names.add(node.arg)
        assert not names & forbidden, f"agent/{name} names {names & forbidden}"


# whatever the tools answer, the program ends with one submit_findings within its budget ------

_FIELDS = (  # field names of the tool results, one string to keep the list short
    "customer_id subscription_ids tax_jurisdiction timezone exemption_certificate valid_from "
    "valid_until invoices invoice_id subscription_id period_start period_end total currency "
    "status payments amount billing_inputs plan plan_id pricing seats previous_plan "
    "previous_seats plan_change_date proration_start coupon code duration duration_periods "
    "usage_units usage units included_units tax_rate tax_exempt tax exempt fx_rate fx_rate_date "
    "events occurred_at type details to_seats to_plan_id effective rate effective_from "
    "effective_to difference error"
)
_KEYS = st.sampled_from(_FIELDS.split())
_WORDS = st.sampled_from(
    [
        "2025-03-01",
        "2025-04-01",
        "0001-01-01",
        "2025-03-15T23:30:00Z",
        "0001-01-01T00:10:00Z",
        "12.40",
        "-3.00",
        "0.19",
        "1.2",
        "EUR",
        "USD",
        "INV-AAAA",
        "SUB-AAAA",
        "per_seat",
        "succeeded",
        "immediately",
        "next_period",
        "repeating",
        "Europe/Berlin",
        "America/Los_Angeles",
        "Nowhere/Zone",
        "trial_ended",
        "canceled",
        "cancel_requested",
        "seats_changed",
        "plan_changed",
        "coupon_applied",
        "",
    ]
)
_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 40) | _WORDS | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_KEYS, inner, max_size=6),
    max_leaves=40,
)
_RESULTS = st.dictionaries(_KEYS, _VALUES, max_size=8).map(json.dumps) | st.sampled_from(
    ["not json", "[]", "null", '{"error": "no such thing"}']
)


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix]
    if isinstance(value, dict):
        for key, inner in value.items():
            found += _paths(inner, (*prefix, key))
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            found += _paths(inner, (*prefix, index))
    return found


def _mutated(text: str, data: st.DataObject) -> str:
    """A real tool result with up to three values swapped for odd ones."""
    value = json.loads(text)
    for _ in range(data.draw(st.integers(0, 3))):
        path = data.draw(st.sampled_from(_paths(value)))
        if not path:
            return data.draw(_RESULTS)
        holder = value
        for step in path[:-1]:
            holder = holder[step]
        holder[path[-1]] = data.draw(_VALUES)
    return json.dumps(value)


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_it_never_raises_whatever_the_tools_answer(data: st.DataObject) -> None:
    scenario = build_hand_scenario() if data.draw(st.booleans()) else _first("eval", None, "L3")
    env = LedgerEnv(scenario)
    program = auditor_program(scenario, budget=30)
    calls = [next(program)]
    with pytest.raises(StopIteration):
        while len(calls) <= 30:
            real = env.call(calls[-1].name, json.dumps(calls[-1].arguments))
            answer = _mutated(real, data) if data.draw(st.booleans()) else data.draw(_RESULTS)
            calls.append(program.send(answer))
    env.close()
    assert len(calls) <= 30
    assert calls[-1].name == "submit_findings"


def test_eval_run_grades_the_auditor_as_it_grades_any_model(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from eval.run import main

    out = tmp_path / "auditor"
    assert main(["--model", "auditor", "--k", "1", "--limit", "3", "--out", str(out)]) == 0
    capsys.readouterr()
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert (summary["scenarios"], summary["episodes"], summary["errors"]) == (3, 3, 0)
    assert summary["overall"]["pass1"]["estimate"] == 1.0
    assert summary["false_reversal"]["count"] == 0


def test_an_invoice_the_complaint_names_by_its_total_is_read_first() -> None:
    """eval-100067: a complaint that quotes a total, not an id, still points at its invoice."""
    ev = Evidence()
    ev.invoices = [
        {"invoice_id": f"INV-{n}AAAA", "subscription_id": "SUB-1", "total": total}
        for n, total in enumerate(["900.00", "950.00", "960.00", "965.00"])
    ]  # the last one moved least: without the quote it is read last
    assert reading_order(ev, "Please send back 65.00 EUR.")[-1]["invoice_id"] == "INV-3AAAA"
    order = reading_order(ev, "Please send back the 965.00 EUR you took.")
    assert order[0]["invoice_id"] == "INV-3AAAA"


def test_the_invoice_a_fault_would_run_on_to_is_the_same_subscriptions_next() -> None:
    from agent.auditor import _next_invoice

    ev = Evidence()
    ev.invoices = [
        {"invoice_id": "INV-A1", "subscription_id": "SUB-1"},
        {"invoice_id": "INV-B1", "subscription_id": "SUB-2"},
        {"invoice_id": "INV-A2", "subscription_id": "SUB-1"},
    ]
    assert _next_invoice(ev, "INV-A1") == "INV-A2"
    assert _next_invoice(ev, "INV-A2") is None and _next_invoice(ev, "INV-B1") is None
    assert _next_invoice(ev, "INV-ZZ") is None
