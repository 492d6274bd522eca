"""The grader on the third release's rules (rewards/README.md G10 derived amounts, G11 `no_error`
must be investigated), with its own code only: real eval scenarios played through LedgerEnv."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

import pytest

from env.engine.money import format_cents
from env.episode import EpisodeRecord, record_episode
from env.generation.generator import generate
from env.generation.splits import split_seeds
from env.ledger_env import LedgerEnv
from env.scenario import Scenario, reveal_truth
from eval.grader import EpisodeGrade, grade_episode
from eval.grounding.read import read

Call = tuple[str, dict[str, Any]]
_SKIP = ("draft_credit_note", "submit_findings", "recompute_invoice")


def _play(scenario: Scenario, calls: list[Call]) -> tuple[EpisodeRecord, list[str]]:
    env = LedgerEnv(scenario, episode_id="ep-grader")
    outputs = [env.call(name, json.dumps(arguments)) for name, arguments in calls]
    record = record_episode(env)
    env.close()
    return record, outputs


def _grade(scenario: Scenario, calls: list[Call]) -> EpisodeGrade:
    return grade_episode(reveal_truth(scenario), _play(scenario, calls)[0], scenario.database)


def _reads(scenario: Scenario) -> list[Call]:
    return [(c.name, dict(c.arguments)) for c in reveal_truth(scenario).reference
            if c.name not in _SKIP]  # fmt: skip


def _numbers(outputs: list[str]) -> dict[Decimal, int]:
    """Each amount the outputs print (as the grader reads them) -> the first call showing it."""
    found: dict[Decimal, int] = {}
    for index, output in enumerate(outputs):
        for reading in read(output.replace('"', " ")):
            if reading.kind == "number" and "." in reading.text:
                found.setdefault(Decimal(reading.value), index)
    return found


@pytest.fixture(scope="module")
def unprinted() -> tuple[Scenario, list[Call], str, Decimal, Decimal, Decimal, tuple[int, int]]:
    """A one-invoice fault whose overcharge none of the reads prints, but that is a - b of two
    amounts they print: (scenario, reads, invoice, a, b, owed, calls showing a and b)."""
    for seed in split_seeds("eval"):
        scenario = generate("eval", seed)
        truth = reveal_truth(scenario)
        if len(truth.overcharges) != 1:
            continue
        ((invoice, cents),) = truth.overcharges.items()
        reads = _reads(scenario)
        shown = _numbers(_play(scenario, reads)[1])
        owed = Decimal(cents) / 100
        if owed in shown:
            continue
        for a in sorted(shown):
            if a - owed in shown:
                return scenario, reads, invoice, a, a - owed, owed, (shown[a], shown[a - owed])
    raise AssertionError("no eval scenario with an unprinted overcharge")


def _report(scenario: Scenario, invoice: str, owed: Decimal, summary: str) -> list[Call]:
    money = format_cents(int(owed * 100))
    credit = {"invoice_id": invoice, "amount": money, "reason": "Verified overcharge"}
    findings = {
        "root_cause": reveal_truth(scenario).label,
        "affected_invoices": [{"invoice_id": invoice, "overcharge_amount": money}],
        "summary": summary,
    }
    return [("draft_credit_note", credit), ("submit_findings", findings)]


def test_the_grader_grounds_an_overcharge_derived_by_a_written_subtraction(unprinted) -> None:
    scenario, reads, invoice, a, b, owed, _ = unprinted
    grade = _grade(scenario, reads + _report(scenario, invoice, owed, f"{a} - {b} = {owed}."))
    assert grade.success and grade.grounded_success and not grade.hallucinated_numbers
    amount = next(t for t in grade.number_trace if t.where == "amount")
    assert amount.status == "derived"


def test_a_derived_number_is_traced_to_the_calls_that_showed_its_operands(unprinted) -> None:
    scenario, reads, invoice, a, b, owed, calls = unprinted
    grade = _grade(scenario, reads + _report(scenario, invoice, owed, f"{a} − {b} = {owed}."))
    derived = [t for t in grade.number_trace if t.status == "derived"]
    assert derived and all(set(calls) <= set(t.sources) for t in derived)


def test_the_grader_calls_a_wrong_calculation_a_hallucination(unprinted) -> None:
    scenario, reads, invoice, a, b, owed, _ = unprinted
    summary = f"{a} - {b} = {owed + Decimal('0.01')}; so {owed} is owed."
    grade = _grade(scenario, reads + _report(scenario, invoice, owed, summary))
    assert grade.success and not grade.grounded_success and grade.hallucinated_numbers


def test_the_grader_does_not_chain_calculations(unprinted) -> None:
    scenario, reads, invoice, a, b, owed, _ = unprinted
    summary = f"{a} - {b} = {owed} + {b} = {owed + b}."
    grade = _grade(scenario, reads + _report(scenario, invoice, owed, summary))
    # owed + b is a: printed, so evidence; a chain whose second result is new is not grounded
    assert grade.grounded_success
    summary = f"{a} - {b} = {owed} - 0.01 = {owed - Decimal('0.01')}."
    grade = _grade(scenario, reads + _report(scenario, invoice, owed, summary))
    assert not grade.grounded_success and grade.hallucinated_numbers


@pytest.fixture(scope="module")
def calm() -> Scenario:
    """A no_error case whose complaint disputes one invoice of several."""
    for seed in split_seeds("eval"):
        scenario = generate("eval", seed)
        truth = reveal_truth(scenario)
        if truth.label == "no_error" and len(truth.disputed_invoices) == 1:
            return scenario
    raise AssertionError("no no_error case with one disputed invoice")


def _no_error(scenario: Scenario, calls: list[Call], summary: str) -> EpisodeGrade:
    findings = {"root_cause": "no_error", "affected_invoices": [], "summary": summary}
    return _grade(scenario, [*calls, ("submit_findings", findings)])


def test_a_no_error_success_is_grounded_only_after_reading_the_disputed_invoice(calm) -> None:
    (disputed,) = reveal_truth(calm).disputed_invoices
    listing = ("list_invoices", {"customer_id": calm.customer_id})
    unread = _no_error(calm, [listing], f"{disputed} is billed right.")
    read_it = _no_error(calm, [listing, ("get_invoice", {"invoice_id": disputed})],
                        f"{disputed} is billed right.")  # fmt: skip
    assert unread.success and not unread.grounded_success and not unread.investigated
    assert read_it.success and read_it.grounded_success and read_it.investigated


def test_a_recompute_of_the_disputed_invoice_is_reading_it(calm: Scenario) -> None:
    (disputed,) = reveal_truth(calm).disputed_invoices
    grade = _no_error(calm, [("recompute_invoice", {"invoice_id": disputed})],
                      "Recomputed: difference 0.00.")  # fmt: skip
    assert grade.investigated and grade.grounded_success


def test_reading_another_invoice_is_not_reading_the_disputed_one(calm: Scenario) -> None:
    listing = ("list_invoices", {"customer_id": calm.customer_id})
    _, outputs = _play(calm, [listing])
    disputed = set(reveal_truth(calm).disputed_invoices)
    other = next(i["invoice_id"] for i in json.loads(outputs[0])["invoices"]
                 if i["invoice_id"] not in disputed)  # fmt: skip
    grade = _no_error(calm, [listing, ("get_invoice", {"invoice_id": other})], f"{other} is right.")
    assert grade.success and not grade.investigated and not grade.grounded_success
