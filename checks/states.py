"""One state per subscription (design §1.1): each event a legal transition of the state before.

A subscription is trialing, active, cancel requested or canceled, with a plan and seats in force
and maybe a scheduled plan change pending. After a confirmed, unwithdrawn cancellation only a
`reactivated` event changes it; a change names the plan in force as its `from`; a scheduled
change never targets that plan; every immediate change's proration reaches an invoice (no
cancellation ends the subscription before the invoice that carries it). A certificate is never
issued for a jurisdiction the customer had already left. Reads only what an agent could read.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date

from env.engine.calendar import add_months

Local = Callable[[str], date]
SCHEDULED = ("at_period_end", "next_period")
# what each event may follow: the states it is legal in
LEGAL: dict[str, tuple[str, ...]] = {
    "trial_started": ("active",),
    # the trial's clock: a second `trial_ended` (extended after it ended); a trial that ends
    # while a cancellation is asked or confirmed (it is no change anyone makes)
    "trial_ended": ("trialing", "active", "cancel_requested", "canceled"),
    "plan_changed": ("trialing", "active", "cancel_requested"),
    "plan_change_withdrawn": ("trialing", "active", "cancel_requested"),
    "plan_change_start_moved": ("trialing", "active", "cancel_requested"),
    "seats_changed": ("trialing", "active", "cancel_requested"),
    "coupon_applied": ("trialing", "active", "cancel_requested"),
    "coupon_removed": ("trialing", "active", "cancel_requested", "canceled"),
    "cancel_requested": ("trialing", "active"),
    "canceled": ("cancel_requested",),
    "renewed": ("cancel_requested",),  # a request withdrawn before its confirmation
    "reactivated": ("canceled",),
    "exemption_withheld": ("trialing", "active", "cancel_requested"),
}


@dataclass
class _State:
    status: str
    plan: str
    seats: int
    scheduled: tuple[str, date] | None = None  # plan, the period start it takes effect
    coupon: str | None = None
    trial: bool = False


def state_problems(db: sqlite3.Connection, local: Local) -> list[str]:
    """Every illegal transition, one line each; `local(stamp) -> date` in the customer's zone."""
    db.row_factory = sqlite3.Row
    opened = local(db.execute("SELECT opened_at FROM disputes").fetchone()["opened_at"])
    problems: list[str] = []
    for sub in db.execute("SELECT * FROM subscriptions ORDER BY id").fetchall():
        events = db.execute(
            "SELECT * FROM subscription_events WHERE subscription_id = ? ORDER BY seq", (sub["id"],)
        ).fetchall()
        starts = {
            r["period_start"]
            for r in db.execute(
                "SELECT period_start FROM invoices WHERE subscription_id = ?", (sub["id"],)
            )
        }
        if events and events[0]["type"] == "created":
            problems += _walk(sub, events, local)
            problems += _prorations_reach_invoices(sub, events, local, starts, opened)
    return problems + _certificate_problems(db)


def next_period_start(anchor_day: int, day: date) -> date:
    """The first period start strictly after `day` on a grid of `anchor_day` (<= 28)."""
    start = day.replace(day=anchor_day)
    return start if start > day else add_months(start, 1)


def _walk(sub: sqlite3.Row, events: list[sqlite3.Row], local: Local) -> list[str]:
    first = json.loads(events[0]["details"])
    state = _State("active", first.get("plan_id", sub["plan_id"]), first.get("seats", sub["seats"]))
    problems: list[str] = []
    for e in events[1:]:
        kind, details, day = e["type"], json.loads(e["details"]), local(e["occurred_at"])
        if state.scheduled is not None and state.scheduled[1] <= day:
            state.plan, state.scheduled = state.scheduled[0], None
        where = f"{sub['id']}: {kind} at {e['occurred_at']}"
        if kind == "renewed" and not details.get("cancel_request_withdrawn"):
            problems.append(f"{where} renews nothing")
        if kind in LEGAL and state.status not in LEGAL[kind]:
            problems.append(f"{where} in state {state.status}")
            continue
        problems += _apply(state, kind, details, day, sub["billing_anchor_day"], where)
    return problems


