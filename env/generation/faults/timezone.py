"""timezone_period_boundary (held-out): an event near local midnight was dated by its UTC date.

West of UTC a late-evening event has tomorrow's UTC date, east of UTC a just-after-midnight
event has yesterday's; the billing system took that UTC date as the local one. Variants, each
in the direction that overcharges: `downgrade` (west) and `upgrade` (east) move a proration
boundary by a day, `cancellation` (west) bills a period the customer had already left,
`trial_end` (east) charges one trial day. Only the heldout and eval splits use this builder.
"""

from __future__ import annotations

from datetime import date, time

from env.engine.billing import compute_invoice
from env.engine.calendar import add_months, days, local_to_utc, utc_date
from env.engine.money import format_cents
from env.generation.background import decorate_main
from env.generation.builder import WorldBuilder
from env.generation.changes import late_days, unused_share
from env.generation.faults.base import FaultOutcome, recompute
from env.generation.faults.common import (
    issue_unwarranted,
    overcharge,
    periods_for,
    seats_for,
    unwarranted_evidence,
)
from env.generation.story import CANCEL_REASONS, Story, later_stamp
from env.generation.world import Invoice, Plan

LATE = tuple(time(h, m) for h, m in ((21, 50), (22, 25), (22, 45), (23, 5), (23, 20), (23, 30)))
LATE += (time(23, 40), time(23, 48), time(23, 55))
EARLY = tuple(time(0, m) for m in (2, 5, 10, 15, 20, 25, 30, 40, 50))
PAIRS = (("TEAM", "BUSINESS"), ("GROWTH", "SCALE"))  # (cheaper, dearer), same pricing kind


def is_west(timezone: str) -> bool:
    """West of UTC all year (the Americas); everything else here is east of UTC or on it."""
    return local_to_utc(date(2025, 1, 15), time(12, 0), timezone) > "2025-01-15T12:00:00Z"


def crosses(day: date, at: time, timezone: str, west: bool) -> bool:
    """The UTC date is the next day (west) or the previous day (east); DST decides for London."""
    return utc_date(local_to_utc(day, at, timezone)) == day + days(1 if west else -1)


def draw_anchor(b: WorldBuilder) -> date:
    return add_months(date(2025, 1, b.rng.randint(1, 28)), b.rng.randrange(0, 10))


def span(first: date, last: date) -> list[date]:
    return [first + days(i) for i in range((last - first).days + 1)]


def midnight_event(b: WorldBuilder, candidates: list[date], west: bool) -> tuple[date, time] | None:
    """A local (day, time) near midnight whose UTC date differs in the given direction."""
    timezone = b.customer.timezone
    for _ in range(8):
        day, at = b.pick(candidates), b.pick(LATE if west else EARLY)
        if crosses(day, at, timezone, west):
            return day, at
    return None


def daytime_event(b: WorldBuilder, candidates: list[date]) -> tuple[date, time]:
    """A local (day, time) at any hour: outside this class an event's hour changes nothing,
    because billing always reads the local date (design §1.2)."""
    return b.pick(candidates), b.work_time()


def plan_pair(b: WorldBuilder, plans: dict[str, Plan], *, upgrade: bool) -> tuple[Plan, Plan]:
    """(from, to) of one pricing kind; the dearer plan costs more per seat and per period."""
    cheap, dear = (plans[key] for key in b.pick(PAIRS))
    return (cheap, dear) if upgrade else (dear, cheap)


def fill_usage_by_plan(b: WorldBuilder, story: Story) -> None:
    """Usage records of every finished period whose plan at its end meters (billed in arrears
    on the next invoice)."""
    for k in range(story.periods - 1):
        if story.plan_at(story.period(k)[1] - days(1)).overage_unit_price_cents:
            b.record_usage(story, k)


def seat_change(story: Story, day: date, at: time, seats: int, **extra: str) -> None:
    """A seat change requested on a local day; it takes effect when the next period starts."""
    before = story.seats_at(day)
    k = next(k for k in range(story.periods + 1) if story.period(k)[0] > day)
    story.seat_changes.append((story.period(k)[0], seats))
    details = {"from_seats": before, "to_seats": seats, "effective": "next_period", **extra}
    story.event(day, at, "seats_changed", details)


