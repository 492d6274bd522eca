"""The auditor's plan and seat checks (`agent.audit_checks` runs them): the plan or seats the
timeline puts in force for a period, and the day an immediate change's money starts, against
what an invoice billed. Pure functions from gathered tool outputs to `Candidate`s, each stating
the billing rule it holds the invoice to (`env.engine.rules`).
"""

from __future__ import annotations

from datetime import date
from typing import Any

from agent.audit_evidence import Candidate, Event, Evidence, Json, day, mapping
from agent.audit_printed import TIMEZONE_LABEL
from env.engine.billing import previous_period_start
from env.engine.rules import rule_sentence


def _in_force(
    events: list[Event], kind: str, start: date, initial: Any, keys: tuple[str, ...], through: date
) -> Any:
    """The value plan or seat changes leave in force for a period starting on `start`.

    A change that waits for a period boundary (`next_period`, `at_period_end`) counts once its
    local day is before the start; an immediate one, or one that names no timing, counts from
    its own day up to `through` (the start, or the last day when the invoice records a change
    inside the period).
    """
    value = initial
    for event in _standing(events):
        if event.kind != kind:
            continue
        waits = event.details.get("effective") in ("next_period", "at_period_end")
        # a change that names its own date counts from that date; a scheduled one whose start
        # the customer moved later (`plan_change_start_moved`), from that start
        moved = _moved_start(event, events) if waits and kind == "plan_changed" else None
        named = _named_date(event) or moved
        if named is not None:
            counts = named <= (start if kind == "seats_changed" else through)
        else:
            counts = event.local < start if waits else event.local <= through
        if counts:
            value = next((event.details[k] for k in keys if k in event.details), value)
    return value


def _named_date(event: Event) -> date | None:
    """The date an event's `effective` names (a backdated plan change, a seat change for a
    later period start), or None for "immediately" / a period boundary."""
    effective = event.details.get("effective")
    return day(effective) if isinstance(effective, str) and effective[:1].isdigit() else None


def _standing(events: list[Event]) -> list[Event]:
    """The events without the scheduled plan changes the customer withdrew before they took
    effect (a `plan_change_withdrawn` after them): billing rightly kept the old plan."""
    dropped: set[int] = set()
    for i, event in enumerate(events):
        if event.kind != "plan_change_withdrawn":
            continue
        for j in range(i - 1, -1, -1):
            earlier = events[j]
            if earlier.kind == "plan_changed":
                if earlier.details.get("to_plan_id") == event.details.get("to_plan_id"):
                    dropped.add(j)
                break
    return [e for i, e in enumerate(events) if i not in dropped]


def _created(events: list[Event]) -> Json:
    return next((e.details for e in events if e.kind == "created"), {})


def _before(events: list[Event], start: date) -> list[Event]:
    """Immediate plan changes inside the period before `start`: this invoice prorates them
    (a backdated one, `effective` = a date, from that date; a moved one from its new start:
    `_change_day`)."""
    earlier = previous_period_start(start)
    return [
        e
        for e in events
        if e.kind == "plan_changed"
        and (e.details.get("effective") == "immediately" or _named_date(e) is not None)
        and earlier < _change_day(e, events) < start
    ]


def _moved_start(event: Event, events: list[Event]) -> date | None:
    """The start a later `plan_change_start_moved` event gives this change (the customer asked
    it to start a day or two later), before any other plan change; or None."""
    after = events[events.index(event) + 1 :] if event in events else []
    for later in after:
        if later.kind == "plan_changed":
            return None
        if later.kind == "plan_change_start_moved" and later.details.get(
            "to_plan_id"
        ) == event.details.get("to_plan_id"):
            return day(later.details.get("starts"))
    return None


def _change_day(event: Event, events: list[Event]) -> date:
    """The local day an immediate plan change's proration starts: its own, the earlier date
    agreed with sales that the event names, or the later start the customer asked for."""
    return _named_date(event) or _moved_start(event, events) or event.local


