"""The grader on hand-made episodes: tool calls played through LedgerEnv, then graded."""

from __future__ import annotations

import ast
import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from env.episode import EpisodeRecord, record_episode
from env.generator import generate
from env.ledger_env import LedgerEnv, open_database
from env.money import format_cents
from env.scenario import Scenario, reveal_truth
from env.splits import split_seeds
from eval.grader import grade_episode

Call = tuple[str, dict[str, Any]]


def _scenario(label: str, *, invoices: int = 1) -> Scenario:
    """The first eval scenario of this label with exactly `invoices` overcharged invoices and at
    least one invoice that is not overcharged."""
    for seed in split_seeds("eval"):
        scenario = generate("eval", seed)
        truth = reveal_truth(scenario)
        unaffected = _invoice_ids(scenario) - truth.overcharges.keys()
        if truth.label == label and len(truth.overcharges) == invoices and unaffected:
            return scenario
    raise LookupError(label)


@pytest.fixture(scope="module")
def faulted() -> Scenario:
    return _scenario("wrong_tax_rate")


@pytest.fixture(scope="module")
def no_error() -> Scenario:
    return _scenario("no_error", invoices=0)


def reference(scenario: Scenario) -> list[Call]:
    return [(step.name, dict(step.arguments)) for step in reveal_truth(scenario).reference]


def investigation(scenario: Scenario) -> list[Call]:
    """The reference calls before any credit note or submission."""
    return [c for c in reference(scenario) if c[0] not in ("draft_credit_note", "submit_findings")]


def play(scenario: Scenario, calls: list[Call]) -> EpisodeRecord:
    env = LedgerEnv(scenario)
    try:
        for name, arguments in calls:
            env.call(name, json.dumps(arguments))
        return record_episode(env)
    finally:
        env.close()


def grade(scenario: Scenario, calls: list[Call]):
    return grade_episode(reveal_truth(scenario), play(scenario, calls), scenario.database)


def submit(label: str, affected: dict[str, str], summary: str = "") -> Call:
    items = [{"invoice_id": i, "overcharge_amount": a} for i, a in affected.items()]
    return (
        "submit_findings",
        {"root_cause": label, "affected_invoices": items, "summary": summary},
    )


def credit(invoice_id: str, amount: str) -> Call:
    return ("draft_credit_note", {"invoice_id": invoice_id, "amount": amount, "reason": "verified"})


def only_invoice(scenario: Scenario) -> tuple[str, int]:
    ((invoice, cents),) = reveal_truth(scenario).overcharges.items()
    return invoice, cents


def test_the_reference_solution_is_a_clean_success(faulted):
    result = grade(faulted, reference(faulted))

    assert result.success and result.database_clean
    assert result.credits == reveal_truth(faulted).expected_credits
    assert not result.false_reversal and not result.hallucinated_numbers
    assert result.changed_tables == () and result.untraceable == ()
    assert result.tool_calls == len(reference(faulted))


def test_a_no_error_episode_that_credits_nothing_is_a_success(no_error):
    result = grade(no_error, [*investigation(no_error), submit("no_error", {})])

    assert result.success and result.credits == {}


def test_an_amount_one_cent_off_fails_though_the_label_and_credit_are_right(faulted):
    invoice, cents = only_invoice(faulted)
    calls = [*investigation(faulted), credit(invoice, format_cents(cents))]
    calls.append(submit("wrong_tax_rate", {invoice: format_cents(cents - 1)}))

    result = grade(faulted, calls)

    assert result.label_correct and result.invoices_correct and result.credits_correct
    assert not result.amounts_correct and not result.success


def test_reporting_an_extra_invoice_fails_on_the_invoice_set(faulted):
    invoice, cents = only_invoice(faulted)
    other = _unaffected_invoice(faulted, invoice)
    calls = [*investigation(faulted), credit(invoice, format_cents(cents))]
    calls.append(submit("wrong_tax_rate", {invoice: format_cents(cents), other: "1.00"}))

    result = grade(faulted, calls)

    assert not result.invoices_correct and not result.amounts_correct and not result.success