def legit_decoy(b: WorldBuilder, story: Story, raise_at: list[int], avoid: int) -> str | None:
    """One correctly billed change an agent may mistake for the fault: a seat change or an
    announced price rise on the plan the timeline shows (the plan billed last)."""
    per_seat = story.plan.per_seat
    if per_seat and (not raise_at or b.rng.random() < 0.5):
        kd = b.pick([k for k in range(1, story.periods) if k - 1 != avoid] or [1])
        start, end = story.period(kd - 1)
        day, at = daytime_event(b, span(start + days(1), end - days(1)))
        seat_change(story, day, at, max(1, story.seats_at(day) + b.pick((-2, -1, 1, 2, 3, 5))))
        return "seat_change_decoy"
    if raise_at:
        kd = b.pick(raise_at)
        plan = story.plan_at(story.period(story.periods - 1)[0])
        b.raise_price(plan, story.period(kd)[0], percent=b.pick((5, 8, 10, 12, 15)))
        return "price_change_decoy"
    return None


def harmless_midnight_event(
    b: WorldBuilder, story: Story, periods: list[int], west: bool
) -> str | None:
    """Near miss: an event whose UTC and local dates differ but sit in the same period, so the
    shift changes nothing (seats and coupons take effect at the next period start)."""
    found = None
    for k in b.rng.sample(periods, len(periods)):  # London in winter has no crossing: move on
        start, end = story.period(k)
        found = midnight_event(b, span(start + days(2), end - days(3)), west)
        if found is not None:
            break
    if found is None:
        return None
    day, at = found
    if story.plan.per_seat:
        seat_change(story, day, at, story.seats_at(day) + b.pick((1, 2, 4)))
        return "midnight_seat_change_same_period"
    coupon = b.new_coupon(
        duration="repeating",
        periods=b.pick((1, 2, 3)),
        valid_from=day - days(b.rng.randint(0, 20)),
        valid_until=day + days(365),
        percent=b.pick((10, 15, 20)),
    )
    story.coupon, story.coupon_from = coupon, day
    story.sub.coupon_code = coupon.code
    story.event(day, at, "coupon_applied", {"coupon_code": coupon.code})
    return "midnight_coupon_same_period"


def timezone_period_boundary(b: WorldBuilder) -> FaultOutcome:
    b.make_customer()
    west = is_west(b.customer.timezone)
    variant = b.pick(("downgrade", "cancellation") if west else ("upgrade", "trial_end"))
    if variant == "cancellation":
        return _cancellation(b)
    return _trial_end(b) if variant == "trial_end" else _plan_change(b, west)


def _overcharge(invoice: Invoice) -> int:
    assert invoice.correct is not None
    return invoice.billed_amounts().total_cents - compute_invoice(invoice.correct).total_cents


def _plan_change(b: WorldBuilder, west: bool) -> FaultOutcome:
    """An immediate plan change near midnight; the proration split moved to the UTC date."""
    tz = b.customer.timezone
    old, new = plan_pair(b, b.make_catalog(), upgrade=not west)
    periods = periods_for(b)
    periods = max(periods, 3 if b.difficulty == "L3" else 2)
    low, high = {"L1": (0, periods - 2), "L2": (0, periods - 2), "L3": (1, periods - 2)}[
        b.difficulty
    ]
    k = b.rng.randint(low, high)
    anchor, (day, at) = _midnight_in_period(b, k, west, unused_share(old, new))
    reverse = b.difficulty == "L3"  # near miss: the opposite change earlier, prorated correctly
    first = new if reverse else old
    trial = b.main_trial(first, extended=False)  # as in every class (design §1.2)
    if k == 0 and day < anchor + days(trial + 2):  # the change must come after the trial
        trial = 0
    story = _story_from(b, first, seats_for(b, old), periods, anchor, trial)
    traps: list[str] = []
    if reverse:
        j = b.rng.randrange(k)
        j_start, j_end = story.period(j)
        options = late_days(j_start, j_end, new, old)
        after = [d for d in options if d >= story.after_trial(j_start + days(2))]
        j_day, j_at = daytime_event(b, after or options)
        story.plan_changes.append((j_day, old))
        story.event(j_day, j_at, "plan_changed", _change(new, old))
        traps.append("correct_proration_decoy")
    story.plan_changes.append((day, new))
    stamp = story.event(day, at, "plan_changed", _change(old, new))
    if b.difficulty == "L2":
        traps.append(legit_decoy(b, story, list(range(k + 1, periods)), k) or "")
    if b.difficulty == "L3":
        others = [x for x in range(periods) if x != k]
        traps.append(harmless_midnight_event(b, story, others, west) or "")
    if old.overage_unit_price_cents:  # within both allowances: the day's price decides
        story.usage_level = 1
    if old.included_units and new.included_units:
        story.usage_level = int(
            min(old.included_units, new.included_units) * b.rng.uniform(0.3, 0.5)
        )
    fill_usage_by_plan(b, story)
    decorate_main(b, story)
    invoices = b.bill(story)
    story.sub.plan_id = new.id  # bill() takes the plan at the last period's start
    victim = invoices[k + 1]  # the change in period k is prorated on the next invoice
    billed_day = utc_date(stamp)
    b.rebill(victim, plan_change_date=billed_day)
    over = _overcharge(victim)
    assert over > 0, f"a one-day shift must overcharge, got {over}"
    evidence = [recompute(victim, plan_change_date=day.isoformat())]
    focus = [victim]
    if reverse:
        focus.append(invoices[j + 1])
        evidence.append(recompute(invoices[j + 1], plan_change_date=j_day.isoformat()))
    direction = "downgrade" if west else "upgrade"
    cur = victim.billed.currency
    summary = (
        f"The {direction} from {old.id} to {new.id} was logged at {stamp} (UTC), which is "
        f"{day.isoformat()} in the customer's timezone {tz}; invoice {victim.id} prorated it "
        f"from the UTC date {billed_day.isoformat()} instead. Recomputed with plan_change_date "
        f"{day.isoformat()}, the difference is {format_cents(over)} {cur}, which is refunded."
    )
    return FaultOutcome(
        label="timezone_period_boundary",
        story=story,
        focus=focus,
        evidence=evidence,
        summary=summary,
        slots={"old_plan": old.name, "new_plan": new.name, "invoice_id": victim.id},
        traps=[t for t in traps if t],
        variant=direction,
    )