def fetched_periods(ev: Evidence) -> list[tuple[Json, Json, date, date, list[Event]]]:
    """(summary, inputs, start, end, its subscription's events) for each fetched invoice."""
    rows = []
    for summary in ev.fetched():
        start, end = day(summary.get("period_start")), day(summary.get("period_end"))
        if start is None or end is None or start >= end:
            continue
        events = ev.events(str(summary.get("subscription_id")))
        rows.append((summary, ev.inputs(summary["invoice_id"]), start, end, events))
    return rows


def seat_count_mismatch(ev: Evidence) -> list[Candidate]:
    found = []
    for summary, inputs, start, _end, events in fetched_periods(ev):
        plan = mapping(inputs.get("plan"))
        billed = inputs.get("seats")
        if plan.get("pricing") != "per_seat" or not isinstance(billed, int):
            continue
        through = start  # seat changes take effect at a period start
        initial = _created(events).get("seats")
        expected = _in_force(events, "seats_changed", start, initial, ("to_seats", "to"), through)
        if not isinstance(expected, int):
            continue
        expected = max(expected, ev.committed_seats(str(summary.get("subscription_id")), start))
        if expected >= billed:
            continue
        note = (
            f"{summary['invoice_id']} bills {billed} seats, but the timeline's seats_changed "
            f"events leave {expected} seats in force on {start}"
        )
        rule = rule_sentence(
            "seat_count_mismatch", invoice=summary["invoice_id"], start=start, seats=expected
        )
        found.append(
            Candidate(
                "seat_count_mismatch", summary["invoice_id"], note, {"seats": expected}, rule=rule
            )
        )
    return found


def downgrade_not_applied(ev: Evidence) -> list[Candidate]:
    found = []
    for summary, inputs, start, _end, events in fetched_periods(ev):
        plan = mapping(inputs.get("plan"))
        billed = plan.get("plan_id")
        initial = _created(events).get("plan_id")
        expected = _in_force(events, "plan_changed", start, initial, ("to_plan_id",), start)
        if not billed or not expected or billed == expected:
            continue
        note = (
            f"{summary['invoice_id']} bills {billed}, but the plan_changed events put "
            f"{expected} in force for the period from {start}"
        )
        rule = rule_sentence(
            "downgrade_not_applied", invoice=summary["invoice_id"], start=start, plan=expected
        )
        overrides = {"plan_id": expected}
        found.append(
            Candidate("downgrade_not_applied", summary["invoice_id"], note, overrides, rule=rule)
        )
    return found


def proration_error(ev: Evidence) -> list[Candidate]:
    found = []
    for summary, inputs, start, _end, events in fetched_periods(ev):
        recorded = day(inputs.get("plan_change_date"))
        before = _before(events, start)
        if inputs.get("previous_plan") is None or recorded is None or not before:
            continue
        change = max(before, key=lambda e: _change_day(e, events))
        starts = _change_day(change, events)
        if recorded == starts:
            continue
        named = _named_date(change) or _moved_start(change, events)
        crossed = named is None and recorded == change.utc != change.local
        when = f"is {change.local} in {ev.timezone}" if named is None else f"is effective {named}"
        note = (
            f"plan_changed at {change.stamp} UTC {when}, but "
            f"{summary['invoice_id']} prorated from plan_change_date {recorded}"
        )
        invoice_id, day_text = summary["invoice_id"], starts.isoformat()
        rule = (
            rule_sentence(TIMEZONE_LABEL, invoice=invoice_id, what="the plan change",
                          timezone=ev.timezone, day=day_text)
            if crossed
            else rule_sentence("proration_error", invoice=invoice_id, day=day_text)
        )  # fmt: skip
        found.append(
            Candidate(
                TIMEZONE_LABEL if crossed else "proration_error",
                invoice_id,
                note,
                {"plan_change_date": day_text},
                rule=rule,
            )
        )
    return found
