"""`python -m checks.validate`: reference replays pass, and each kind of unsound scenario is caught.

The unsound scenarios are the hand-written world with its truth bent one way at a time (a
wrong credit, an overcharge no read tool shows, a call that errors); the command itself is
run in-process through `main(argv)` and once as a real subprocess.
"""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from checks.validate import (
    invariant_problems,
    main,
    replay_problems,
    shows_amount,
    untouched_problems,
)
from env.scenario import Scenario, ToolCall, reveal_truth
from tests.env.conftest import MARCH, build_hand_scenario, query

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def hand_scenario() -> Scenario:
    """The env tests' hand-written world (their conftest does not reach this folder)."""
    return build_hand_scenario()


def with_truth(scenario: Scenario, **changes: Any) -> Scenario:
    return replace(scenario, _truth=replace(reveal_truth(scenario), **changes))


def test_the_hand_scenario_reference_replays_cleanly(hand_scenario: Scenario) -> None:
    assert replay_problems(hand_scenario) == []


def test_credits_that_differ_from_the_expected_ones_are_reported(hand_scenario: Scenario) -> None:
    bent = with_truth(hand_scenario, expected_credits={MARCH: 12000})
    problems = replay_problems(bent)
    assert any(p.startswith("credits {INV-HAND01: 128.75} != expected") for p in problems)


def test_findings_that_differ_from_the_truth_are_reported(hand_scenario: Scenario) -> None:
    bent = with_truth(hand_scenario, label="proration_error", overcharges={MARCH: 100})
    problems = replay_problems(bent)
    assert "findings label duplicate_payment != truth proration_error" in problems
    assert any(p.startswith("findings {INV-HAND01: 128.75} != truth") for p in problems)


def test_an_overcharge_only_echoed_by_the_credit_note_is_not_evidence(
    hand_scenario: Scenario,
) -> None:
    # without the listings, 128.75 appears only in draft_credit_note's echo of its argument
    listings = ("list_payments", "list_invoices")
    steps = tuple(s for s in reveal_truth(hand_scenario).reference if s.name not in listings)
    problems = replay_problems(with_truth(hand_scenario, reference=steps))
    assert problems[0] == "overcharge 128.75 of INV-HAND01 is in no tool output"
    assert problems[1].startswith("the reference is not a grounded success (untraceable: ")


def test_an_amount_counts_as_shown_only_as_a_whole_number() -> None:
    assert shows_amount('{"difference": "12.40", "currency": "EUR"}', "12.40")
    assert not shows_amount('{"total": "112.40"}', "12.40")
    assert not shows_amount('{"rate": "12.405"}', "12.40")


def test_a_reference_call_that_errors_is_reported(hand_scenario: Scenario) -> None:
    bad = ToolCall("get_invoice", {"invoice_id": "INV-NOSUCH"})
    steps = (bad, *reveal_truth(hand_scenario).reference)
    problems = replay_problems(with_truth(hand_scenario, reference=steps))
    assert len(problems) == 1 and problems[0].startswith("tool error at call 1 (get_invoice)")


def test_a_change_outside_credit_notes_is_reported(hand_scenario: Scenario) -> None:
    db = sqlite3.connect(":memory:")
    db.deserialize(hand_scenario.database)
    db.execute("UPDATE payments SET amount_cents = amount_cents + 1 WHERE id = 'PAY-HAND01'")
    db.commit()
    changed = db.serialize()
    db.close()
    assert query(changed, "SELECT amount_cents FROM payments WHERE id = 'PAY-HAND01'") == [(12876,)]
    assert untouched_problems(hand_scenario.database, changed) == [
        "table payments changed during the replay"
    ]


def test_main_prints_passed_over_total_and_exits_zero(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--split", "heldout", "--limit", "3"]) == 0
    assert capsys.readouterr().out.strip().splitlines()[-1] == "3/3"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--split", "nope"], "invalid choice: 'nope'"),
        (["--split", "eval", "--limit", "0"], "must be at least 1, got 0"),
        (["--split", "eval", "--limit", "ten"], "'ten' is not a whole number"),
        (["--split", "train"], "split 'train' is open-ended: pass --limit N"),
    ],
)
def test_user_mistakes_end_in_one_line_and_status_two(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err


def test_the_module_runs_as_a_command() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "checks.validate", "--split", "eval", "--limit", "4"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip().splitlines()[-1] == "4/4"
    bad = subprocess.run(
        [sys.executable, "-m", "checks.validate", "--split", "nope"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
    assert bad.stderr.count("\n") == 1


def test_the_invariants_flag_a_world_v1_timeline(hand_scenario: Scenario) -> None:
    # the hand scenario predates world v2: it prorates a change inside the invoice's own
    # period and bills usage of the period just begun; the invariants name both
    problems = invariant_problems(hand_scenario)
    assert any("prorates a change on 2025-04-11 inside its own period" in p for p in problems)
    assert any("usage" in p for p in problems)


def test_generated_scenarios_pass_the_invariants() -> None:
    from env.generation.generator import generate

    for seed in range(100_000, 100_013):
        assert invariant_problems(generate("eval", seed)) == []
