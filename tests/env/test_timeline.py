"""Each possible-timeline invariant (`checks.timeline`, design §1.2) flags the world it forbids.

A generated world passes; the same world with one record moved into an impossible place fails
with a line naming what broke.
"""

from __future__ import annotations

import json
import sqlite3

import pytest

from checks.timeline import timeline_problems
from env.engine.calendar import utc_to_local_date
from env.generation.generator import generate
from env.generation.splits import spec
from env.ledger_env import open_database
from env.scenario import reveal_truth


@pytest.fixture
def world() -> sqlite3.Connection:
    db = open_database(generate("eval", 100001).database)
    db.row_factory = sqlite3.Row
    return db


FAULTED = set(reveal_truth(generate("eval", 100001)).overcharges)


def _problems(db: sqlite3.Connection) -> list[str]:
    tz = db.execute("SELECT timezone FROM customers").fetchone()[0]
    return timeline_problems(db, lambda stamp: utc_to_local_date(stamp, tz), FAULTED)


def _main_sub(db: sqlite3.Connection) -> str:
    return db.execute("SELECT subscription_id FROM invoices ORDER BY issued_at").fetchone()[0]


def _add_event(db: sqlite3.Connection, sub: str, stamp: str, kind: str, details: dict) -> None:
    seq = db.execute(
        "SELECT MAX(seq) FROM subscription_events WHERE subscription_id = ?", (sub,)
    ).fetchone()[0]
    db.execute(
        "INSERT INTO subscription_events VALUES (?,?,?,?,?)",
        (sub, seq + 1, stamp, kind, json.dumps(details)),
    )


def test_a_generated_world_has_a_possible_timeline(world: sqlite3.Connection) -> None:
    assert _problems(world) == []


def test_an_event_before_created_is_flagged(world: sqlite3.Connection) -> None:
    sub = _main_sub(world)
    world.execute(
        "UPDATE subscription_events SET occurred_at = '2020-01-01T00:00:00Z' "
        "WHERE subscription_id = ? AND seq = 2",
        (sub,),
    )
    assert any("before `created`" in p or "out of time order" in p for p in _problems(world))


def test_a_confirmation_before_its_request_is_flagged(world: sqlite3.Connection) -> None:
    sub = _main_sub(world)
    details = {"effective": "at_period_end", "reason": "too_expensive"}
    _add_event(world, sub, "2027-01-01T10:00:00Z", "cancel_requested", details)
    _add_event(world, sub, "2027-01-01T10:00:00Z", "canceled", {"effective": "at_period_end"})
    assert any("before a request" in p for p in _problems(world))


def test_a_withdrawal_in_the_same_second_is_flagged(world: sqlite3.Connection) -> None:
    sub = _main_sub(world)
    details = {"effective": "at_period_end", "reason": "too_expensive"}
    _add_event(world, sub, "2027-01-01T10:00:00Z", "cancel_requested", details)
    _add_event(world, sub, "2027-01-01T10:00:00Z", "renewed", {"cancel_request_withdrawn": True})
    assert any("withdrawn after 0:00:00" in p for p in _problems(world))


def test_a_coupon_logged_after_the_invoice_that_carries_it_is_flagged(
    world: sqlite3.Connection,
) -> None:
    row = world.execute("SELECT id, inputs FROM invoices ORDER BY issued_at").fetchone()
    inputs = json.loads(row["inputs"])
    inputs["coupon"] = {"coupon_code": "LATE10", "percent_off": "0.1", "amount_off": None}
    world.execute("UPDATE invoices SET inputs = ? WHERE id = ?", (json.dumps(inputs), row["id"]))
    assert any("coupon LATE10 applied after issue" in p for p in _problems(world))


def test_seat_changes_on_a_flat_plan_are_flagged(world: sqlite3.Connection) -> None:
    sub = _main_sub(world)
    world.execute("UPDATE plans SET pricing = 'flat'")
    details = {"from_seats": 1, "to_seats": 2, "effective": "next_period"}
    _add_event(world, sub, "2027-01-01T10:00:00Z", "seats_changed", details)
    assert any("seats changed on flat plan" in p for p in _problems(world))


def test_an_anchor_day_that_disagrees_with_the_periods_is_flagged(
    world: sqlite3.Connection,
) -> None:
    world.execute("UPDATE subscriptions SET billing_anchor_day = 29")
    assert any("anchor day 29" in p for p in _problems(world))


