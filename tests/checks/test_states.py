"""The state-machine and world's-now checkers (`checks.states`, `checks.now`, design §1.1) each
flag the world they forbid: a generated world passes; the same world with one record put where
the rules forbid it fails with a line naming what broke.
"""

from __future__ import annotations

import json
import sqlite3
from functools import cache

import pytest

from checks.now import after_now_problems
from checks.states import next_period_start, state_problems
from env.engine.calendar import utc_to_local_date
from env.generation.generator import generate
from env.generation.splits import split_seeds
from env.ledger_env import open_database


@cache
def _never_canceled() -> bytes:
    """The first eval world whose main subscription was never asked to cancel."""
    for seed in split_seeds("eval"):
        image = generate("eval", seed).database
        db = open_database(image)
        db.row_factory = sqlite3.Row
        kinds = {
            r[0]
            for r in db.execute(
                "SELECT type FROM subscription_events WHERE subscription_id = ?", (_main(db)["id"],)
            )
        }
        db.close()
        if not kinds & {"cancel_requested", "canceled", "reactivated"}:
            return image
    raise AssertionError("every eval main subscription was asked to cancel")


@pytest.fixture
def world() -> sqlite3.Connection:
    db = open_database(_never_canceled())
    db.row_factory = sqlite3.Row
    return db


def _local(db: sqlite3.Connection):
    tz = db.execute("SELECT timezone FROM customers").fetchone()[0]
    return lambda stamp: utc_to_local_date(stamp, tz)


def _states(db: sqlite3.Connection) -> list[str]:
    return state_problems(db, _local(db))


def _main(db: sqlite3.Connection) -> sqlite3.Row:
    sub = db.execute("SELECT subscription_id FROM invoices ORDER BY issued_at").fetchone()[0]
    return db.execute("SELECT * FROM subscriptions WHERE id = ?", (sub,)).fetchone()


def _add(db: sqlite3.Connection, sub: str, stamp: str, kind: str, details: dict) -> None:
    seq = db.execute(
        "SELECT MAX(seq) FROM subscription_events WHERE subscription_id = ?", (sub,)
    ).fetchone()[0]
    db.execute(
        "INSERT INTO subscription_events VALUES (?,?,?,?,?)",
        (sub, seq + 1, stamp, kind, json.dumps(details)),
    )


def _plan_in_force(db: sqlite3.Connection, sub: str) -> str:
    """The plan the last plan change put in force (or the created one), for hand-made events."""
    plan = json.loads(
        db.execute(
            "SELECT details FROM subscription_events WHERE subscription_id = ? AND seq = "
            "(SELECT MIN(seq) FROM subscription_events WHERE subscription_id = ?)",
            (sub, sub),
        ).fetchone()[0]
    )["plan_id"]
    for (details,) in db.execute(
        "SELECT details FROM subscription_events WHERE subscription_id = ? AND type = "
        "'plan_changed' ORDER BY seq",
        (sub,),
    ):
        plan = json.loads(details)["to_plan_id"]
    return str(plan)


def _cancel_far_ahead(db: sqlite3.Connection, sub: str) -> None:
    details = {"effective": "at_period_end", "reason": "too_expensive"}
    _add(db, sub, "2030-01-01T10:00:00Z", "cancel_requested", details)
    _add(db, sub, "2030-01-01T12:00:00Z", "canceled", {"effective": "at_period_end"})


def test_a_generated_world_is_one_state_machine_per_subscription(
    world: sqlite3.Connection,
) -> None:
    assert _states(world) == []
    assert after_now_problems(world, _local(world)) == []


def test_a_change_after_a_confirmed_cancellation_is_flagged(world: sqlite3.Connection) -> None:
    sub = _main(world)
    _cancel_far_ahead(world, sub["id"])
    _add(world, sub["id"], "2030-01-02T10:00:00Z", "seats_changed", {"to_seats": 3})
    assert any("seats_changed" in p and "in state canceled" in p for p in _states(world))


