"""`checks.invariants.analyst_problems` flags what a careful analyst would credit (design §1.1).

Generated worlds pass; the same world with one record changed back to a bill an analyst would
query (usage from inside the trial, a month's usage on a scheduled plan's terms, a "partial"
credit of the whole total) fails with a line naming it.
"""

from __future__ import annotations

import json
import sqlite3

import pytest

from checks.invariants import analyst_problems
from env.generation.generator import generate
from env.generation.splits import split_seeds
from env.ledger_env import open_database
from env.scenario import reveal_truth


def _world(seed: int) -> tuple[sqlite3.Connection, set[str]]:
    scenario = generate("eval", seed)
    db = open_database(scenario.database)
    db.row_factory = sqlite3.Row
    return db, set(reveal_truth(scenario).overcharges)


def _world_with_note() -> tuple[sqlite3.Connection, set[str]]:
    """The first eval world with a credit note issued before the dispute."""
    for seed in split_seeds("eval"):
        db, faulted = _world(seed)
        if db.execute("SELECT 1 FROM credit_notes").fetchone():
            return db, faulted
        db.close()
    raise AssertionError("no eval world holds a credit note")


def _edit_inputs(db: sqlite3.Connection, invoice_id: str, **changes: object) -> None:
    inputs = json.loads(
        db.execute("SELECT inputs FROM invoices WHERE id = ?", (invoice_id,)).fetchone()[0]
    )
    inputs.update(changes)
    db.execute("UPDATE invoices SET inputs = ? WHERE id = ?", (json.dumps(inputs), invoice_id))


def _invoice_with(db: sqlite3.Connection, key: str) -> sqlite3.Row:
    rows = db.execute("SELECT * FROM invoices ORDER BY issued_at, id").fetchall()
    return next(r for r in rows if json.loads(r["inputs"]).get(key) is not None)


@pytest.mark.parametrize("seed", [100000, 100001, 100040])
def test_generated_worlds_carry_nothing_an_analyst_would_credit(seed: int) -> None:
    db, faulted = _world(seed)
    assert analyst_problems(db, faulted) == []


def test_usage_billed_from_inside_the_trial_is_flagged() -> None:
    db, faulted, row = _world_with("usage_start")
    _edit_inputs(db, row["id"], usage_start=None)  # the whole period, trial days included
    problems = analyst_problems(db, faulted)
    assert any(row["id"] in p and "inside the free trial" in p for p in problems)


def _world_with(key: str) -> tuple[sqlite3.Connection, set[str], sqlite3.Row]:
    """The first eval world with an invoice whose billing inputs set `key`, and that invoice
    (a fixed seed would follow the generator's draws, not the property)."""
    for seed in range(100000, 100100):
        db, faulted = _world(seed)
        rows = db.execute("SELECT * FROM invoices ORDER BY issued_at, id").fetchall()
        found = [r for r in rows if json.loads(r["inputs"]).get(key) is not None]
        if found:
            return db, faulted, found[0]
        db.close()
    raise AssertionError(f"no eval world sets {key}")


def test_usage_billed_on_the_scheduled_plan_is_flagged() -> None:
    db, faulted, row = _world_with("scheduled_from_plan")
    _edit_inputs(db, row["id"], scheduled_from_plan=None)  # the month used on the new terms
    problems = analyst_problems(db, faulted)
    assert any(row["id"] in p and "that period was billed on" in p for p in problems)


def test_a_partial_credit_of_the_whole_total_is_flagged() -> None:
    db, faulted = _world_with_note()
    note = db.execute("SELECT * FROM credit_notes").fetchone()
    total = db.execute(
        "SELECT total_cents FROM invoices WHERE id = ?", (note["invoice_id"],)
    ).fetchone()[0]
    db.execute(
        "UPDATE credit_notes SET amount_cents = ?, reason = ? WHERE id = ?",
        (total, "Partial credit while the billing team investigates", note["id"]),
    )
    problems = analyst_problems(db, faulted)
    assert any(note["id"] in p and "partial" in p for p in problems)
