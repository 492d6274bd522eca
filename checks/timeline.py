"""Possible timelines (design §1.2): events in an order a real system records them.

`checks.invariants` runs these with the billing rules on every scenario `checks.validate`
replays. They read only what an agent could read: `created` first, a cancellation request
before its confirmation, a withdrawal a human interval after its request, a coupon, seat or plan
change on invoices issued after it only, seat changes on per-seat plans only, the anchor day on
every period, and usage volumes that belong to the customer (not to the plan at period end).
"""

from __future__ import annotations

import json
import sqlite3
from datetime import UTC, datetime, timedelta

WITHDRAWAL_MIN = timedelta(minutes=1)  # a person reconsiders: not in the same second
WITHDRAWAL_MAX = timedelta(days=14)
USAGE_SPREAD = 8.0  # largest / smallest usage of one subscription's finished periods


def _moment(stamp: str) -> datetime:
    return datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)


def timeline_problems(db: sqlite3.Connection, local: object, faulted: set[str]) -> list[str]:
    """Every impossible ordering or interval, one line each. `local(stamp) -> date` reads a
    UTC stamp in the customer's timezone; `faulted` invoices may carry one wrong input."""
    db.row_factory = sqlite3.Row
    plans = {r["id"]: r for r in db.execute("SELECT * FROM plans")}
    problems: list[str] = []
    opened = db.execute("SELECT opened_at FROM disputes").fetchone()["opened_at"][:10]
    for sub in db.execute("SELECT * FROM subscriptions").fetchall():
        events = db.execute(
            "SELECT * FROM subscription_events WHERE subscription_id = ? ORDER BY seq", (sub["id"],)
        ).fetchall()
        invoices = db.execute(
            "SELECT * FROM invoices WHERE subscription_id = ? ORDER BY issued_at", (sub["id"],)
        ).fetchall()
        usage = db.execute(
            "SELECT * FROM usage_records WHERE subscription_id = ? ORDER BY period_start",
            (sub["id"],),
        ).fetchall()
        problems += _order(sub, events)
        problems += _per_seat_only(sub, events, plans)
        problems += _reflected_after(sub, events, invoices, local, faulted)
        problems += _anchor(sub, invoices)
        problems += _usage_spread(sub, _per_period(sub, usage, opened))
    return problems


def _order(sub: sqlite3.Row, events: list[sqlite3.Row]) -> list[str]:
    problems = []
    if not events or events[0]["type"] != "created":
        return [f"{sub['id']}: the first event is not `created`"]
    created = events[0]["occurred_at"]
    if created != sub["started_at"]:
        problems.append(f"{sub['id']}: created at {created}, started_at {sub['started_at']}")
    stamps = [e["occurred_at"] for e in events]
    if stamps != sorted(stamps):
        problems.append(f"{sub['id']}: events out of time order")
    if any(s < created for s in stamps):
        problems.append(f"{sub['id']}: an event is dated before `created`")
    request: sqlite3.Row | None = None
    scheduled: sqlite3.Row | None = None  # a plan change waiting for the period end
    for e in events:
        details = json.loads(e["details"])
        if e["type"] == "plan_changed":
            waits = details.get("effective") in ("at_period_end", "next_period")
            scheduled = e if waits else None
        elif e["type"] == "plan_change_withdrawn":
            if scheduled is None or json.loads(scheduled["details"])["to_plan_id"] != details.get(
                "to_plan_id"
            ):
                problems.append(f"{sub['id']}: a plan change withdrawn that was not scheduled")
            scheduled = None
        elif e["type"] == "cancel_requested":
            request = e
        elif e["type"] == "canceled":
            if request is None or request["occurred_at"] >= e["occurred_at"]:
                problems.append(f"{sub['id']}: canceled at {e['occurred_at']} before a request")
        elif e["type"] == "reactivated":  # after a confirmed cancellation only (checks.states)
            request = None
        elif e["type"] == "renewed" and details.get("cancel_request_withdrawn"):
            if request is None:
                problems.append(f"{sub['id']}: a withdrawal without a request")
                continue
            gap = _moment(e["occurred_at"]) - _moment(request["occurred_at"])
            if not WITHDRAWAL_MIN <= gap <= WITHDRAWAL_MAX:
                problems.append(f"{sub['id']}: a request withdrawn after {gap}")
            request = None
    return problems


