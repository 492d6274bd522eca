"""The auditor's battery of checks: pure functions from gathered tool outputs to candidates.

Each check reads only what the nine tools returned (`agent.audit_evidence.Evidence`) and
proposes `Candidate` overcharges: an amount a tool already printed, or the `recompute_invoice`
overrides that would show it. `agent.auditor` confirms them and reports.
Tests: `pytest tests/agent/test_auditor.py`.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from datetime import date
from decimal import Decimal
from typing import Any

from agent.audit_evidence import (
    Candidate,
    Event,
    Evidence,
    Json,
    cents,
    day,
    listed,
    mapping,
    money,
    rate,
)
from env.engine.billing import previous_period_start
from env.engine.calendar import fx_day
from env.engine.money import format_cents
from env.engine.rules import rule_sentence

TIMEZONE_LABEL = "timezone_period_boundary"
# Which side of 1 a USD -> currency rate sits on: an analyst's sanity band, not scenario data.
# A rate on the wrong side is most likely inverted; only a recompute confirms it.
FX_BELOW_ONE = {"EUR": True, "GBP": True, "CAD": False, "AUD": False}
FX_OUTLIER = Decimal("0.10")  # relative distance from the customer's median rate worth a look


# checks that need no recompute: the tools print the overcharge ----------------------------------


def duplicate_payments(ev: Evidence) -> list[Candidate]:
    """Succeeded payments beyond the total, less refunds and earlier credit notes."""
    found = []
    for summary in ev.invoices:
        invoice_id = summary["invoice_id"]
        mine = [p for p in ev.payments if p.get("invoice_id") == invoice_id]
        paid = [p for p in mine if p.get("status") == "succeeded"]
        refunded = sum(cents(p.get("amount")) or 0 for p in mine if p.get("status") == "refunded")
        total = cents(summary.get("total"))
        amounts = [cents(p.get("amount")) or 0 for p in paid]
        if len(paid) < 2 or total is None:
            continue
        over = sum(amounts) - refunded - total - ev.credited(invoice_id) - ev.kept(mine)
        if over <= 0:
            continue
        shown = ", ".join(f"{p.get('payment_id')} {p.get('amount')}" for p in paid)
        currency = str(summary.get("currency", ""))
        note = (
            f"{invoice_id} (total {money(total, currency)}) has {len(paid)} succeeded payments "
            f"({shown} {currency})"
        )
        if refunded:
            note += f", {money(refunded, currency)} refunded"
            rows = [p for p in mine if p.get("status") == "refunded"]
            extra = [a for a in amounts if a - refunded == over]
            if extra and len(rows) == 1 and not ev.credited(invoice_id):
                # what is still owed is printed nowhere: one step from two printed amounts (G10)
                calc = f"{format_cents(extra[0])} − {format_cents(refunded)}"
                note += f": {calc} = {money(over, currency)} still owed"
        if ev.credited(invoice_id):
            note += f", {money(ev.credited(invoice_id), currency)} already credited"
        rule = rule_sentence(
            "duplicate_payment", invoice=invoice_id, total=format_cents(total), currency=currency,
            net=format_cents(sum(amounts) - refunded),
        )  # fmt: skip
        found.append(Candidate("duplicate_payment", invoice_id, note, cents=over, rule=rule))
    return found


def cancellation(events: list[Event]) -> Event | None:
    """The cancellation request that stood: not withdrawn by a later `renewed` event, nor
    reversed after its confirmation by a `reactivated` one (before it took effect)."""
    pending: Event | None = None
    stood: Event | None = None
    for event in events:
        if event.kind == "cancel_requested":
            pending = pending or event
        elif event.kind in ("renewed", "reactivated"):
            pending = stood = None
        elif event.kind == "canceled":
            stood, pending = stood or pending or event, None
    return stood or pending


def _period_end_after(summaries: list[Json], on: date) -> str | None:
    """End of the billing period containing `on`: a cancellation takes effect there."""
    ends = sorted(str(s.get("period_end")) for s in summaries if str(s.get("period_end")) > str(on))
    return ends[0] if ends else None


def billed_after_cancellation(ev: Evidence) -> list[Candidate]:
    found = []
    for sub_id in ev.timelines:
        summaries = ev.of_subscription(sub_id)
        cancel = cancellation(ev.events(sub_id))
        if cancel is None:
            continue
        ends_on = day(cancel.details.get("effective"))  # a cancellation on a given date
        if ends_on is not None:
            found += _cancel_on_date(ev, sub_id, cancel, ends_on)
            continue
        effective = _period_end_after(summaries, cancel.local)
        if effective is None:
            continue
        # dated by its UTC day the request would fall in a later period: the timezone trap
        crossed = _period_end_after(summaries, cancel.utc) != effective
        label = TIMEZONE_LABEL if crossed else "billed_after_cancellation"
        for summary in summaries:
            total = cents(summary.get("total"))
            if str(summary.get("period_start")) < effective or not total or total <= 0:
                continue
            if _closing(ev, summary):
                continue
            note = (
                f"{cancel.kind} at {cancel.stamp} UTC is {cancel.local} in {ev.timezone}, so "
                f"{sub_id} ended on {effective}; {summary['invoice_id']} bills "
                f"{summary.get('period_start')} to {summary.get('period_end')}, total "
                f"{money(total, str(summary.get('currency', '')))}"
            )
            credited = ev.credited(summary["invoice_id"])
            change = _earlier_change(ev, summary)
            rule = _cancel_rule(ev, label, summary["invoice_id"], effective)
            if change is None:
                found.append(
                    Candidate(label, summary["invoice_id"], note, cents=total - credited, rule=rule)
                )
                continue
            note += f"; the proration of the plan change of {change} is owed on a closing invoice"
            closing = {"proration_end": str(summary["period_start"])}
            found.append(
                Candidate(label, summary["invoice_id"], note, closing, credited=credited, rule=rule)
            )
    return found


def _cancel_rule(ev: Evidence, label: str, invoice_id: str, end: str) -> str:
    """The rule a bill after a cancellation breaks: nothing is billed from where it took
    effect (dated by the customer's local day, for the held-out class)."""
    if label == TIMEZONE_LABEL:
        return rule_sentence(
            label, invoice=invoice_id, what="the cancellation", timezone=ev.timezone, day=end
        )
    return rule_sentence("billed_after_cancellation", invoice=invoice_id, end=end)


def _earlier_change(ev: Evidence, summary: Json) -> str | None:
    """The day of a plan change made before the period this invoice bills, whose proration it
    carries (a closing invoice's only charge, `recompute_invoice` with `proration_end` at the
    period's start); None where it carries none."""
    inputs = ev.inputs(summary["invoice_id"])
    change, start = inputs.get("plan_change_date"), summary.get("period_start")
    if not inputs.get("previous_plan") or not isinstance(change, str) or start is None:
        return None
    return change if change < str(start) else None


def _closing(ev: Evidence, summary: Json) -> bool:
    """A closing invoice: its charge stops where its period starts (`proration_end`), so it
    bills only the proration of a change made before the cancellation took effect: owed."""
    inputs = ev.inputs(summary["invoice_id"])
    start = summary.get("period_start")
    return bool(inputs) and start is not None and inputs.get("proration_end") == start


def _cancel_on_date(ev: Evidence, sub_id: str, cancel: Event, ends_on: date) -> list[Candidate]:
    """A subscription that ends on a date: the period containing it is charged up to that day
    only (recompute with proration_end), any later one not at all (its total)."""
    found = []
    for summary in ev.of_subscription(sub_id):
        start, end = day(summary.get("period_start")), day(summary.get("period_end"))
        total = cents(summary.get("total"))
        if start is None or end is None or not total or end <= ends_on:
            continue
        note = f"{cancel.kind} at {cancel.stamp} UTC ended {sub_id} on {ends_on}"
        label, invoice_id = "billed_after_cancellation", summary["invoice_id"]
        rule = _cancel_rule(ev, label, invoice_id, ends_on.isoformat())
        if start < ends_on:
            overrides = {"proration_end": ends_on.isoformat()}
            note += f"; {invoice_id} bills {start} to {end}"
            found.append(Candidate(label, invoice_id, note, overrides, rule=rule))
        else:
            note += f"; {invoice_id} bills a later period, total {summary.get('total')}"
            left = total - ev.credited(invoice_id)
            found.append(Candidate(label, invoice_id, note, cents=left, rule=rule))
    return found


def tax_exempt_charged(ev: Evidence) -> list[Candidate]:
    certificate = ev.customer.get("exemption_certificate")
    if not isinstance(certificate, dict):
        return []
    valid_from = str(certificate.get("valid_from", ""))
    valid_until = str(certificate.get("valid_until", ""))
    found = []
    for summary in ev.fetched():
        detail = ev.details[summary["invoice_id"]]
        issued = ev.issue_day(summary)
        tax = mapping(detail.get("tax"))
        amount = cents(tax.get("amount"))
        if tax.get("exempt") or not amount or amount <= 0:
            continue
        if not valid_from <= issued < valid_until:
            continue
        taxed = ev.jurisdiction_on(issued, str(summary.get("subscription_id", "")))
        where = certificate.get("jurisdiction") or taxed
        if where != taxed:  # issued for another jurisdiction: tax is due
            continue
        if ev.withheld(str(summary.get("subscription_id")), issued):  # the timeline says taxed
            continue
        note = (
            f"certificate {certificate.get('certificate_id')} (valid {valid_from} until "
            f"{valid_until}) covers {summary['invoice_id']} (issued {issued}), yet tax "
            f"{money(amount, str(detail.get('currency', '')))} was charged"
        )
        left = amount - ev.credited(summary["invoice_id"])
        rule = rule_sentence(
            "tax_exempt_charged", invoice=summary["invoice_id"], day=issued,
            certificate=certificate.get("certificate_id"), valid_from=valid_from,
            valid_until=valid_until, jurisdiction=where,
        )  # fmt: skip
        found.append(
            Candidate("tax_exempt_charged", summary["invoice_id"], note, cents=left, rule=rule)
        )
    return found


# checks confirmed by recompute_invoice ----------------------------------------------------------


def wrong_tax_rate(ev: Evidence) -> list[Candidate]:
    found = []
    for summary in ev.fetched():
        inputs = ev.inputs(summary["invoice_id"])
        start = ev.issue_day(summary)
        # the previous jurisdiction before a recorded move; a service site's while it applies
        sub = str(summary.get("subscription_id", ""))
        own = ev.jurisdiction_on(start, sub)
        right = ev.rate_on(start, sub)
        if inputs.get("tax_exempt") or right is None:
            continue
        billed = str(inputs.get("tax_rate"))
        if rate(billed) == rate(right) and inputs.get("tax_jurisdiction") == own:
            continue
        note = (
            f"{summary['invoice_id']} was taxed at {billed} ({inputs.get('tax_jurisdiction')}); "
            f"get_tax_rate gives {right} for {own} on its issue day {start}"
        )
        rule = rule_sentence(
            "wrong_tax_rate", invoice=summary["invoice_id"], jurisdiction=own, day=start, rate=right
        )
        found.append(
            Candidate("wrong_tax_rate", summary["invoice_id"], note, {"tax_rate": right}, rule=rule)
        )
    return found


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


def _periods(ev: Evidence) -> list[tuple[Json, Json, date, date, list[Event]]]:
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
    for summary, inputs, start, _end, events in _periods(ev):
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
    for summary, inputs, start, _end, events in _periods(ev):
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
    for summary, inputs, start, _end, events in _periods(ev):
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


def trial_period_charged(ev: Evidence) -> list[Candidate]:
    found = []
    for summary, inputs, start, end, events in _periods(ev):
        ended = [e for e in events if e.kind == "trial_ended"]
        if not ended or start >= ended[-1].local:
            continue
        trial_end = ended[-1]
        charged_from = day(inputs.get("proration_start")) or start
        if charged_from >= trial_end.local:
            continue
        crossed = charged_from == trial_end.utc != trial_end.local
        label = TIMEZONE_LABEL if crossed else "trial_period_charged"
        note = (
            f"trial_ended at {trial_end.stamp} UTC makes {trial_end.local} ({ev.timezone}) the "
            f"first charged day, but {summary['invoice_id']} charged from {charged_from}"
        )
        total = cents(summary.get("total"))
        credited = ev.credited(summary["invoice_id"])  # a trial extended after it was charged
        day_text, invoice_id = trial_end.local.isoformat(), summary["invoice_id"]
        rule = (
            rule_sentence(label, invoice=invoice_id, what="the trial's end",
                          timezone=ev.timezone, day=day_text)
            if crossed
            else rule_sentence(label, invoice=invoice_id, day=day_text)
        )  # fmt: skip
        if trial_end.local >= end and total:  # the whole period lay inside the trial
            note += f"; its whole period is inside the trial, total {summary.get('total')}"
            found.append(Candidate(label, invoice_id, note, cents=total - credited, rule=rule))
            continue
        overrides = {"proration_start": day_text}
        found.append(Candidate(label, invoice_id, note, overrides, credited=credited, rule=rule))
    return found


def _coupon_periods(ev: Evidence, sub_id: str, coupon: Json) -> list[Json]:
    """Summaries of the periods the subscription's coupon covers, by its window and duration."""
    code = coupon.get("code")
    events = ev.events(sub_id)
    applied = [
        e.local
        for e in events
        if e.kind == "coupon_applied" and e.details.get("coupon_code") == code
    ]
    if not applied:
        return []
    removed = [e.local for e in events if e.kind == "coupon_removed" and e.local >= applied[0]]
    valid_from, valid_until = str(coupon.get("valid_from")), str(coupon.get("valid_until"))
    eligible = []
    for summary in ev.of_subscription(sub_id):
        start = str(summary.get("period_start"))
        if start < applied[0].isoformat() or not valid_from <= start <= valid_until:
            continue
        if removed and start >= removed[0].isoformat():
            continue
        eligible.append(summary)
    # periods, not invoices: a trial's zero invoice shares its period start with the first
    # paid one, and a coupon counts that period once
    starts = list(dict.fromkeys(str(s.get("period_start")) for s in eligible))
    duration = coupon.get("duration")
    if duration == "once":
        starts = starts[:1]
    elif duration == "repeating":
        periods = coupon.get("duration_periods")
        starts = starts[: periods if isinstance(periods, int) else 0]
    return [s for s in eligible if str(s.get("period_start")) in starts]


def coupon_not_applied(ev: Evidence) -> list[Candidate]:
    found = []
    for sub_id, timeline in ev.timelines.items():
        coupon = timeline.get("coupon")
        if not isinstance(coupon, dict) or not coupon.get("code"):
            continue
        for summary in _coupon_periods(ev, sub_id, coupon):
            inputs = ev.inputs(summary["invoice_id"])
            if not inputs or inputs.get("coupon") is not None:
                continue
            note = (
                f"coupon {coupon['code']} ({coupon.get('duration')}, valid "
                f"{coupon.get('valid_from')} to {coupon.get('valid_until')}) covers the period "
                f"from {summary.get('period_start')}, but {summary['invoice_id']} has no coupon"
            )
            overrides = {"coupon_code": coupon["code"]}
            rule = rule_sentence(
                "coupon_not_applied", invoice=summary["invoice_id"],
                start=summary.get("period_start"), coupon=coupon["code"],
            )  # fmt: skip
            found.append(
                Candidate("coupon_not_applied", summary["invoice_id"], note, overrides, rule=rule)
            )
    return found


def usage_overage_miscalculated(ev: Evidence) -> list[Candidate]:
    found = []
    for summary, inputs, start, _, _ in _periods(ev):
        units = inputs.get("usage_units")
        plan = mapping(inputs.get("plan"))
        timeline = ev.timelines.get(str(summary.get("subscription_id")), {})
        if not isinstance(units, int):
            continue
        before = previous_period_start(start).isoformat()
        before = max(before, str(inputs.get("usage_start") or before))  # none from the trial
        parts = [  # usage is billed in arrears: the records of the period ending at start,
            u.get("units")  # two parts when the plan changed inside it
            for u in listed(timeline.get("usage"))
            if isinstance(u, dict)
            and before <= str(u.get("period_start")) < start.isoformat()
            and str(u.get("period_end")) <= start.isoformat()
        ]
        fixes = [  # a usage correction record for the same period adds its units
            c.get("units")
            for c in listed(timeline.get("usage_corrections"))
            if isinstance(c, dict) and str(c.get("period_end")) == start.isoformat()
        ]
        counted = [p for p in [*parts, *fixes] if isinstance(p, int)]
        records = [sum(counted)] if counted and len(counted) == len(parts) + len(fixes) else []
        terms = mapping(timeline.get("plan"))
        included = terms.get("included_units")
        invoice_id = summary["invoice_id"]
        if records and isinstance(records[0], int) and units > records[0]:
            shown = " and ".join(str(p) for p in counted)  # each part as the timeline prints it
            note = f"{invoice_id} bills {units} usage units; the usage records show {shown}"
            overrides: Json = {"usage_units": records[0]}
        elif (
            terms.get("plan_id") == plan.get("plan_id")
            and isinstance(included, int)
            and isinstance(plan.get("included_units"), int)
            and plan["included_units"] < included
        ):
            note = (
                f"{invoice_id} counts {plan['included_units']} included units; plan "
                f"{terms.get('plan_id')} includes {included}"
            )
            overrides = {"included_units": included}
        elif plan.get("included_units") == 0 and plan.get("plan_id"):
            # the plan has changed since: its catalog terms are what recompute restores
            note = f"{invoice_id} counts no included units for plan {plan.get('plan_id')}"
            overrides = {"plan_id": plan["plan_id"]}
        else:
            continue
        label = "usage_overage_miscalculated"
        parts = [str(p) for p in counted] or [str(units)]
        text = " + ".join(parts) + (f" = {sum(counted)}" if len(parts) > 1 else "")
        rule = rule_sentence(label, invoice=invoice_id, start=start.isoformat(), units=text)
        found.append(Candidate(label, invoice_id, note, overrides, rule=rule))
    return found


def _fx_rows(ev: Evidence) -> list[tuple[Json, Json, Decimal]]:
    rows = []
    for summary in ev.fetched():
        inputs = ev.inputs(summary["invoice_id"])
        value = rate(inputs.get("fx_rate"))
        if inputs.get("currency") != "USD" and value is not None and value > 0:
            rows.append((summary, inputs, value))
    return rows


def _fx_suspect(
    inputs: Json, issue_day: str, issued: str, value: Decimal, median: Decimal, weekend: bool
) -> str | None:
    """Why a conversion looks wrong; `issued` is the day whose rate is right (`Evidence.fx_date`:
    the Friday's for a weekend, a rate lock's date inside its window). A weekend's Friday is a
    date no read tool prints, so it is named, not cited."""
    if inputs.get("fx_rate_date") != issued:
        right = "the last business day before it" if weekend else issued
        return f"the rate of {inputs.get('fx_rate_date')}, not of {right} (issued {issue_day})"
    below = FX_BELOW_ONE.get(str(inputs.get("currency")))
    if below is not None and (value < 1) != below:
        return "a rate on the wrong side of 1 for this currency (inverted?)"
    if abs(value - median) / median > FX_OUTLIER:
        return "far from the customer's other rates"
    return None


def currency_conversion_error(ev: Evidence, *, sweep: bool = False) -> list[Candidate]:
    """Suspicious conversions; with `sweep`, every other converted invoice too (spare budget)."""
    rows = _fx_rows(ev)
    if not rows:
        return []
    median = Decimal(statistics.median(value for _, _, value in rows))
    found = []
    for summary, inputs, value in rows:
        issue_day = ev.issue_day(summary)
        issued = ev.fx_date(issue_day, str(summary.get("subscription_id", "")))
        # a weekend issue day converts at the Friday's rate, a date no read tool prints (a rate
        # lock's date is printed by get_customer)
        weekend = issued == fx_day(date.fromisoformat(issue_day)).isoformat() != issue_day
        why = _fx_suspect(inputs, issue_day, issued, value, median, weekend)
        if (why is None) != sweep:
            continue
        note = f"{summary['invoice_id']} converted at {inputs.get('fx_rate')}"
        note += f", {why}" if why else f"; checked against the rate of its issue day {issue_day}"
        overrides = {"fx_rate_date": issued}
        shown = f"the rate of the last business day before {issue_day}" if weekend else None
        form = "weekend" if weekend else "issue_day" if issued == issue_day else "rate_lock"
        rule = rule_sentence(
            "currency_conversion_error", form, invoice=summary["invoice_id"],
            day=issued if form == "rate_lock" else issue_day,
        )  # fmt: skip
        found.append(
            Candidate(
                "currency_conversion_error", summary["invoice_id"], note, overrides, shown=shown,
                rule=rule,
            )
        )  # fmt: skip
    return found


# The battery, in the order candidates are confirmed when the budget is short.
PRINTED_CHECKS: tuple[Callable[[Evidence], list[Candidate]], ...] = (
    duplicate_payments,
    billed_after_cancellation,
    tax_exempt_charged,
)
RECOMPUTE_CHECKS: tuple[Callable[[Evidence], list[Candidate]], ...] = (
    trial_period_charged,
    proration_error,
    downgrade_not_applied,
    seat_count_mismatch,
    coupon_not_applied,
    usage_overage_miscalculated,
    wrong_tax_rate,
    currency_conversion_error,
)


def run_checks(ev: Evidence) -> list[Candidate]:
    return [c for check in (*PRINTED_CHECKS, *RECOMPUTE_CHECKS) for c in check(ev)]
