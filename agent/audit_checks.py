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

from agent.audit_evidence import (
    Candidate,
    Evidence,
    Json,
    cents,
    day,
    listed,
    mapping,
    rate,
)
from agent.audit_plans import (
    downgrade_not_applied,
    fetched_periods,
    proration_error,
    seat_count_mismatch,
)
from agent.audit_printed import (
    TIMEZONE_LABEL,
    billed_after_cancellation,
    duplicate_payments,
    tax_exempt_charged,
)
from env.engine.billing import previous_period_start
from env.engine.calendar import fx_day
from env.engine.rules import rule_sentence

# Which side of 1 a USD -> currency rate sits on: an analyst's sanity band, not scenario data.
# A rate on the wrong side is most likely inverted; only a recompute confirms it.
FX_BELOW_ONE = {"EUR": True, "GBP": True, "CAD": False, "AUD": False}
FX_OUTLIER = Decimal("0.10")  # relative distance from the customer's median rate worth a look


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


def trial_period_charged(ev: Evidence) -> list[Candidate]:
    found = []
    for summary, inputs, start, end, events in fetched_periods(ev):
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
    for summary, inputs, start, _, _ in fetched_periods(ev):
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
        written = [str(p) for p in counted] or [str(units)]
        text = " + ".join(written) + (f" = {sum(counted)}" if len(written) > 1 else "")
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
