"""Background features: structure every class shares, billed correctly (design §1.2).

A fault needs some structure (a certificate, a cancellation, a trial, a coupon, a second charge);
if only that class had it, one row would give the label away. So every scenario, whatever its
label, draws the same features at the same rates: the exemption certificate with the customer
(`WorldBuilder.make_customer`), and here the second subscription from L2 on (a trial, a coupon,
seat changes, an immediate or scheduled plan change, a cancellation, a withdrawn one) and the
main subscription's share; the payments' share is `env.generation.background_payments`, the current
period's `env.generation.background_pending`. None of them changes the truth: the story machinery
bills them exactly like any other period.
"""

from __future__ import annotations

import unicodedata
from datetime import date, time, timedelta

from env.engine.calendar import days, local_to_utc, utc_to_local_date
from env.generation import (
    lookalikes_exempt,
    lookalikes_fx,
    lookalikes_seats,
    lookalikes_supply,
    lookalikes_tax,
)
from env.generation.builder import WorldBuilder, data
from env.generation.changes import immediate_swap, late_days
from env.generation.lookalikes_life import retro_trial, reversed_cancel, scheduled_first
from env.generation.lookalikes_plans import (
    WITHDRAWN_PLAN_RATE,
    WITHDRAWN_SECOND_RATE,
    backdated_effective,
    deferred_seats,
    log_change,
    moved_scheduled,
    moved_start,
    withdrawn_plan_change,
)
from env.generation.lookalikes_values import high_fx_day, seat_cut_ok, seat_cuts, seat_step
from env.generation.story import CANCEL_REASONS, Story, later_stamp
from env.generation.world import Plan

FEATURE_RATE = {
    "trial": 0.6,
    "extended_trial": 0.3,
    "coupon": 0.35,
    "seats": 0.4,
    "upgrade_now": 0.3,
    "scheduled_downgrade": 0.3,
    "cancel": 0.3,
    "withdrawn_cancel": 0.3,
    "ordered_by": 0.3,
    "refunded_second_charge": 0.5,
    "split_payment": 0.9,
    "goodwill_credit": 0.15,
    "memo": 0.2,
    "notes": 0.25,
}


def decorate_second(b: WorldBuilder, plans: dict[str, Plan]) -> tuple[Story, list[str]]:
    """The second subscription of L2/L3, with features drawn independently of the label."""
    metered = [p for p in plans.values() if p.overage_unit_price_cents]
    plain = [p for p in plans.values() if not p.overage_unit_price_cents]
    plan = b.pick(metered if b.rng.random() < 0.4 else plain)
    trial = plan.trial_days > 0 and draw(b, "trial")
    story = b.make_story(
        plan,
        seats=b.rng.randint(2, 12) if plan.per_seat else 1,
        periods=b.rng.randint(3, 5),
        trial=trial,
    )
    features = ["trial"] if trial else []
    if plan.overage_unit_price_cents:
        b.fill_usage(story)
    if trial and draw(b, "extended_trial"):
        _extend_trial(b, story)
        features.append("extended_trial")
    elif trial and retro_trial(b, story):
        features.append("retro_trial")
    first_paid = 1 if trial else 0
    if draw(b, "ordered_by"):
        story.sub.events[0].details["ordered_by"] = ordered_by(b)
        features.append("ordered_by")
    if draw(b, "coupon"):  # maybe a fixed amount off, then no change shrinks a subtotal
        _coupon(b, story, first_paid, fixed_ok=True)
        features.append("coupon")
    fixed = story.coupon is not None and story.coupon.amount_off_cents is not None
    if plan.per_seat and draw(b, "seats"):
        ks = sorted(b.rng.sample(range(story.periods - 1), b.rng.randint(1, 2)))
        for k in ks:
            _seat_change(b, story, k, last=k == ks[-1])
        features.append("seats")
    swap = None if fixed else _swap_plan(plan, plans)
    if swap is not None and draw(b, "upgrade_now"):
        count = 2 if story.periods - 1 - first_paid >= 2 and b.rng.random() < 0.5 else 1
        ks = sorted(b.rng.sample(range(first_paid, story.periods - 1), count))
        old, new = plan, swap
        for k in ks:  # a change, and maybe the change back later
            start, end = story.period(k)
            # never inside a trial that runs into the period (world v6: the trial rule)
            days_ok = late_days(start, end, old, new, margin=2)
            after = [d for d in days_ok if d >= story.after_trial(d)]
            if not after:
                continue
            day = b.pick(after)
            scheduled_first(b, story, day, new.id)
            _plan_change(b, story, day, new, "immediately")
            old, new = new, old
        features.append("upgrade_now")
    elif swap is not None and draw(b, "scheduled_downgrade"):
        if withdrawn_plan_change(b, story, plans, WITHDRAWN_SECOND_RATE):
            features.append("withdrawn_plan_change")
            return _second_end(b, story, features, first_paid)
        k = b.rng.randint(first_paid, story.periods - 2)
        start, end = story.period(k)
        story.plan_changes.append((end, swap))
        day = start + days(b.rng.randint(2, (end - start).days - 3))
        asked = _plan_change(b, story, day, swap, "at_period_end")
        moved_scheduled(b, story, k, swap, asked)  # its start moved a period or two later
        features.append("scheduled_downgrade")
    if fixed:  # a prorated last period could fall below the amount off
        return story, features
    return _second_end(b, story, features, first_paid)