def _midnight_in_period(
    b: WorldBuilder, k: int, west: bool, unused: float = 1.0
) -> tuple[date, tuple[date, time]]:
    """An anchor and a crossing event inside period k, two days clear of both its ends so
    the local and UTC dates both fall strictly inside the period, and late enough that at most
    `unused` of the period is left after it."""
    for _ in range(100):  # only London and Dublin ever retry: they are on UTC in winter
        anchor = draw_anchor(b)
        start, end = add_months(anchor, k), add_months(anchor, k + 1)
        first = max(start + days(2), end - days(int((end - start).days * unused)))
        found = midnight_event(b, span(min(first, end - days(3)), end - days(2)), west)
        if found is not None:
            return anchor, found
    raise AssertionError(f"no event near midnight crosses the UTC date in {b.customer.timezone}")


def _change(old: Plan, new: Plan) -> dict[str, str]:
    return {"from_plan_id": old.id, "to_plan_id": new.id, "effective": "immediately"}


def _cancellation(b: WorldBuilder) -> FaultOutcome:
    """A cancellation at ~23:30 on a period's last day, dated to the next period by UTC."""
    plans = b.make_catalog()
    plan = b.pick([p for p in plans.values() if not p.overage_unit_price_cents])
    kept = b.rng.randint(1, 2) if b.difficulty == "L1" else periods_for(b)
    k = kept - 1  # the last period the customer really had
    found = None
    while found is None:  # west of UTC a late event always crosses: one pass
        anchor = draw_anchor(b)
        found = midnight_event(b, [add_months(anchor, kept) - days(1)], west=True)
    day, at = found
    trial = b.main_trial(plan)  # as in every class (design §1.2); it ends inside period 0
    story = _story_from(b, plan, seats_for(b, plan), kept + 1, anchor, trial)
    traps: list[str] = []
    if b.difficulty == "L2":
        traps.append(legit_decoy(b, story, list(range(1, kept + 1)), k) or "")
    if b.difficulty == "L3":
        traps.append(harmless_midnight_event(b, story, list(range(kept)), True) or "")
    leaves = story.period(k)[1]
    story.cancel_effective = leaves
    reason = b.pick(CANCEL_REASONS)
    stamp = story.event(
        day, at, "cancel_requested", {"effective": "at_period_end", "reason": reason}
    )
    # confirmed within minutes, still on the customer's last local day
    closes = local_to_utc(day + days(1), time(0, 0), story.timezone)
    story.event_at(
        later_stamp(stamp, b.rng, before=closes), "canceled", {"effective": "at_period_end"}
    )
    story.sub.status = "canceled"
    # upgrades only: a downgrade in the cancellation's period would credit on a closing invoice
    # that cannot exist (`faults/common.closing_inputs`), as billed_after_cancellation's
    decorate_main(b, story, skip=("downgrades",))
    invoices = b.bill(story)
    extra = _bill_left_period(b, story, kept)
    total = format_cents(overcharge(extra))
    cur = extra.billed.currency
    summary = (
        f"The cancel_requested event at {stamp} (UTC) is {day.isoformat()} in the customer's "
        f"timezone {b.customer.timezone}, the last day of the period ending {leaves.isoformat()}, "
        f"so the subscription ended on {leaves.isoformat()}. Dated by its UTC date "
        f"{utc_date(stamp).isoformat()} the request fell into the next period, and invoice "
        f"{extra.id} for {extra.billed.period_start.isoformat()} to "
        f"{extra.billed.period_end.isoformat()} was issued; "
        + (
            f"only the closing proration of the plan change of {extra.billed.plan_change_date} "
            f"is owed (recomputed to end where its period starts), so {total} {cur} is refunded."
            if extra.correct is not None
            else f"its total {total} {cur} is refunded."
        )
    )
    return FaultOutcome(
        label="timezone_period_boundary",
        story=story,
        focus=[extra, invoices[k]],
        evidence=unwarranted_evidence(extra),
        summary=summary,
        slots={"invoice_id": extra.id, "cancel_day": day.strftime("%B %d").replace(" 0", " ")},
        traps=[t for t in traps if t],
        variant="cancellation",
    )