def _per_seat_only(
    sub: sqlite3.Row, events: list[sqlite3.Row], plans: dict[str, sqlite3.Row]
) -> list[str]:
    """A seats_changed event needs a per-seat plan now and after any change already asked for."""
    current = json.loads(events[0]["details"]).get("plan_id", sub["plan_id"]) if events else None
    scheduled: str | None = None
    problems = []
    for e in events:
        details = json.loads(e["details"])
        if e["type"] == "plan_changed":
            if details.get("effective") in ("at_period_end", "next_period"):
                scheduled = details["to_plan_id"]
            else:  # immediately, or from a date of the same period (backdated)
                current, scheduled = details["to_plan_id"], None
        elif e["type"] == "plan_change_withdrawn":
            scheduled = None
        elif e["type"] == "seats_changed":
            for plan_id in (current, scheduled):
                if plan_id is not None and plans[plan_id]["pricing"] != "per_seat":
                    problems.append(f"{sub['id']}: seats changed on flat plan {plan_id}")
    return problems


def _reflected_after(
    sub: sqlite3.Row,
    events: list[sqlite3.Row],
    invoices: list[sqlite3.Row],
    local: object,
    faulted: set[str],
) -> list[str]:
    """A coupon, seat count or plan change on an invoice was logged before it was issued."""
    problems = []
    created = json.loads(events[0]["details"]) if events else {}
    for row in invoices:
        if row["id"] in faulted:
            continue
        inputs = json.loads(row["inputs"])
        before = [e for e in events if e["occurred_at"] <= row["issued_at"]]
        kinds = [(e["type"], json.loads(e["details"])) for e in before]
        coupon = inputs["coupon"]
        if coupon is not None and not any(
            k == "coupon_applied" and d.get("coupon_code") == coupon["coupon_code"]
            for k, d in kinds
        ):
            problems.append(f"{row['id']}: coupon {coupon['coupon_code']} applied after issue")
        seats = {created.get("seats")} | {d["to_seats"] for k, d in kinds if k == "seats_changed"}
        if inputs["plan"]["pricing"] == "per_seat" and inputs["seats"] not in seats:
            problems.append(f"{row['id']}: {inputs['seats']} seats before any change to them")
        plan_ids = {created.get("plan_id")}
        plan_ids |= {d["to_plan_id"] for k, d in kinds if k == "plan_changed"}
        if inputs["plan"]["plan_id"] not in plan_ids:
            problems.append(f"{row['id']}: plan {inputs['plan']['plan_id']} before its change")
        change = inputs["plan_change_date"]
        if change is not None and inputs["previous_plan"] is not None:
            days = {
                local(e["occurred_at"]).isoformat()  # type: ignore[operator]
                for e in before
                if e["type"] == "plan_changed"
            }  # or the earlier date a backdated change names
            days |= {d.get("effective", "") for k, d in kinds if k == "plan_changed"}
            days |= {d.get("starts", "") for k, d in kinds if k == "plan_change_start_moved"}
            if change < row["period_start"] and change not in days:
                problems.append(f"{row['id']}: prorates a change on {change} not yet logged")
    return problems


def _anchor(sub: sqlite3.Row, invoices: list[sqlite3.Row]) -> list[str]:
    anchor = sub["billing_anchor_day"]
    wrong = sorted({r["period_start"] for r in invoices if int(r["period_start"][8:]) != anchor})
    return [f"{sub['id']}: anchor day {anchor} but periods start {wrong}"] if wrong else []


def _per_period(sub: sqlite3.Row, usage: list[sqlite3.Row], opened: str) -> list[int]:
    """Units per finished period: a record starting off the anchor day is the second part of
    one (a trial's end splits a period), and a period is finished when its last part ended
    before the dispute (a trial's stub alone is no period's usage)."""
    periods: list[tuple[int, str]] = []  # (units, the last part's end)
    for u in usage:
        if periods and int(u["period_start"][8:]) != sub["billing_anchor_day"]:
            periods[-1] = (periods[-1][0] + u["units"], u["period_end"])
        else:
            periods.append((u["units"], u["period_end"]))
    return [units for units, end in periods if end < opened]


def _usage_spread(sub: sqlite3.Row, units: list[int]) -> list[str]:
    used = [u for u in units if u > 0]
    if len(used) >= 2 and max(used) > USAGE_SPREAD * min(used):
        return [f"{sub['id']}: usage from {min(used)} to {max(used)} units"]
    return []