def _second_end(
    b: WorldBuilder, story: Story, features: list[str], first_paid: int
) -> tuple[Story, list[str]]:
    """The second subscription's cancellation story: withdrawn, done, or none."""
    if draw(b, "withdrawn_cancel"):
        k = b.rng.randint(0, story.periods - 2)
        if not (k >= first_paid and reversed_cancel(b, story, k)):
            _withdrawn_cancel(b, story, k)
        features.append("withdrawn_cancel")
    elif draw(b, "cancel") and _cancel(b, story):
        features.append("cancel")
    return story, features


def ordered_by(b: WorldBuilder) -> str:
    """Who at the customer's company ordered a subscription: an admin account or a colleague.
    One pool of shapes for every class (design §1.2: no fingerprints)."""
    local, domain = b.customer.email.split("@")
    if b.rng.random() < 0.5:
        return f"{local}.admin@{domain}"
    pool = data("name_pools.json")[b.name_pool]
    name = unicodedata.normalize("NFKD", b.pick(pool["first"])).encode("ascii", "ignore").decode()
    return f"{name.lower()}@{domain}"


MAIN_RATE = {"coupon": 0.45, "seats": 0.85, "swap": 1.0, "withdrawn": 0.3, "ended": 0.45}
MAIN_RATE.update(coupon_removed=0.7, price_rise=0.3, withdrawn_plan=WITHDRAWN_PLAN_RATE)
# a story that ends in the fault's cancellation has no running period for a pending coupon
# (`pending_changes`): its coupon comes before, as often as another class's story has one
MAIN_RATE_FOR = {("coupon", "billed_after_cancellation"): 0.6}
MAIN_SKIP = {  # the fault's own structure, or one its arithmetic cannot share
    "coupon": ("coupon_not_applied",),
    "seats": ("seat_count_mismatch",),
    # faults with plan changes of their own (two classes get upgrades only: `decorate_main`)
    "swap": ("proration_error", "downgrade_not_applied"),
    "withdrawn": (),
    "withdrawn_plan": ("downgrade_not_applied",),  # its own scheduled change
    "ended": ("billed_after_cancellation",),
    "coupon_removed": (),
    "price_rise": (),
}


