"""First wrong step, evidence read and failure clusters on real played episodes.

Deliberately wrong scripted policies (programs for `agent.program_policy.ProgramPolicy`, built
from the truth as a construction device, the way checks/hacks builds its cheats) play real eval
scenarios through `eval.run.evaluate`: the real env, rollout, grader and episode log. The
scenarios are found by property (what their reference solution reads), never by seed id.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Generator
from pathlib import Path

import pytest

from agent.program_policy import ProgramPolicy, reference_policy
from env.engine.money import format_cents
from env.generation.generator import generate
from env.generation.splits import split_seeds
from env.scenario import Scenario, ToolCall, reveal_truth
from env.versions import generator_hash
from eval.report.clusters import ALL_READ, run_diagnostics
from eval.report.diagnose import covers, error_class, first_wrong_step
from eval.report.load import RunData, load_run
from eval.run import evaluate
from tests.eval.report_fixtures import grade, line

SEARCH = 60  # eval seeds searched for scenarios with the property a test needs
TIMELINE = "get_subscription_timeline"
Program = Callable[[Scenario], Generator[ToolCall, str, None]]


def _scenarios(wanted: Callable[[Scenario], bool], count: int) -> list[Scenario]:
    found = [s for s in map(lambda seed: generate("eval", seed), split_seeds("eval", SEARCH))]
    chosen = [scenario for scenario in found if wanted(scenario)][:count]
    assert len(chosen) == count, "the eval split no longer has enough such scenarios"
    return chosen


def _play(name: str, program: Program, scenarios: list[Scenario], directory: Path) -> RunData:
    policy = ProgramPolicy(name, program)
    config = {"model": name, "kind": "program", "split": "eval", "k": 1}
    config["generator"] = generator_hash()
    run = evaluate(policy, scenarios, k=1, run_dir=directory, config=config, concurrency=1)
    asyncio.run(run)
    return load_run(directory)


def _reads(scenario: Scenario) -> list[ToolCall]:
    return [c for c in reveal_truth(scenario).reference if c.name not in ("draft_credit_note",)][
        :-1
    ]


def _has_timeline_credit(scenario: Scenario) -> bool:
    truth = reveal_truth(scenario)
    return bool(truth.expected_credits) and any(c.name == TIMELINE for c in truth.reference)


def _reads_a_disputed_invoice_first(scenario: Scenario) -> bool:
    truth = reveal_truth(scenario)
    invoices = [c for c in truth.reference if c.name == "get_invoice"]
    return (
        truth.label == "no_error"
        and bool(invoices)
        and invoices[0].arguments["invoice_id"] in truth.disputed_invoices
    )


def short_by_a_cent(scenario: Scenario) -> Generator[ToolCall, str, None]:
    """Reads what the reference reads before its timeline call and no further, then credits
    and reports every overcharge a cent short."""
    truth = reveal_truth(scenario)
    reads = _reads(scenario)
    # not `yield from`: a list iterator cannot take the tool results the policy sends in
    for call in reads[: next(i for i, c in enumerate(reads) if c.name == TIMELINE)]:  # noqa: UP028
        yield call
    short = {invoice: cents - 1 for invoice, cents in truth.expected_credits.items()}
    for invoice, cents in short.items():
        yield ToolCall(
            "draft_credit_note",
            {"invoice_id": invoice, "amount": format_cents(cents), "reason": "short"},
        )
    affected = [{"invoice_id": i, "overcharge_amount": format_cents(c)} for i, c in short.items()]
    findings = {"root_cause": truth.label, "affected_invoices": affected, "summary": "Short."}
    yield ToolCall("submit_findings", findings)


def credit_without_looking(scenario: Scenario) -> Generator[ToolCall, str, None]:
    """On a no_error scenario: reads the customer and the invoice list, credits a disputed
    invoice 10.00 and reports a duplicate payment."""
    truth = reveal_truth(scenario)
    for call in _reads(scenario)[:2]:  # noqa: UP028
        yield call
    invoice = next(c for c in truth.reference if c.name == "get_invoice").arguments["invoice_id"]
    yield ToolCall(
        "draft_credit_note", {"invoice_id": invoice, "amount": "10.00", "reason": "refund"}
    )
    affected = [{"invoice_id": invoice, "overcharge_amount": "10.00"}]
    findings = {"root_cause": "duplicate_payment", "affected_invoices": affected, "summary": "x"}
    yield ToolCall("submit_findings", findings)


def guess_no_error(scenario: Scenario) -> Generator[ToolCall, str, None]:
    """Complaint only: submits no_error without a single read."""
    yield ToolCall(
        "submit_findings",
        {"root_cause": "no_error", "affected_invoices": [], "summary": "Nothing wrong."},
    )


def read_the_wrong_invoice(scenario: Scenario) -> Generator[ToolCall, str, None]:
    """Reads the customer, lists the invoices, opens one the reference never opens and
    submits no_error."""
    reads = _reads(scenario)
    yield reads[0]
    listed = yield reads[1]
    opened = {c.arguments["invoice_id"] for c in reads if c.name == "get_invoice"}
    invoices = [item["invoice_id"] for item in json.loads(listed)["invoices"]]
    other = next(invoice for invoice in invoices if invoice not in opened)
    yield ToolCall("get_invoice", {"invoice_id": other})
    yield ToolCall(
        "submit_findings", {"root_cause": "no_error", "affected_invoices": [], "summary": "Fine."}
    )


def read_and_stop(scenario: Scenario) -> Generator[ToolCall, str, None]:
    """Reads the customer and ends with a text reply: no verdict at all."""
    yield _reads(scenario)[0]


@pytest.fixture(scope="module")
def credit_cases() -> list[Scenario]:
    return _scenarios(_has_timeline_credit, 3)


@pytest.fixture(scope="module")
def quiet_case() -> list[Scenario]:
    return _scenarios(_reads_a_disputed_invoice_first, 1)


@pytest.fixture(scope="module")
def short_run(credit_cases, tmp_path_factory) -> RunData:
    return _play("short", short_by_a_cent, credit_cases, tmp_path_factory.mktemp("short"))


def test_the_reference_solution_leaves_nothing_to_diagnose(credit_cases, quiet_case, tmp_path):
    policy = reference_policy()
    config = {"model": "reference", "kind": "program", "split": "eval", "k": 1}
    asyncio.run(evaluate(policy, credit_cases + quiet_case, k=1, run_dir=tmp_path, config=config))
    block = run_diagnostics(0, load_run(tmp_path))
    assert block["failures"] == 0 and block["by_missing_fact"] == []


def test_a_short_credit_is_the_first_wrong_step_and_the_timeline_the_missing_fact(short_run):
    block = run_diagnostics(0, short_run)
    assert block["failures"] == len(short_run.lines) == 3
    for entry, episode in zip(block["episodes_diagnosed"], short_run.lines, strict=True):
        reads_made = sum(
            1 for call in episode.tool_log or [] if call["name"] != "draft_credit_note"
        )
        step = entry["step"]
        assert step["kind"] == "wrong write" and step["tool"] == "draft_credit_note"
        assert step["index"] == reads_made - 1  # the reads, then this note (submit is last)
        assert entry["first_missing"] == f"{TIMELINE}(subscription)"
        assert entry["error_class"] == "wrong amount"
        made = [item["made"] for item in entry["evidence"]]
        assert made[: step["index"]] == [True] * step["index"] and not all(made)
    assert block["by_missing_fact"] == [
        {
            "key": f"{TIMELINE}(subscription)",
            "count": 3,
            "examples": [e["episode"] for e in block["episodes_diagnosed"][:2]],
        }
    ]


def test_a_credit_on_a_no_error_scenario_is_a_false_reversal_before_any_invoice_read(
    quiet_case, tmp_path
):
    run = _play("credit-blind", credit_without_looking, quiet_case, tmp_path)
    (entry,) = run_diagnostics(0, run)["episodes_diagnosed"]
    assert entry["error_class"] == "false reversal"
    assert entry["step"]["kind"] == "wrong write" and entry["step"]["index"] == 2
    assert entry["first_missing"] == "get_invoice(disputed invoice)"
    assert [item["made"] for item in entry["evidence"][:3]] == [True, True, False]


def test_a_complaint_only_guess_and_a_silent_stop_have_no_wrong_write(credit_cases, tmp_path):
    guess = run_diagnostics(0, _play("guess", guess_no_error, credit_cases, tmp_path / "g"))
    stop = run_diagnostics(1, _play("stop", read_and_stop, credit_cases, tmp_path / "s"))
    for entry in guess["episodes_diagnosed"]:
        assert entry["error_class"] == "wrong root cause"
        assert entry["step"] == {
            "kind": "no read",
            "index": 0,
            "tool": "submit_findings",
            "arguments": {},
        }
        assert entry["first_missing"] == "get_customer(customer)"
        assert not any(item["made"] for item in entry["evidence"])
    for entry in stop["episodes_diagnosed"]:
        assert entry["error_class"] == "no submit"
        assert entry["step"]["kind"] == "last read, no verdict"
        assert entry["step"]["index"] == 0 and entry["step"]["tool"] == "get_customer"
        assert entry["evidence"][0]["made"] and entry["first_missing"] != ALL_READ
    assert guess["by_error_class"][0] == {
        "key": "wrong root cause",
        "count": 3,
        "examples": [e["episode"] for e in guess["episodes_diagnosed"][:2]],
    }
    assert all(e["episode"].startswith("r1.") for e in stop["episodes_diagnosed"])


def test_clusters_count_every_failure_once_with_two_examples_of_their_own(
    short_run, quiet_case, tmp_path
):
    mixed = _play("blind", credit_without_looking, quiet_case, tmp_path / "b")
    run = RunData("mixed", tmp_path, short_run.config, short_run.lines + mixed.lines)
    block = run_diagnostics(0, run)
    by_episode = {e["episode"]: e for e in block["episodes_diagnosed"]}
    for kind, field in (("by_missing_fact", "first_missing"), ("by_error_class", "error_class")):
        clusters = block[kind]
        assert sum(c["count"] for c in clusters) == block["failures"] == 4
        assert [c["count"] for c in clusters] == sorted(
            (c["count"] for c in clusters), reverse=True
        )
        for item in clusters:
            assert 1 <= len(item["examples"]) <= 2
            assert all(by_episode[e][field] == item["key"] for e in item["examples"])


def test_a_run_of_another_generator_keeps_its_error_classes_but_is_not_diagnosed(short_run):
    config = {**short_run.config, "generator": "another"}
    block = run_diagnostics(0, RunData("old", short_run.path, config, short_run.lines))
    assert block["by_missing_fact"][0]["key"] == "(not diagnosed: run made by another generator)"
    assert block["by_error_class"][0]["key"] == "wrong amount"


def test_the_error_class_follows_the_grade_most_decisive_first():
    assert error_class(line("e", success=False, error="server down")) == "error (no grade)"
    both = grade(False, false_reversal=True, label_correct=False)
    assert error_class(line("f", success=False, grade=both)) == "false reversal"
    ungrounded = grade(True, hallucinated_numbers=True)
    assert error_class(line("u", grade=ungrounded)) == "untraceable number"


def test_a_refused_note_is_no_write_and_a_wrong_one_after_it_is(credit_cases):
    truth = reveal_truth(credit_cases[0])
    invoice, cents = next(iter(truth.expected_credits.items()))
    note = {"invoice_id": invoice, "amount": format_cents(cents), "reason": "r"}
    log = [
        {
            "name": "draft_credit_note",
            "arguments": json.dumps({**note, "amount": "9e9"}),
            "is_error": True,
        },
        {"name": "draft_credit_note", "arguments": json.dumps(note), "is_error": False},
        {"name": "draft_credit_note", "arguments": json.dumps(note), "is_error": False},
    ]
    step = first_wrong_step(log, truth)
    assert (step.kind, step.index) == ("wrong write", 2)  # the true note, credited twice


def _opens_a_faulted_invoice_first_and_leaves_one_unread(scenario: Scenario) -> bool:
    truth = reveal_truth(scenario)
    opened = [c.arguments["invoice_id"] for c in truth.reference if c.name == "get_invoice"]
    return _has_timeline_credit(scenario) and opened[0] in truth.overcharges


def test_a_read_of_the_wrong_invoice_leaves_the_faulted_invoice_missing(tmp_path):
    cases = _scenarios(_opens_a_faulted_invoice_first_and_leaves_one_unread, 2)
    run = _play("wrong-invoice", read_the_wrong_invoice, cases, tmp_path)
    for entry in run_diagnostics(0, run)["episodes_diagnosed"]:
        assert entry["step"]["kind"] == "last read before the verdict"
        assert (entry["step"]["index"], entry["step"]["tool"]) == (2, "get_invoice")
        assert entry["first_missing"] == "get_invoice(faulted invoice)"
        assert entry["error_class"] == "wrong root cause"


def test_a_read_covers_a_reference_read_of_the_same_record_only():
    listed = ToolCall("list_payments", {"customer_id": "CUS-1", "invoice_id": "INV-A"})
    every = {"name": "list_payments", "arguments": '{"customer_id": "cus-1"}', "is_error": False}
    other = {**every, "arguments": '{"customer_id": "CUS-1", "invoice_id": "INV-B"}'}
    refused = {**every, "is_error": True}
    assert covers(every, listed)  # all the customer's payments show the invoice's too
    assert not covers(other, listed) and not covers(refused, listed)
    recompute = ToolCall("recompute_invoice", {"invoice_id": "INV-A", "plan_id": "PLN-TEAM"})
    bare = {"name": "recompute_invoice", "arguments": '{"invoice_id": "INV-A"}', "is_error": False}
    assert not covers(bare, recompute)
    assert covers(
        {**bare, "arguments": '{"invoice_id": "inv-a", "plan_id": "PLN-TEAM"}'}, recompute
    )