def _story_from(
    b: WorldBuilder, plan: Plan, seats: int, periods: int, anchor: date, trial: int
) -> Story:
    """The main story with its periods from `anchor`, after a free trial of `trial` days
    starting there (0: none); the trial's first day is the anchor, as for every trial."""
    if not trial:
        return b.make_story(plan, seats=seats, periods=periods, anchor=anchor)
    start = anchor + days(trial)
    return b.make_story(plan, seats=seats, periods=periods, anchor=start, trial=trial)


def _bill_left_period(b: WorldBuilder, story: Story, k: int) -> Invoice:
    """The invoice the billing system issued for a period after the cancellation took effect."""
    inputs = story.inputs(k, b)
    return issue_unwarranted(b, story, inputs, b.new_id("INV"), story.time_of_day())


def _trial_end(b: WorldBuilder) -> FaultOutcome:
    """The trial ended at local midnight; billing charged from the UTC date, a day early."""
    plans = b.make_catalog()
    plan = b.pick([p for p in plans.values() if p.trial_days and not p.overage_unit_price_cents])
    tz = b.customer.timezone
    early = b.pick(EARLY)
    anchor = draw_anchor(b)  # the trial's end; periods start trial_days earlier, on day <= 28
    while (anchor - days(plan.trial_days)).day > 28 or not crosses(anchor, early, tz, False):
        anchor = draw_anchor(b)
    periods = periods_for(b)
    story = b.make_story(plan, seats=seats_for(b, plan), periods=periods, anchor=anchor, trial=True)
    # signed up just after local midnight: the trial ends N days later at that time of day
    start = anchor - days(plan.trial_days)
    story.sub.started_at = local_to_utc(start, early, tz)
    for event in story.sub.events:
        if event.type in ("created", "trial_started"):
            event.occurred_at = story.sub.started_at
    ended = next(e for e in story.sub.events if e.type == "trial_ended")
    ended.occurred_at = local_to_utc(anchor, early, tz)
    story.sub.events.sort(key=lambda e: e.occurred_at)
    traps: list[str] = []
    if b.difficulty == "L2":
        traps.append(legit_decoy(b, story, list(range(1, periods)), 0) or "")
    if b.difficulty == "L3":
        traps.append(harmless_midnight_event(b, story, list(range(periods)), False) or "")
    decorate_main(b, story)
    invoices = b.bill(story)
    victim = invoices[0]
    trial_end = anchor
    billed_from = trial_end - days(1)
    b.rebill(victim, proration_start=billed_from)
    over = _overcharge(victim)
    assert over > 0, f"a trial day must cost something, got {over}"
    stamp = ended.occurred_at
    cur = victim.billed.currency
    summary = (
        f"The trial_ended event at {stamp} (UTC) is {trial_end.isoformat()} "
        f"{early.strftime('%H:%M')} in the "
        f"customer's timezone {tz}, but invoice {victim.id} started charging on the UTC date "
        f"{billed_from.isoformat()}. Recomputed with proration_start {trial_end.isoformat()}, the "
        f"difference is {format_cents(over)} {cur}, one trial day, which is refunded."
    )
    return FaultOutcome(
        label="timezone_period_boundary",
        story=story,
        focus=[victim],
        evidence=[recompute(victim, proration_start=trial_end.isoformat())],
        summary=summary,
        slots={"invoice_id": victim.id, "trial_days": str(plan.trial_days)},
        traps=[t for t in traps if t],
        variant="trial_end",
    )