def decorate_main(b: WorldBuilder, story: Story, skip: tuple[str, ...] = ()) -> None:
    """The main subscription's share of the background, added before it is billed: a coupon,
    seat rises, an immediate plan change, a withdrawn cancellation, and an end at the close of
    its last period. At L1 the main subscription is the only one, so without these the fault's
    own structure would be the only structure in the scenario. A kind the story already has
    (from its fault or look-alike) is not added again."""
    assert b.draft is not None
    lookalikes_tax.certificate_gap(b, story)  # before anything is billed
    high_fx_day(b, story)  # a rate at the top of the usual band, as the fx fault's jump
    lookalikes_fx.rate_lock(b, story)  # a contract rate several days old, as the fx fault's
    first_paid = 1 if story.trial_end is not None else 0
    if story.coupon is None and first_paid < story.periods and _main_draw(b, "coupon", skip):
        _coupon(b, story, first_paid, fixed_ok=True)
        ended = _coupon_end(story)
        if ended is not None and _main_draw(b, "coupon_removed", skip):
            assert story.coupon is not None
            reason = "duration_ended" if ended[1] else "window_closed"
            details = {"coupon_code": story.coupon.code, "reason": reason}
            story.event(ended[0], b.work_time(), "coupon_removed", details)
    one_price = len(story.plan.prices) == 1 and story.periods >= 2
    if one_price and _main_draw(b, "price_rise", skip):  # announced 30 days ahead
        k = b.rng.randint(1, story.periods - 1)
        b.raise_price(story.plan, story.period(k)[0], percent=b.rng.randint(4, 12))
    seated = [k for k in range(story.periods - 1) if _per_seat_through(story, k)]
    seats_ok = story.plan.per_seat and not story.seat_changes and seated
    if seats_ok and _main_draw(b, "seats", skip):
        count = b.rng.randint(1, min(2, len(seated)))
        ks = sorted(b.rng.sample(seated, count))
        for k in ks:
            cut_ok = seat_cut_ok(story) and "seat_cuts" not in skip  # a bill that must rise
            _seat_change(b, story, k, last=k == ks[-1], cut_ok=cut_ok)
    # usage in arrears is billed on the plan in force when its invoice's period starts
    # (env/README.md), so a swap between metered plans is billed like any other; a look-alike
    # whose evidence is the usage arithmetic passes skip=("swap",)
    # a fixed amount off stays below every subtotal it covers: no credit-shrunk one after it
    fixed = story.coupon is not None and story.coupon.amount_off_cents is not None
    swap_ok = not story.plan_changes and not (fixed and b.label != "coupon_not_applied")
    if swap_ok and story.periods >= 2 and _main_draw(b, "swap", skip):
        plans = {p.id.removeprefix("PLN-"): p for p in b.draft.plans}
        # a downgrade's credit could exceed a dated cancellation's prorated charge or a seat cut's
        upgrades_only = "downgrades" in skip or b.label == "seat_count_mismatch"
        upgrades_only = upgrades_only or seat_cuts(story)
        back_ok, last_only = "swap_back" not in skip, "swap_last" in skip
        immediate_swap(
            b, story, plans, upgrades_only=upgrades_only, back_ok=back_ok, last_only=last_only
        )
    if story.periods >= 2 and _main_draw(b, "withdrawn_plan", skip):
        plans = {p.id: p for p in b.draft.plans}
        withdrawn_plan_change(b, story, plans, 1.0)
    kinds = {e.type for e in story.sub.events}
    room = _periods_before_cancel(story)
    if room and "renewed" not in kinds and _main_draw(b, "withdrawn", skip):
        k = b.rng.randrange(room)
        if not (k >= first_paid and k + 1 < room and reversed_cancel(b, story, k)):
            _withdrawn_cancel(b, story, k)
    # any plan: a metered one's last period has no usage record (nothing more is owed), as
    # for the second subscription's and billed_after_cancellation's cancellations
    ends = story.cancel_effective is None
    ends = ends and not (fixed and b.label != "coupon_not_applied")
    if ends and "canceled" not in kinds and _main_draw(b, "ended", skip):
        _cancel(b, story)
    lookalikes_supply.supply_site(b, story)  # taxed at an old site after a move, billed right
    lookalikes_seats.seat_commitment(b, story)  # a seat minimum, as the seat fault's run
    lookalikes_exempt.exemption_withheld(b, story)  # a taxed run, as the exemption fault's


def _per_seat_through(story: Story, k: int) -> bool:
    """Seats can change in period k only while the plan is per-seat there and after it."""
    start, end = story.period(k)
    return all(story.plan_at(day).per_seat for day in (start, end - days(1), end))


