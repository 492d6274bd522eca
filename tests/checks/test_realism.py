"""The realism checks (`checks.realism`): each holds on generated worlds and flags the world it
forbids, planted by editing one record of a real scenario's database."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from datetime import date, timedelta
from functools import cache

import pytest

from checks.realism import CHECKS, realism_problems
from env.generation.generator import generate
from env.generation.splits import split_seeds
from env.ledger_env import open_database
from env.scenario import Scenario

Edit = Callable[[sqlite3.Connection], bool]  # plants the unrealistic record; False: no room


@cache
def _scenarios() -> list[Scenario]:
    return [generate("eval", seed) for seed in split_seeds("eval")]


def _planted(edit: Edit) -> sqlite3.Connection:
    for scenario in _scenarios():
        db = open_database(scenario.database)
        if edit(db):
            return db
        db.close()
    pytest.skip("no eval world has room for this record")


def test_every_realism_check_holds_on_every_eval_world() -> None:
    for scenario in _scenarios():
        db = open_database(scenario.database)
        found = {name: lines for name, lines in realism_problems(db).items() if lines}
        db.close()
        assert found == {}, scenario.scenario_id


def _fx_jump(db: sqlite3.Connection) -> bool:
    row = db.execute("SELECT date, quote, rate FROM fx_rates ORDER BY date LIMIT 1").fetchone()
    if row is None:
        return False
    day = date.fromisoformat(row[0]) + timedelta(days=1)
    while (
        day.weekday() >= 5
        or db.execute("SELECT 1 FROM fx_rates WHERE date = ?", (day.isoformat(),)).fetchone()
    ):
        day += timedelta(days=1)
    jumped = f"{float(row[2]) * 1.03:.4f}"  # 3 % overnight
    db.execute("INSERT INTO fx_rates VALUES (?, 'USD', ?, ?)", (day.isoformat(), row[1], jumped))
    return True


def _tax_twice(db: sqlite3.Connection) -> bool:
    row = db.execute("SELECT * FROM tax_rates LIMIT 1").fetchone()
    db.execute("INSERT INTO tax_rates VALUES (?, ?, ?, ?)", tuple(row))
    return True


def _certificate_of_weeks(db: sqlite3.Connection) -> bool:
    start = db.execute("SELECT exemption_valid_from FROM customers").fetchone()[0]
    if start is None:
        return False
    end = (date.fromisoformat(start) + timedelta(days=30)).isoformat()
    db.execute("UPDATE customers SET exemption_valid_until = ?", (end,))
    return True


def _certificate_before_signup(db: sqlite3.Connection) -> bool:
    if db.execute("SELECT exemption_valid_from FROM customers").fetchone()[0] is None:
        return False
    db.execute("UPDATE customers SET exemption_valid_from = '2023-01-01'")
    return True


def _change_inside_trial(db: sqlite3.Connection) -> bool:
    ended = db.execute(
        "SELECT subscription_id, occurred_at FROM subscription_events WHERE type = 'trial_ended'"
    ).fetchone()
    if ended is None:
        return False
    invoice = db.execute(
        "SELECT id, inputs FROM invoices WHERE subscription_id = ? ORDER BY issued_at DESC",
        (ended[0],),
    ).fetchone()
    inputs = json.loads(invoice[1])
    inputs["plan_change_date"] = (date.fromisoformat(ended[1][:10]) - timedelta(days=3)).isoformat()
    db.execute("UPDATE invoices SET inputs = ? WHERE id = ?", (json.dumps(inputs), invoice[0]))
    return True


def _late_dispute(db: sqlite3.Connection) -> bool:
    (opened,) = db.execute("SELECT opened_at FROM disputes").fetchone()
    later = date.fromisoformat(opened[:10]) + timedelta(days=25)
    db.execute("UPDATE disputes SET opened_at = ?", (later.isoformat() + opened[10:],))
    return True


PLANTED: dict[str, Edit] = {
    "fx_moves": _fx_jump,
    "tax_rows": _tax_twice,
    "certificates": _certificate_of_weeks,
    "trial_changes": _change_inside_trial,
    "dispute_window": _late_dispute,
}


@pytest.mark.parametrize("name", sorted(PLANTED))
def test_a_realism_check_flags_the_world_it_forbids(name: str) -> None:
    db = _planted(PLANTED[name])
    assert CHECKS[name](db), name
    db.close()


def test_a_certificate_from_before_the_customer_existed_is_flagged() -> None:
    db = _planted(_certificate_before_signup)
    assert any("before the customer existed" in line for line in CHECKS["certificates"](db))
    db.close()


def test_the_checks_listed_are_the_five_of_the_issue() -> None:
    assert set(CHECKS) == set(PLANTED)