def test_usage_that_jumps_with_the_plan_is_flagged(world: sqlite3.Connection) -> None:
    sub = _main_sub(world)
    day = world.execute(
        "SELECT billing_anchor_day FROM subscriptions WHERE id = ?", (sub,)
    ).fetchone()[0]
    for start, end, units in (
        (f"2020-01-{day:02d}", f"2020-02-{day:02d}", 100),
        (f"2020-02-{day:02d}", f"2020-03-{day:02d}", 10_000_000),
    ):
        world.execute("INSERT INTO usage_records VALUES (?,?,?,?)", (sub, start, end, units))
    assert any("to 10000000 units" in p for p in _problems(world))


def test_usage_across_a_plan_change_kept_whole_is_flagged() -> None:
    from checks.invariants import world_problems

    for seed in range(spec("train").first_seed, spec("train").first_seed + 200):
        scenario = generate("train", seed)
        db = open_database(scenario.database)
        db.row_factory = sqlite3.Row
        split = db.execute(
            "SELECT id, subscription_id, inputs FROM invoices "
            "WHERE inputs NOT LIKE '%\"usage_units_before_change\":null%'"
        ).fetchone()
        if split is None:
            continue
        faulted = set(reveal_truth(scenario).overcharges)
        if split["id"] in faulted:
            continue
        db.execute(
            "DELETE FROM usage_records WHERE subscription_id = ?", (split["subscription_id"],)
        )
        assert any("not split at the change" in p for p in world_problems(db, faulted))
        return
    pytest.fail("no split usage period in 200 train worlds")


def test_a_plan_change_withdrawn_that_was_never_scheduled_is_flagged(
    world: sqlite3.Connection,
) -> None:
    sub = _main_sub(world)
    last = world.execute(
        "SELECT MAX(occurred_at) FROM subscription_events WHERE subscription_id = ?", (sub,)
    ).fetchone()[0]
    stamp = last[:-3] + "59Z"
    # a plan no scheduled change names (whatever this world scheduled)
    _add_event(world, sub, stamp, "plan_change_withdrawn", {"to_plan_id": "PLN-NOWHERE"})
    assert any("not scheduled" in p for p in _problems(world))


def test_generated_lookalikes_have_possible_timelines() -> None:
    """Withdrawn scheduled changes, backdated changes and seat changes for a later period
    (`env.generation.lookalikes_plans`) pass, and some of them occur in these worlds."""
    seen = set()
    for seed in range(spec("train").first_seed, spec("train").first_seed + 120):
        scenario = generate("train", seed)
        db = open_database(scenario.database)
        db.row_factory = sqlite3.Row
        tz = db.execute("SELECT timezone FROM customers").fetchone()[0]
        faulted = set(reveal_truth(scenario).overcharges)
        assert timeline_problems(db, lambda s, tz=tz: utc_to_local_date(s, tz), faulted) == []
        for kind, details in db.execute("SELECT type, details FROM subscription_events"):
            effective = str(json.loads(details).get("effective", ""))
            if kind in ("plan_change_withdrawn", "plan_change_start_moved"):
                seen.add(kind)  # world v5: a backdated change's date is its own event's
            elif effective[:1].isdigit():
                seen.add(kind)
    assert {"plan_change_withdrawn", "plan_change_start_moved", "seats_changed"} <= seen


def test_a_cancellation_reversed_after_its_confirmation_is_possible(
    world: sqlite3.Connection,
) -> None:
    """issue 19's look-alike: asked, confirmed, then withdrawn before it took effect."""
    sub = _main_sub(world)
    details = {"effective": "at_period_end", "reason": "too_expensive"}
    _add_event(world, sub, "2027-01-01T10:00:00Z", "cancel_requested", details)
    _add_event(world, sub, "2027-01-01T12:00:00Z", "canceled", {"effective": "at_period_end"})
    _add_event(world, sub, "2027-01-02T09:00:00Z", "renewed", {"cancel_request_withdrawn": True})
    assert _problems(world) == []


def test_a_reversal_weeks_after_the_request_is_flagged(world: sqlite3.Connection) -> None:
    sub = _main_sub(world)
    details = {"effective": "at_period_end", "reason": "too_expensive"}
    _add_event(world, sub, "2027-01-01T10:00:00Z", "cancel_requested", details)
    _add_event(world, sub, "2027-01-01T12:00:00Z", "canceled", {"effective": "at_period_end"})
    _add_event(world, sub, "2027-02-01T09:00:00Z", "renewed", {"cancel_request_withdrawn": True})
    assert any("withdrawn after" in p for p in _problems(world))