def _coupon_end(story: Story) -> tuple[date, bool] | None:
    """The start of the first billed period the coupon stopped covering after covering one,
    and whether its duration (not its window) ran out."""
    coupon = story.coupon
    assert coupon is not None
    covered = False
    for k in range(story.periods):
        if story.coupon_applies(k):
            covered = True
        elif covered:
            start = story.period(k)[0]
            return start, start.isoformat() <= coupon.valid_until
    return None


def _periods_before_cancel(story: Story) -> int:
    """How many periods before the last can hold a withdrawn request: all of them, or only
    those over before the story's own cancellation was asked for (a withdrawal logged after it
    would read as withdrawing that one)."""
    room = story.periods - 1
    asked = [
        e.occurred_at[:10] for e in story.sub.events if e.type in ("cancel_requested", "canceled")
    ]
    if asked:  # UTC dates: a day's margin either way for the local one
        first = date.fromisoformat(min(asked)) - days(1)
        room = min(room, sum(story.period(k)[1] <= first for k in range(room)))
    return room


def _main_draw(b: WorldBuilder, feature: str, skip: tuple[str, ...]) -> bool:
    if feature in skip or b.label in MAIN_SKIP[feature]:
        return False
    return b.rng.random() < MAIN_RATE_FOR.get((feature, b.label), MAIN_RATE[feature])


def _withdrawn_cancel(b: WorldBuilder, story: Story, k: int) -> None:
    """A cancellation requested inside period k and withdrawn days later: billing goes on."""
    start, end = story.period(k)
    day = start + days(b.rng.randint(2, (end - start).days - 6))
    details = {"effective": "at_period_end", "reason": b.pick(CANCEL_REASONS)}
    story.event(day, b.work_time(), "cancel_requested", details)
    later = day + days(b.rng.randint(1, 3))
    story.event(later, b.work_time(), "renewed", {"cancel_request_withdrawn": True})


def draw(b: WorldBuilder, feature: str) -> bool:
    """One background feature, at its `FEATURE_RATE`."""
    return b.rng.random() < FEATURE_RATE[feature]


def _extend_trial(b: WorldBuilder, story: Story) -> None:
    """A trial extended by support: it ends later, logged with the standard length."""
    assert story.trial_end is not None
    start = story.period(0)[0]
    story.trial_end += days(b.rng.randint(5, 40))  # as long as a fault's extended trial
    for event in story.sub.events:
        if event.type == "trial_started":
            event.details.update(
                trial_days=(story.trial_end - start).days,
                standard_trial_days=story.plan.trial_days,
                extended=True,
            )
        elif event.type == "trial_ended":
            event.occurred_at = local_to_utc(story.trial_end, story.time_of_day(), story.timezone)
    story.sub.events.sort(key=lambda e: e.occurred_at)


def _coupon(b: WorldBuilder, story: Story, first_paid: int, *, fixed_ok: bool = False) -> None:
    """A coupon entered in a paid period; with `fixed_ok`, maybe a fixed amount off, but only
    where no covered subtotal is shrunk (a plan change's credit, a prorated first or last
    period): capped at such a subtotal it would swallow the fault's overcharge."""
    kind = b.pick(("once", "repeating", "forever"))
    k = b.rng.randint(first_paid, max(first_paid, story.periods - 2))
    fixed_ok = fixed_ok and not story.plan_changes and story.cancel_effective is None
    fixed_ok = fixed_ok and (k > first_paid or story.trial_end is None)
    start, end = story.period(k)
    # from the first paid period on: entered a few days before that period's invoice
    applied = start + days(b.rng.randint(1, max(1, (story.change_limit(end) - start).days - 2)))
    if k == first_paid:
        applied = start - days(b.rng.randint(1, 5)) if k else start
    coupon = b.new_coupon(
        duration=kind,
        periods=b.rng.randint(1, 3) if kind == "repeating" else None,
        valid_from=applied - days(b.rng.randint(0, 40)),
        valid_until=applied + days(b.rng.randint(90, 420)),
        **(coupon_terms(b, story, PERCENTS) if fixed_ok else {"percent": b.pick(PERCENTS)}),
    )
    story.coupon, story.coupon_from = coupon, applied
    story.sub.coupon_code = coupon.code
    details = {"coupon_code": coupon.code}
    if k == 0:  # entered at signup: logged with the subscription, before its first invoice
        story.event_at(story.sub.started_at, "coupon_applied", details)
    else:
        story.event(applied, b.work_time(), "coupon_applied", details)


