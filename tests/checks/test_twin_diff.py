"""A twin differs from its scenario only where the fault did (`checks.twin_diff`): every eval
twin passes, and a twin planted with a change elsewhere fails, also through
`checks.validate --split eval-twins`'s per-seed check."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import replace
from functools import cache

import pytest

from checks import validate
from checks.twin_diff import twin_problems
from env.generation.generator import generate
from env.generation.splits import split_seeds
from env.generation.twins import twin
from env.ledger_env import open_database
from env.scenario import Scenario, reveal_truth

Edit = Callable[[sqlite3.Connection, set[str]], bool]


@cache
def _faulted_pairs() -> list[tuple[Scenario, Scenario]]:
    pairs = []
    for seed in split_seeds("eval"):
        scenario = generate("eval", seed)
        if reveal_truth(scenario).label != "no_error":
            pairs.append((scenario, twin("eval", seed)))
    return pairs


def _edited(scenario: Scenario, edit: Edit, faulted: set[str]) -> Scenario | None:
    db = open_database(scenario.database)
    try:
        if not edit(db, faulted):
            return None
        db.commit()
        return replace(scenario, database=db.serialize())
    finally:
        db.close()


def _memo_elsewhere(db: sqlite3.Connection, faulted: set[str]) -> bool:
    rows = [r[0] for r in db.execute("SELECT id FROM invoices ORDER BY id") if r[0] not in faulted]
    if not rows:
        return False
    db.execute("UPDATE invoices SET memo = 'moved in the twin' WHERE id = ?", (rows[0],))
    return True


def _event_moved(db: sqlite3.Connection, faulted: set[str]) -> bool:
    db.execute(
        "DELETE FROM subscription_events WHERE rowid = (SELECT MAX(rowid) FROM subscription_events)"
    )
    return True


def _pending_canceled(db: sqlite3.Connection, faulted: set[str]) -> bool:
    """A subscription still active (its cancellation pending, or none) turned canceled."""
    row = db.execute("SELECT id FROM subscriptions WHERE status = 'active'").fetchone()
    if row is None:
        return False
    db.execute("UPDATE subscriptions SET status = 'canceled' WHERE id = ?", (row[0],))
    return True


def _payment_elsewhere(db: sqlite3.Connection, faulted: set[str]) -> bool:
    rows = [
        r[0]
        for r in db.execute("SELECT id, invoice_id FROM payments ORDER BY id")
        if r[1] not in faulted
    ]
    if not rows:
        return False
    db.execute("UPDATE payments SET amount_cents = amount_cents + 1 WHERE id = ?", (rows[0],))
    return True


EDITS: dict[str, Edit] = {
    "an invoice the fault did not touch": _memo_elsewhere,
    "an event": _event_moved,
    "a subscription's status": _pending_canceled,
    "a payment of another invoice": _payment_elsewhere,
}


def test_every_eval_twin_differs_from_its_scenario_only_in_the_faults_records() -> None:
    for scenario, its_twin in _faulted_pairs():
        assert twin_problems(scenario, its_twin) == [], scenario.scenario_id


@pytest.mark.parametrize("what", sorted(EDITS))
def test_a_twin_planted_with_a_change_outside_its_fault_fails(what: str) -> None:
    for scenario, its_twin in _faulted_pairs():
        faulted = set(reveal_truth(scenario).overcharges)
        planted = _edited(its_twin, EDITS[what], faulted)
        if planted is not None:
            assert twin_problems(scenario, planted), what
            return
    pytest.skip(f"no eval twin has {what} to change")


def test_a_twin_whose_complaint_names_a_missing_invoice_fails() -> None:
    scenario, its_twin = _faulted_pairs()[0]
    planted = replace(its_twin, complaint=its_twin.complaint + " See INV-ZZZZ99.")
    assert any("INV-ZZZZ99" in p for p in twin_problems(scenario, planted))


def test_validate_fails_a_planted_twin_and_passes_the_real_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    scenario, its_twin = _faulted_pairs()[0]
    assert validate.validate_seed("eval-twins", scenario.seed).ok
    faulted = set(reveal_truth(scenario).overcharges)
    planted = _edited(its_twin, _memo_elsewhere, faulted)
    assert planted is not None
    real = validate.generate.__wrapped__

    def planting(split: str, seed: int) -> Scenario:
        return planted if split == "eval-twins" and seed == scenario.seed else real(split, seed)

    monkeypatch.setattr(validate.generate, "__wrapped__", planting)
    check = validate.validate_seed("eval-twins", scenario.seed)
    assert not check.ok
    assert any(p.startswith("twin: invoices row") for p in check.problems)