def test_a_reactivation_makes_the_same_change_legal(world: sqlite3.Connection) -> None:
    sub = _main(world)
    _cancel_far_ahead(world, sub["id"])
    _add(world, sub["id"], "2030-01-01T18:00:00Z", "reactivated", {"cancellation_reversed": True})
    _add(world, sub["id"], "2030-01-02T10:00:00Z", "seats_changed", {"to_seats": 3})
    assert not any("in state" in p for p in _states(world))


def test_a_reactivation_without_a_cancellation_is_flagged(world: sqlite3.Connection) -> None:
    sub = _main(world)
    _add(world, sub["id"], "2030-01-01T18:00:00Z", "reactivated", {"cancellation_reversed": True})
    assert any("reactivated" in p and "in state active" in p for p in _states(world))


def test_a_change_from_a_plan_not_in_force_is_flagged(world: sqlite3.Connection) -> None:
    sub = _main(world)
    details = {"from_plan_id": "PLN-NOWHERE", "to_plan_id": "PLN-TEAM", "effective": "immediately"}
    _add(world, sub["id"], "2030-01-01T10:00:00Z", "plan_changed", details)
    assert any("from PLN-NOWHERE, in force" in p for p in _states(world))


def test_a_scheduled_change_to_the_plan_in_force_is_flagged(world: sqlite3.Connection) -> None:
    sub = _main(world)
    plan = _plan_in_force(world, sub["id"])
    details = {"from_plan_id": plan, "to_plan_id": plan, "effective": "at_period_end"}
    _add(world, sub["id"], "2030-01-01T10:00:00Z", "plan_changed", details)
    assert any("schedules the plan in force" in p for p in _states(world))


def test_an_immediate_change_no_invoice_will_carry_is_flagged(world: sqlite3.Connection) -> None:
    """A change in the running period, then a cancellation confirmed at its end: the
    proration would need an invoice that never comes."""
    sub = _main(world)
    plan = _plan_in_force(world, sub["id"])
    opened = world.execute("SELECT opened_at FROM disputes").fetchone()[0]
    world.execute("UPDATE disputes SET opened_at = '2031-01-01T00:00:00Z'")
    details = {"from_plan_id": plan, "to_plan_id": "PLN-TEAM", "effective": "immediately"}
    _add(world, sub["id"], "2030-01-01T10:00:00Z", "plan_changed", details)
    _cancel_far_ahead(world, sub["id"])  # asked after the change, the same period
    problems = _states(world)
    assert any("reaches no invoice" in p for p in problems), (opened, problems)


def test_a_certificate_for_a_jurisdiction_already_left_is_flagged(
    world: sqlite3.Connection,
) -> None:
    world.execute(
        "UPDATE customers SET previous_tax_jurisdiction = 'US-WA', tax_jurisdiction_since = "
        "'2025-01-01', exemption_jurisdiction = 'US-WA', exemption_valid_from = '2025-02-01', "
        "exemption_valid_until = '2026-01-01'"
    )
    assert any("certificate for US-WA from 2025-02-01, left on 2025-01-01" in p
               for p in _states(world))  # fmt: skip


@pytest.mark.parametrize(
    ("table", "sql"),
    [
        ("fx_rates", "INSERT INTO fx_rates VALUES ('2031-01-02', 'USD', 'EUR', '0.9100')"),
        ("tax_rates", "INSERT INTO tax_rates VALUES ('US-WA', '0.0650', '2031-01-01', NULL)"),
        ("usage_records", "INSERT INTO usage_records VALUES ('S', '2031-01-01', '2031-02-01', 5)"),
        (
            "subscription_events",
            "INSERT INTO subscription_events VALUES ('SUB-X', 99, '2031-01-01T00:00:00Z', "
            "'coupon_removed', '{}')",
        ),
    ],
)
def test_a_record_dated_after_the_dispute_is_flagged(
    world: sqlite3.Connection, table: str, sql: str
) -> None:
    world.execute(sql)
    assert any(p.split(" ")[1] == table for p in after_now_problems(world, _local(world)))


def test_the_next_period_start_is_strictly_after_the_day() -> None:
    from datetime import date

    assert next_period_start(5, date(2025, 3, 4)) == date(2025, 3, 5)
    assert next_period_start(5, date(2025, 3, 5)) == date(2025, 4, 5)
    assert next_period_start(28, date(2025, 12, 30)) == date(2026, 1, 28)