PERCENTS = (10, 15, 20, 25)
AMOUNTS_OFF = (500, 1000, 1500, 2000, 2500, 5000)  # USD cents, converted at the fx rate
AMOUNT_OFF_RATE = 0.25  # of the coupons whose plan leaves room for a fixed amount


def amount_off(b: WorldBuilder, story: Story) -> int | None:
    """A fixed amount off (USD cents), drawn as often in every class as in coupon_not_applied
    (a fixed-amount coupon is no label), or None for a percentage. It stays at most half the
    plan's first charge, so no invoice bills 0.00 from it (the engine caps it at the subtotal)."""
    quantity = min([story.seats] + [n for _, n in story.seat_changes])
    quantity = quantity if story.plan.per_seat else 1
    amounts = [a for a in AMOUNTS_OFF if 2 * a <= story.plan.prices[0][0] * quantity]
    return b.pick(amounts) if amounts and b.rng.random() < AMOUNT_OFF_RATE else None


def coupon_terms(b: WorldBuilder, story: Story, percents: tuple[int, ...]) -> dict[str, int | None]:
    """`new_coupon`'s terms: a fixed amount off (`amount_off`) or a percentage from `percents`."""
    off = amount_off(b, story)
    return {"percent": None if off else b.pick(percents), "amount_off_cents": off}


def _seat_change(
    b: WorldBuilder, story: Story, k: int, *, last: bool = False, cut_ok: bool = False
) -> None:
    """A seat change asked in period k, from the next period start; the `last` one of a story
    may name a later period start instead (`lookalikes_plans.deferred_seats`). A rise, or with
    `cut_ok` now and then a cut (`lookalikes_values.seat_step`)."""
    start, end = story.period(k)
    day = start + days(b.rng.randint(1, max(1, (story.change_limit(end) - start).days - 2)))
    before = story.seats_at(day)
    # a cut only where no credit can follow (`seat_cut_ok`): a later downgrade's proration
    # credit on a smaller count could exceed its charge (the world has no negative invoices)
    after = seat_step(b, before, cut_ok=cut_ok)
    effective = end
    if last and k + 2 < story.periods and story.plan_at(story.period(k + 2)[0]).per_seat:
        effective = deferred_seats(b, story, k)
    story.seat_changes.append((effective, after))
    details: dict[str, object] = {"from_seats": before, "to_seats": after}
    details["effective"] = "next_period" if effective == end else effective.isoformat()
    if b.rng.random() < 0.4:
        details["changed_by"] = b.customer.email
    story.event(day, b.work_time(), "seats_changed", details)


def _swap_plan(plan: Plan, plans: dict[str, Plan]) -> Plan | None:
    """The plan of the same kind to change to (Team <-> Business, Growth <-> Scale)."""
    pairs = {"PLN-TEAM": "BUSINESS", "PLN-BUSINESS": "TEAM", "PLN-GROWTH": "SCALE"}
    pairs["PLN-SCALE"] = "GROWTH"
    key = pairs.get(plan.id)
    return plans.get(key) if key else None


def _plan_change(b: WorldBuilder, story: Story, day: date, to: Plan, effective: str) -> str:
    """Logs a plan change; returns the moment it was logged."""
    logged, moved = day, None
    if effective == "immediately":  # now and then agreed with sales and backdated, or moved
        day, logged, effective = backdated_effective(b, story, day)
        moved = moved_start(b, story, day) if effective == "immediately" else None
        story.plan_changes.append((moved or day, to))
    before = story.plan_at((moved or day) - timedelta(days=1))
    details = {"from_plan_id": before.id, "to_plan_id": to.id, "effective": effective}
    if effective == "at_period_end":
        return story.event(logged, b.work_time(), "plan_changed", details)
    return log_change(b, story, logged, details, moved or day)