def _apply(
    state: _State, kind: str, details: dict, day: date, anchor: int, where: str
) -> list[str]:
    """Moves the state by one event; the problems of its details against the state."""
    problems: list[str] = []
    if kind == "trial_started":
        state.status, state.trial = "trialing", True
    elif kind == "trial_ended":
        if not state.trial:
            problems.append(f"{where} without a trial")
        state.status = "active" if state.status == "trialing" else state.status
    elif kind == "plan_changed":
        if details.get("from_plan_id") != state.plan:
            problems.append(f"{where} from {details.get('from_plan_id')}, in force {state.plan}")
        if details.get("effective") in SCHEDULED:
            if details.get("to_plan_id") == state.plan:
                problems.append(f"{where} schedules the plan in force {state.plan}")
            state.scheduled = (details["to_plan_id"], next_period_start(anchor, day))
        else:
            state.plan, state.scheduled = details["to_plan_id"], None
    elif kind == "plan_change_withdrawn":
        if state.scheduled is None or state.scheduled[0] != details.get("to_plan_id"):
            problems.append(f"{where} withdraws no scheduled change")
        state.scheduled = None
    elif kind == "plan_change_start_moved":
        waiting = state.scheduled is not None and state.scheduled[0] == details.get("to_plan_id")
        if waiting and state.scheduled is not None:  # a scheduled change moved to a later start
            state.scheduled = (state.scheduled[0], date.fromisoformat(details["starts"]))
        elif details.get("to_plan_id") != state.plan:
            problems.append(f"{where} moves the start of a change not in force")
    elif kind == "seats_changed":
        state.seats = details.get("to_seats", state.seats)
    elif kind == "coupon_applied":
        state.coupon = details.get("coupon_code")
    elif kind == "coupon_removed":
        if state.coupon != details.get("coupon_code"):
            problems.append(f"{where} removes coupon {details.get('coupon_code')} not applied")
        state.coupon = None
    elif kind == "cancel_requested":
        state.status = "cancel_requested"
    elif kind == "canceled":
        state.status = "canceled"
    elif kind in ("renewed", "reactivated"):
        state.status = "active"
    elif kind == "exemption_withheld":  # a tax matter: it changes no plan, seats or status
        pass
    else:
        problems.append(f"{where}: unknown event type")
    return problems


def _prorations_reach_invoices(
    sub: sqlite3.Row,
    events: list[sqlite3.Row],
    local: Local,
    starts: set[str],
    opened: date,
) -> list[str]:
    """An immediate change in a period is prorated on the invoice of the next period: that
    invoice exists, or is still to come (the next period starts after the dispute, and no
    cancellation ends the subscription first)."""
    anchor = sub["billing_anchor_day"]
    ends = _cancellation_ends(events, local, anchor)
    problems = []
    for e in events:
        details = json.loads(e["details"])
        if e["type"] != "plan_changed" or details.get("effective") in SCHEDULED:
            continue
        effective = details.get("effective", "immediately")
        dated = effective != "immediately"
        day = date.fromisoformat(effective) if dated else local(e["occurred_at"])
        carrier = next_period_start(anchor, day)
        if carrier.isoformat() in starts:
            continue
        still_to_come = carrier > opened and (ends is None or ends > carrier)
        if not still_to_come:
            problems.append(
                f"{sub['id']}: the proration of the change on {day} reaches no invoice "
                f"(none starts {carrier})"
            )
    return problems


def _cancellation_ends(events: list[sqlite3.Row], local: Local, anchor: int) -> date | None:
    """The day a confirmed, unwithdrawn, unreactivated cancellation takes effect, or None."""
    ends: date | None = None
    for e in events:
        details = json.loads(e["details"])
        if e["type"] == "canceled":
            effective = details.get("effective", "at_period_end")
            if effective in SCHEDULED:
                ends = next_period_start(anchor, local(e["occurred_at"]))
            else:
                ends = date.fromisoformat(effective)
        elif e["type"] in ("renewed", "reactivated"):
            ends = None
    return ends


def _certificate_problems(db: sqlite3.Connection) -> list[str]:
    """A certificate issued for the previous jurisdiction starts before the customer left it."""
    c = db.execute("SELECT * FROM customers").fetchone()
    previous, since = c["previous_tax_jurisdiction"], c["tax_jurisdiction_since"]
    start, where = c["exemption_valid_from"], c["exemption_jurisdiction"]
    if previous is None or since is None or start is None or where != previous:
        return []
    if start >= since:
        return [f"a certificate for {previous} from {start}, left on {since}"]
    return []
