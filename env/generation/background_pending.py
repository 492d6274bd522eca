"""The customer's pending changes: what happened in the current period, after the last
invoice and before the dispute, which no invoice reflects yet (design §1.2). Every class draws
them at the same rates, so the lifecycle faults' timeline signals occur everywhere. Split from
`env.generation.background`."""

from __future__ import annotations

from datetime import date

from env.engine.calendar import days, utc_to_local_date
from env.generation.background import coupon_terms
from env.generation.builder import WorldBuilder
from env.generation.story import CANCEL_REASONS, Story, later_stamp

PENDING_RATE = {"cancel": 0.75, "scheduled": 0.35, "immediate": 0.35, "seats": 0.5, "coupon": 0.45}
PENDING_RATE["withdrawn"] = 0.3
PENDING_SKIP = {  # the fault's own signal: never a pending look-alike in that class
    "cancel": ("timezone_period_boundary",),
    "withdrawn": (),
    "scheduled": ("downgrade_not_applied",),
    "immediate": ("proration_error", "timezone_period_boundary"),
    "seats": (),  # after the last invoice: no invoice bills it, the seat fault's included
    "coupon": ("coupon_not_applied",),
}

# billed_after_cancellation's main story always ends in a cancellation, another class's only
# now and then: its other subscriptions' pending ones at a share that evens the count out
PENDING_SHARE = {("cancel", "billed_after_cancellation"): 0.5}
PENDING_SHARE[("withdrawn", "billed_after_cancellation")] = 0.5


def pending_changes(b: WorldBuilder, story: Story, opened_at: str) -> list[str]:
    """Changes the customer made in the current period, which no invoice reflects yet (the next
    one will): a cancellation or a plan change at period end, an immediate plan change, a seat
    change, a coupon. They give every class the timeline signals of the lifecycle faults."""
    opened_day = utc_to_local_date(opened_at, story.timezone)
    ks = story.billed_periods()
    if not ks or story.sub.status != "active" or story.cancel_effective is not None:
        return []
    start, end = story.period(ks[-1])
    first, last = story.issue_day(ks[-1]) + days(1), min(opened_day, end) - days(1)
    if last < first:
        return []
    features = []
    plans = {p.id: p for p in b.draft.plans} if b.draft else {}
    current = original = story.plan_at(start)
    changed_on: date | None = None  # the day of a pending immediate plan change
    for feature, rate in PENDING_RATE.items():
        rate *= PENDING_SHARE.get((feature, b.label), 1.0)
        if b.rng.random() >= rate or b.label in PENDING_SKIP[feature]:
            continue
        if feature == "withdrawn" and "pending_cancel" in features:
            continue  # one cancellation story per period: asked and confirmed, or withdrawn
        if story.keeps_plan and feature in ("scheduled", "immediate"):
            continue
        day = first + days(b.rng.randint(0, (last - first).days))
        at = b.work_time()
        if feature == "cancel":
            details = {"effective": "at_period_end", "reason": b.pick(CANCEL_REASONS)}
            asked = story.event(day, at, "cancel_requested", details)
            if b.rng.random() < 0.9:  # confirmed soon after; the period runs out after the dispute
                confirmed = later_stamp(asked, b.rng, before=opened_at)
                story.event_at(confirmed, "canceled", {"effective": "at_period_end"})
        elif feature == "withdrawn":  # asked to cancel, then changed their mind
            details = {"effective": "at_period_end", "reason": b.pick(CANCEL_REASONS)}
            asked = story.event(day, at, "cancel_requested", details)
            withdrawn = later_stamp(asked, b.rng, before=opened_at)
            story.event_at(withdrawn, "renewed", {"cancel_request_withdrawn": True})
        elif feature in ("scheduled", "immediate"):
            others = [p for p in plans.values() if p.id != current.id]
            same = [p for p in others if p.per_seat == current.per_seat] or others
            to = b.pick(same)
            effective = "at_period_end" if feature == "scheduled" else "immediately"
            details = {"from_plan_id": current.id, "to_plan_id": to.id, "effective": effective}
            story.event(day, at, "plan_changed", details)
            if feature == "immediate":  # a scheduled change is still ahead: the plan stays
                story.sub.plan_id = to.id
                current, changed_on = to, day
        elif (
            feature == "seats"
            and (current if changed_on is None or day > changed_on else original).per_seat
            and current.per_seat
        ):
            seats = story.sub.seats
            after = max(1, seats + b.pick((-2, -1, 1, 2, 4)))
            details = {"from_seats": seats, "to_seats": after if after != seats else seats + 1}
            details["effective"] = "next_period"
            story.event(day, at, "seats_changed", details)
            # the row shows the seats ordered, the next invoice bills them (as a pending
            # immediate plan change shows its plan): the last invoice still has the old count
            story.sub.seats = details["to_seats"]
        elif feature == "coupon" and story.coupon is None:
            coupon = b.new_coupon(
                duration=b.pick(("once", "repeating", "forever")),
                periods=None,
                valid_from=day - days(b.rng.randint(0, 30)),
                valid_until=day + days(b.rng.randint(60, 400)),
                **coupon_terms(b, story, (10, 15, 20, 25, 30)),
            )
            if coupon.duration == "repeating":
                coupon.duration_periods = b.rng.randint(2, 6)
            story.sub.coupon_code = coupon.code
            story.event(day, at, "coupon_applied", {"coupon_code": coupon.code})
        else:
            continue
        features.append(f"pending_{feature}")
    return features