def test_two_small_notes_over_the_true_overcharge_are_a_false_reversal(faulted):
    invoice, cents = only_invoice(faulted)
    half = format_cents(cents // 2 + 1)  # each note alone is under the overcharge
    calls = [*investigation(faulted), credit(invoice, half), credit(invoice, half)]
    calls.append(submit("wrong_tax_rate", {invoice: format_cents(cents)}))

    result = grade(faulted, calls)

    assert result.false_reversal and not result.success
    assert result.over_credited == {invoice: 2 * (cents // 2 + 1) - cents}


def test_any_credit_in_a_no_error_case_is_a_false_reversal(no_error):
    invoice = _unaffected_invoice(no_error, "")
    result = grade(no_error, [*investigation(no_error), credit(invoice, "0.01")])

    assert result.false_reversal and result.over_credited == {invoice: 1}
    assert not result.submitted and not result.success


def test_a_change_to_any_other_table_is_detected_in_the_image(faulted):
    record = play(faulted, reference(faulted))
    tampered = _tamper(record.final_database, "UPDATE invoices SET memo = memo || ' edited'")

    result = grade_episode(
        reveal_truth(faulted), tampered_record(record, tampered), faulted.database
    )

    assert result.changed_tables == ("invoices",)
    assert not result.database_clean and not result.success


def test_a_credit_note_written_outside_the_episode_is_not_clean(faulted):
    record = play(faulted, reference(faulted))
    tampered = _tamper(record.final_database, "UPDATE credit_notes SET episode_id = 'someone-else'")

    result = grade_episode(
        reveal_truth(faulted), tampered_record(record, tampered), faulted.database
    )

    assert result.credits_correct and not result.database_clean and not result.success


def test_an_invoice_id_no_tool_showed_is_a_hallucinated_number(faulted):
    invoice, cents = only_invoice(faulted)
    calls = [*investigation(faulted), credit(invoice, format_cents(cents))]
    calls.append(submit("wrong_tax_rate", {invoice: format_cents(cents), "INV-ZZZZ9999": "3.00"}))

    result = grade(faulted, calls)

    assert result.hallucinated_numbers
    assert "INV-ZZZZ9999" in result.untraceable


def test_an_amount_seen_only_in_a_credit_note_echo_is_hallucinated(faulted):
    invoice, _ = only_invoice(faulted)
    made_up = "0.07"
    calls = [*investigation(faulted), credit(invoice, made_up)]
    calls.append(submit("wrong_tax_rate", {invoice: made_up}))

    result = grade(faulted, calls)

    assert result.untraceable == (made_up,)


def test_an_episode_without_findings_fails_but_its_credits_still_count(faulted):
    invoice, cents = only_invoice(faulted)
    result = grade(faulted, [*investigation(faulted), credit(invoice, format_cents(cents))])

    assert not result.submitted and result.credits_correct and not result.success
    assert result.reported_label is None and not result.hallucinated_numbers


def test_the_grader_imports_nothing_from_rewards():
    source = Path(__file__).resolve().parents[2] / "eval" / "grader.py"
    tree = ast.parse(source.read_text(encoding="utf-8"))
    modules = [
        name
        for node in ast.walk(tree)
        for name in (
            [alias.name for alias in node.names]
            if isinstance(node, ast.Import)
            else [node.module or ""]
            if isinstance(node, ast.ImportFrom)
            else []
        )
    ]
    assert modules and not [m for m in modules if m == "rewards" or m.startswith("rewards.")]


def _invoice_ids(scenario: Scenario) -> set[str]:
    connection = open_database(scenario.database)
    try:
        return {row[0] for row in connection.execute("SELECT id FROM invoices")}
    finally:
        connection.close()


def _unaffected_invoice(scenario: Scenario, besides: str) -> str:
    ids = sorted(_invoice_ids(scenario) - reveal_truth(scenario).overcharges.keys() - {besides})
    return ids[0]


def _tamper(image: bytes, statement: str) -> bytes:
    connection = open_database(image)
    try:
        connection.execute(statement)
        return connection.serialize()
    finally:
        connection.close()


def tampered_record(record: EpisodeRecord, image: bytes) -> EpisodeRecord:
    return dataclasses.replace(record, final_database=image)