def _cancel(b: WorldBuilder, story: Story) -> bool:
    """Canceled at the end of its last period: no invoice after it, status canceled. Or, as
    often as the fault's partial form, asked in the period before to end on a date inside the
    last one, which is billed up to that date (`proration_end`). False: no day was left after
    the last period's changes to ask it, and the story does not end."""
    k = story.periods - 1
    if b.rng.random() < DATED_CANCEL_RATE and _room_for_dated_cancel(story, k):
        _cancel_on_date(b, story, k)
        return True
    start, end = story.period(k)
    # asked early in the last period: the customer writes about its bill within days of the
    # last invoice (`generator.DISPUTE_DAYS`), after every recorded moment
    latest = min(end - days(3), start + days(LAST_ASK_DAYS))
    day = start + days(b.rng.randint(1, (latest - start).days))
    # asked after the period's other changes: once confirmed, nothing else changes it (design
    # §1.1, one state); with no day left for that, the story does not end
    day = max(day, _after_changes(story, start, end))
    if day > latest:
        return False
    reason = b.pick(CANCEL_REASONS)
    asked = story.event(
        day, b.work_time(), "cancel_requested", {"effective": "at_period_end", "reason": reason}
    )
    closes = local_to_utc(latest + days(2), time(0, 0), story.timezone)
    confirmed = later_stamp(asked, b.rng, before=closes)
    story.event_at(confirmed, "canceled", {"effective": "at_period_end"})
    story.cancel_effective = end
    story.sub.status = "canceled"
    return True


LAST_ASK_DAYS = 8  # an end at the close of the last period is asked in its first days
DATED_CANCEL_RATE = 0.35  # cancellations that end on a date rather than at a period end


def _after_changes(story: Story, start: date, end: date) -> date:
    """The day after the latest change logged in [start, end) (local days), or `start`: a
    cancellation is asked after the period's other changes (design §1.1, one state)."""
    logged = [
        utc_to_local_date(e.occurred_at, story.timezone)
        for e in story.sub.events
        if e.type not in ("created", "trial_started", "trial_ended")
    ]
    inside = [d for d in logged if start <= d < end]
    return max(inside) + days(1) if inside else start


def _room_for_dated_cancel(story: Story, k: int) -> bool:
    """Periods k-1 and k are paid, free of plan changes (a downgrade's credit could exceed the
    prorated charge) and of other cancellation requests (one would read as withdrawing it)."""
    if k < 1 or story.period(k - 1)[0] < (story.trial_end or story.anchor):
        return False
    first = story.period(k - 1)[0]
    if any(d >= first for d, _ in story.plan_changes):
        return False
    since = (first - days(1)).isoformat()
    if _after_changes(story, first, story.period(k - 1)[1]) > story.period(k - 1)[1] - days(8):
        return False  # no day left to ask after the period's last change
    last_start, last_end = story.period(k)
    if _after_changes(story, last_start, last_end) > last_start:
        return False  # a change logged in the period it ends in would follow the confirmation
    return not any(
        e.type in ("cancel_requested", "renewed", "plan_changed") and e.occurred_at[:10] >= since
        for e in story.sub.events
    )


def _cancel_on_date(b: WorldBuilder, story: Story, k: int) -> None:
    """Asked inside period k-1 to end on a date inside period k: invoice k is prorated."""
    before_start, before_end = story.period(k - 1)
    day = before_start + days(b.rng.randint(1, (before_end - before_start).days - 8))
    day = max(day, _after_changes(story, before_start, before_end))
    start, end = story.period(k)
    ends = start + days(b.rng.randint(3, (end - start).days - 3))
    details = {"effective": ends.isoformat(), "reason": b.pick(CANCEL_REASONS)}
    asked = story.event(day, b.work_time(), "cancel_requested", details)
    closes = local_to_utc(before_end, time(0, 0), story.timezone)
    confirmed = later_stamp(asked, b.rng, before=closes)
    story.event_at(confirmed, "canceled", {"effective": ends.isoformat()})
    story.cancel_effective = ends
    story.sub.status = "canceled"
