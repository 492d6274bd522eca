"""seat_count_mismatch, billed_after_cancellation, trial_period_charged: lifecycle events
(a seat change, a cancellation, a free trial) that billing did not follow.

Each story records the event on the timeline at a working hour (never near local midnight,
which is the held-out timezone class), bills correctly, then bills too many seats, issues
invoices after the cancellation (`correct=None`), or charges trial days. The evidence is a
recompute with the input the timeline shows, or the total of an invoice that should not exist.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import date, time
from typing import Any

from env.engine.billing import BillingInputs
from env.engine.calendar import days, local_to_utc, utc_to_local_date
from env.engine.money import format_cents
from env.generation.background import decorate_main
from env.generation.builder import EXTENDED_TRIAL_RATE, WorldBuilder
from env.generation.faults.base import FaultOutcome, recompute
from env.generation.faults.common import (
    METERED_RATE,
    issue_unwarranted,
    join_words,
    overcharge,
    overcharge_text,
    periods_for,
    seats_for,
    unwarranted_evidence,
)
from env.generation.faults.plan_changes import day_inside, record_event
from env.generation.lookalikes_life import charge_before_extension, extend_later, zero_covers
from env.generation.lookalikes_values import fault_seat_cut, seat_step
from env.generation.story import CANCEL_REASONS, Story, later_stamp
from env.generation.world import Event, Invoice, Plan

SEAT_VARIANTS = ("reduction_ignored", "rise_billed_early", "reduction_reverted")
SEAT_VARIANTS_DRAWN = (
    "reduction_ignored",
    "rise_billed_early",
    "rise_billed_early",
    "reduction_reverted",
)
# L2/L3 seat scenarios with a correctly billed seat change before the fault: with the pending
# change after the last invoice (`background_pending.pending_changes`), as many seats_changed events
# and billed seat counts as elsewhere, so neither count gives the class away
SEAT_DECOY_RATE = 0.15
CANCEL_VARIANTS = ("next_period_billed", "kept_billing", "cancel_at_date")
TRIAL_VARIANTS = ("trial_days_charged", "trial_shortened", "extended_trial")
# the trial as granted at signup: the plan's standard days, or (as on every main subscription,
# `WorldBuilder.main_trial`) a few more; the fault's later extension comes on top of it
EXTENDED_RATE = EXTENDED_TRIAL_RATE
CANCEL_WITHDRAWN_RATE = 0.05  # the fault's own withdrawn request before its cancellation


def change_seats(b: WorldBuilder, story: Story, k: int, to: int, *, later: bool = False) -> Event:
    """Seats changed inside period k, effective when period k+1 starts, or (`later`) from the
    start of period k+2, a date the event names (as `lookalikes_plans.deferred_seats`)."""
    day = day_inside(b, story, k, head=2, tail=4)
    effective = story.period(k + (2 if later else 1))[0]
    named = effective.isoformat() if later else "next_period"
    details = {"from_seats": story.seats_at(day), "to_seats": to, "effective": named}
    story.seat_changes.append((effective, to))
    return record_event(b, story, day, "seats_changed", details)


def _was(items: list[Invoice]) -> str:
    return "was" if len(items) == 1 else "were"


# seat_count_mismatch -------------------------------------------------------------------------
def seat_count_mismatch(b: WorldBuilder) -> FaultOutcome:
    b.make_customer()
    plans = b.make_catalog()
    plan = b.pick([p for p in plans.values() if p.per_seat])
    # every variant bills a count of the customer's own timeline (design §1.2): the count
    # before a cut (ignored, or reverted after one right invoice), or a rise's count one
    # period before the date its event names
    # a rise as often as a cut: the row shows fewer seats than an invoice about as often as
    # where the background cuts seats (`lookalikes_values.SEAT_CUT_RATE`)
    variant = b.pick(SEAT_VARIANTS_DRAWN)
    change_k, count, tail = _seat_layout(b, variant)
    first_bad = change_k + (2 if variant == "reduction_reverted" else 1)
    story = b.make_story(
        plan, seats=seats_for(b, plan), periods=first_bad + count + tail, trial=b.main_trial(plan)
    )
    if plan.overage_unit_price_cents:
        b.fill_usage(story)
    traps = []
    decoy_k = None
    # a seat change that did take effect on time (`SEAT_DECOY_RATE`)
    if b.difficulty != "L1" and b.rng.random() < SEAT_DECOY_RATE:
        decoy_k = b.rng.randrange(0, change_k)
        change_seats(b, story, decoy_k, seat_step(b, story.seats, cut_ok=True))
        traps.append("correct_seat_change_decoy")
    before = story.seats_at(story.period(change_k)[0])
    if variant == "rise_billed_early":
        after = seat_step(b, before, cut_ok=False)
        billed = after  # the rise billed from the next period, not the date it names
        event = change_seats(b, story, change_k, after, later=True)
    else:
        after = fault_seat_cut(b, before)
        billed = before
        event = change_seats(b, story, change_k, after)
    if b.difficulty == "L3":  # an announced price rise, billed correctly
        effective = story.period(b.rng.randint(1, story.periods - 1))[0]
        b.raise_price(plan, effective, percent=b.rng.randint(4, 12))
        traps.append("price_change_decoy")
    decorate_main(b, story)
    invoices = b.bill(story)
    victims = invoices[first_bad : first_bad + count]
    for invoice in victims:
        b.rebill(invoice, seats=billed)
    focus = list(victims)
    if variant == "reduction_reverted":
        focus.append(invoices[change_k + 1])
    if decoy_k is not None:
        focus.append(invoices[decoy_k + 1])
    overs = [f"{overcharge_text(inv)} on {inv.id}" for inv in victims]
    right = before if variant == "rise_billed_early" else after
    starts = story.period(change_k + (2 if variant == "rise_billed_early" else 1))[0]
    billed_ids = join_words([inv.id for inv in victims])
    summary = (
        f"The seats_changed event at {event.occurred_at} changed {story.sub.id} from {before} "
        f"to {after} seats from {starts.isoformat()}, but {billed_ids} "
        f"{_was(victims)} billed for {billed} seats. Recomputed with {right} seats: overcharged "
        f"{join_words(overs)} ({victims[0].billed.currency}), credited."
    )
    if variant == "reduction_reverted":
        summary += f" Invoice {invoices[change_k + 1].id} had the {after} seats right."
    return FaultOutcome(
        label="seat_count_mismatch",
        story=story,
        focus=focus,
        evidence=[recompute(inv, seats=right) for inv in victims],
        summary=summary,
        slots={"invoice_id": victims[0].id, "seats": str(right), "billed_seats": str(billed)},
        traps=traps,
        variant=variant,
    )


def _seat_layout(b: WorldBuilder, variant: str) -> tuple[int, int, int]:
    """(period of the change, invoices billed wrong, correct invoices after them). A rise
    billed early wrongs the one invoice before the date it names; the next bills it right."""
    early = variant == "rise_billed_early"
    if b.difficulty == "L1":  # one to three invoices in all
        if variant == "reduction_reverted":
            return 0, 1, 0
        count = 1 if early else b.rng.randint(1, 2)
        return 0, count, 1 if early else b.rng.randint(0, 2 - count)
    if early:
        return b.rng.randint(1, 2), 1, 1
    return b.rng.randint(1, 2), b.rng.randint(1, 3), b.rng.randint(0, 1)


# billed_after_cancellation -------------------------------------------------------------------
def billed_after_cancellation(b: WorldBuilder) -> FaultOutcome:
    b.make_customer()
    plans = b.make_catalog()
    # metered plans as often as elsewhere: the last period's usage has no record (as for a second
    # subscription's cancellation, `env.generation.background._cancel`), so nothing more is owed
    metered = b.rng.random() < METERED_RATE
    plan = b.pick([p for p in plans.values() if bool(p.overage_unit_price_cents) == metered])
    variant = b.pick(CANCEL_VARIANTS)
    extra = {"next_period_billed": 1, "cancel_at_date": 1}.get(variant) or b.rng.randint(
        2, 2 if b.difficulty == "L1" else 3
    )
    # as many invoices as another class's main story (its periods, then maybe one billed up
    # to the dispute), and periods enough before the cancellation for the background's seat
    # and plan changes, coupon and withdrawn request (`decorate_main`)
    extra = 1 if b.difficulty == "L1" else extra
    legit = max(2, periods_for(b) - extra)
    story = b.make_story(plan, seats=seats_for(b, plan), periods=legit, trial=b.main_trial(plan))
    if metered:
        b.fill_usage(story)
    traps = []
    withdrawn_k = None
    # with `decorate_main`'s own withdrawn request, as often as on another class's main story
    chance = CANCEL_WITHDRAWN_RATE
    if legit >= 2 and b.rng.random() < chance:
        withdrawn_k = b.rng.randrange(0, legit - 1)
        _withdrawn_cancel(b, story, withdrawn_k)
        traps.append("withdrawn_cancel_decoy")
    day = day_inside(b, story, legit - 1, head=1, tail=7)
    reason = b.pick(CANCEL_REASONS)
    effective = "at_period_end"
    if variant == "cancel_at_date":  # a contract end date inside the next period
        start, end = story.period(legit)
        story.cancel_effective = start + days(b.rng.randint(3, (end - start).days - 3))
        story.periods = legit + 1
        effective = story.cancel_effective.isoformat()
        if metered:  # billed in arrears on the prorated last invoice (as `_cancel_on_date`)
            b.record_usage(story, legit - 1)
    else:
        story.cancel_effective = story.period(legit)[0]
    details = {"effective": effective, "reason": reason}
    asked = record_event(b, story, day, "cancel_requested", details)
    confirmed_on = day + days(b.rng.randint(1, 2))
    canceled = record_event(b, story, confirmed_on, "canceled", {"effective": effective})
    # the background sees the period after the cancellation as any story's last: seat and
    # plan changes, a coupon, may come in the cancellation's period too, as often as in
    # another class's story of as many periods (an invoice after it bills them)
    story.periods = legit + 1
    story.changes_until = story.period(legit - 1)[1] - days(5)  # room to ask, then confirm
    # a downgrade's credit could exceed the prorated last charge of a dated cancellation, and
    # in the cancellation's period it would credit on a closing invoice that cannot exist
    # (`faults/common.closing_inputs`): upgrades only
    decorate_main(b, story, skip=("downgrades",))
    story.periods = legit + 1 if variant == "cancel_at_date" else legit
    day = _cancel_after_changes(b, story, asked, canceled, legit - 1)
    invoices = b.bill(story)
    # the billing system never processed the cancellation (it kept billing): the row mostly
    # still says active; the timeline's canceled event is the authority
    processed = variant != "kept_billing" and b.rng.random() < 0.5
    story.sub.status = "canceled" if processed else "active"
    if variant == "cancel_at_date":
        return _cancel_at_date(b, story, invoices, canceled, withdrawn_k, traps)
    unwanted = [_unwanted_invoice(b, story, k) for k in range(legit, legit + extra)]
    focus = list(unwanted)
    if b.difficulty != "L1":  # the last legitimate invoice, from before the cancellation
        focus.append(invoices[-1])
        traps.append("final_period_decoy")
    if withdrawn_k is not None and invoices[withdrawn_k + 1] not in focus:
        focus.append(invoices[withdrawn_k + 1])
    totals = [f"{format_cents(overcharge(inv))} on {inv.id}" for inv in unwanted]
    closing = [inv for inv in unwanted if inv.correct is not None]
    summary = (
        f"{story.sub.id} was canceled at {canceled.occurred_at}, effective at the end of the "
        f"period ending {story.cancel_effective.isoformat()}, yet "
        f"{join_words([inv.id for inv in unwanted])} {_was(unwanted)} issued for the "
        f"period(s) after it and paid. No invoice should exist there"
        + (
            f" but a closing one for the plan change of {closing[0].billed.plan_change_date}, "
            "whose proration is owed (recomputed to end where its period starts)"
            if closing
            else ""
        )
        + f"; {join_words(totals)} {unwanted[0].billed.currency} "
        + ("is" if len(unwanted) == 1 else "are")
        + " credited."
    )
    evidence = [shown for inv in unwanted for shown in unwarranted_evidence(inv)]
    return FaultOutcome(
        label="billed_after_cancellation",
        story=story,
        focus=focus,
        evidence=evidence,
        summary=summary,
        slots={"invoice_id": unwanted[0].id, "cancel_date": day.isoformat()},
        traps=traps,
        variant=variant,
    )


def _cancel_at_date(
    b: WorldBuilder,
    story: Story,
    invoices: list[Invoice],
    canceled: Event,
    withdrawn_k: int | None,
    traps: list[str],
) -> FaultOutcome:
    """Partial form: the subscription ends on a date inside its last period, which should be
    billed up to that date only; it was billed in full."""
    assert story.cancel_effective is not None
    victim = invoices[-1]
    b.rebill(victim, proration_end=None)
    end = story.cancel_effective.isoformat()
    focus = [victim]
    if withdrawn_k is not None and invoices[withdrawn_k + 1] not in focus:
        focus.append(invoices[withdrawn_k + 1])
    summary = (
        f"{story.sub.id} was canceled at {canceled.occurred_at} effective {end}, inside the "
        f"period of {victim.id} ({victim.billed.period_start.isoformat()} to "
        f"{victim.billed.period_end.isoformat()}), which was billed for the whole period. "
        f"Recomputed with proration_end {end} it totals "
        f"{format_cents(victim.correct_total_cents())}; the {overcharge_text(victim)} "
        f"{victim.billed.currency} difference is credited."
    )
    return FaultOutcome(
        label="billed_after_cancellation",
        story=story,
        focus=focus,
        evidence=[recompute(victim, proration_end=end)],
        summary=summary,
        slots={"invoice_id": victim.id, "cancel_date": end},
        traps=traps,
        variant="cancel_at_date",
    )


def _cancel_after_changes(
    b: WorldBuilder, story: Story, asked: Event, canceled: Event, k: int
) -> date:
    """The cancellation comes after a change the background put in the same period k (a
    seat or plan change, a coupon), where that leaves it confirmed days before the period
    ends (never near the boundary, the held-out timezone class). The background drew its
    changes before `story.changes_until` (five days before the period ends): once confirmed,
    only a reactivation changes a subscription (design §1.1), so no change comes after it.
    Returns the request's local day."""
    end = story.period(k)[1]
    closes = local_to_utc(end - days(4), time(0, 0), story.timezone)
    room = local_to_utc(end - days(5), time(0, 0), story.timezone)  # a day to ask and confirm
    others = [e.occurred_at for e in story.sub.events if e is not asked and e is not canceled]
    latest = max((stamp for stamp in others if stamp < room), default="")
    if latest >= asked.occurred_at:
        asked.occurred_at = later_stamp(latest, b.rng, before=closes)
        canceled.occurred_at = later_stamp(asked.occurred_at, b.rng, before=closes)
        story.sub.events.sort(key=lambda e: e.occurred_at)
    return utc_to_local_date(asked.occurred_at, story.timezone)


def _withdrawn_cancel(b: WorldBuilder, story: Story, k: int) -> None:
    """A cancellation requested and withdrawn inside period k: billing rightly went on."""
    day = day_inside(b, story, k, head=2, tail=8)
    details = {"effective": "at_period_end", "reason": b.pick(CANCEL_REASONS)}
    record_event(b, story, day, "cancel_requested", details)
    later = day + days(b.rng.randint(1, 4))
    record_event(b, story, later, "renewed", {"cancel_request_withdrawn": True})


def _unwanted_invoice(b: WorldBuilder, story: Story, k: int) -> Invoice:
    """An invoice for period k that a correct billing system never issues; paid like any other."""
    return issue_unwarranted(b, story, story.inputs(k, b), b.new_id("INV"), story.time_of_day())


# trial_period_charged ------------------------------------------------------------------------
def start_trial(b: WorldBuilder, story: Story, trial_end: date, details: dict[str, Any]) -> Event:
    """trial_started with the created event, trial_ended on `trial_end` at the same time of
    day (a trial lasts whole days); the first paid invoice is issued then."""
    story.trial_end = trial_end
    story.sub.events.append(Event(story.sub.started_at, "trial_started", details))
    # a trial ends N days after it started, at the same time of day (Stripe's trial_end)
    stamp = story.event(trial_end, story.time_of_day(), "trial_ended", {})
    return next(e for e in story.sub.events if e.occurred_at == stamp and e.type == "trial_ended")


def trial_period_charged(b: WorldBuilder) -> FaultOutcome:
    b.make_customer()
    plans = b.make_catalog()
    # a first paid invoice with no proration at all has no look-alike (a credited retro
    # extension records its first end): L1 only (design §2)
    variant = b.pick(TRIAL_VARIANTS if b.difficulty == "L1" else TRIAL_VARIANTS[1:])
    extended = variant == "extended_trial"
    retro = variant == "trial_shortened" and b.difficulty != "L1"
    story, whole, ended, signup = _trial_story(b, plans, extended, retro)
    if retro:  # extended after it first ended, billing kept the old end (L1: charged early)
        later = extend_later(b, story, same_period=True)
        assert later is not None
        ended = next(e for e in story.sub.events if e.type == "trial_ended" and e is not ended)
    plan, start, trial_end = story.plan, story.anchor, story.trial_end
    assert trial_end is not None
    length = (trial_end - start).days
    decorate_main(b, story)
    invoices = b.bill(story)  # the trial's zero invoice, then the paid periods
    if retro:  # charged from the first end, issued then: same rates
        invoices = charge_before_extension(b, story, invoices, credited=False)
        victims = invoices[:1]
    elif extended:  # billing kept the standard trial: see `_ignored_extension`
        victims = _ignored_extension(b, story, whole, invoices, signup)
        invoices = invoices[1:]
    else:
        victims = invoices[:1]
        b.rebill(victims[0], proration_start=_billed_trial_start(b, variant, plan, start, 0))
    focus = list(victims)
    traps = []
    paid = invoices if extended else invoices[1:]
    if b.difficulty != "L1" and paid:
        focus.append(paid[0])  # the first invoice after the trial, correct
        traps.append("post_trial_invoice_decoy")
    evidence = [recompute(inv, proration_start=trial_end.isoformat()) for inv in victims]
    # L3's near miss, a second subscription whose trial was billed right, is the background
    # second subscription's trial (env.generation.background), drawn at the same rate in every class
    return FaultOutcome(
        label="trial_period_charged",
        story=story,
        focus=focus,
        evidence=evidence,
        summary=_trial_summary(story, ended, victims, trial_end, length, extended),
        slots={
            "invoice_id": victims[0].id,
            "trial_days": str(length),
            "start_date": start.isoformat(),
        },
        traps=traps,
        variant=variant,
    )


def _trial_story(
    b: WorldBuilder, plans: dict[str, Plan], extended: bool, retro: bool
) -> tuple[Story, int, Event, int]:
    """The main subscription and its trial: (story, periods wholly inside it, trial_ended,
    the trial's days as granted before the extension billing missed).

    An extended trial runs past the first period (at L1 sometimes the second) and ends inside
    the next one. Metered plans as often as elsewhere, but not with two periods inside the
    trial: the first one's usage would be billed on the second's invoice, which should not
    exist, muddling "its whole total is owed back".
    """
    # two whole periods inside a trial only at L1: no legitimate extension runs that long
    whole = (1 if b.difficulty != "L1" or b.rng.random() < 0.6 else 2) if extended else 0
    metered = b.rng.random() < METERED_RATE and whole < 2  # as elsewhere (`unbilled_story`)
    options = [p for p in plans.values() if p.trial_days]
    plan = b.pick([p for p in options if bool(p.overage_unit_price_cents) == metered] or options)
    if b.difficulty == "L1":
        periods = whole + 1 + b.rng.randint(0, 1) if extended else periods_for(b)
    else:
        periods = max(periods_for(b), whole + 2)
    story = b.make_story(plan, seats=seats_for(b, plan), periods=periods)
    if plan.overage_unit_price_cents:
        b.fill_usage(story)
    if not extended:  # the standard trial, or one extended inside the first period, as
        # often as main subscriptions elsewhere have one (`WorldBuilder.main_trial`)
        length = b.trial_length(plan, extended=not retro, rate=EXTENDED_RATE)
        details: dict[str, Any] = {"trial_days": length}
        if length != plan.trial_days:
            details.update(standard_trial_days=plan.trial_days, extended=True)
        ended = start_trial(b, story, story.anchor + days(length), details)
        return story, whole, ended, length
    signup = b.trial_length(plan, rate=EXTENDED_RATE)  # then extended past the first period
    trial_end = day_inside(b, story, whole, head=3, tail=5)
    details = {
        "trial_days": (trial_end - story.anchor).days,
        "standard_trial_days": plan.trial_days,
        "extended": True,
    }
    return story, whole, start_trial(b, story, trial_end, details), signup


def _billed_trial_start(
    b: WorldBuilder, variant: str, plan: Plan, start: date, k: int
) -> date | None:
    """Where the faulty bill started charging: the period start, or too early in the trial."""
    if variant == "trial_shortened":
        return start + days(b.rng.randint(1, plan.trial_days - 3))
    return None


def _ignored_extension(
    b: WorldBuilder, story: Story, whole: int, invoices: list[Invoice], signup: int
) -> list[Invoice]:
    """Billing kept the trial as it stood before support extended it past the first period
    (`signup` days: the standard ones or a few more): its zero invoice covers those days (or,
    as for every trial extended after signup, the standard ones: `zero_covers`), period 0 is
    charged from their end (issued then), a second period inside the trial in full, and the
    period the extended trial ends in in full. Every
    recorded value is one a trial that ended then produces (design §1.2); only the timeline's
    trial_ended shows what was due."""
    assert story.trial_invoice is not None
    start = story.period(0)[0]
    kept = start + days(signup)
    covered = zero_covers(b, story, kept)
    zero = replace(story.trial_invoice.billed, period_end=covered, proration_start=covered)
    story.trial_invoice.billed = story.trial_invoice.correct = zero  # 0.00 either way
    victims = []
    for k in range(whole):
        day = kept if k == 0 else story.period(k)[0]
        inputs = replace(story.inputs(k, b), **b.rates_on(day, story.sub.id))
        inputs = replace(inputs, proration_start=kept if k == 0 else None)
        victims.append(_unwarranted_on(b, story, inputs, day, run=k == 0))
    b.rebill(invoices[0], proration_start=None)  # the trial's last days charged as well
    return [*victims, invoices[0]]


def _unwarranted_on(
    b: WorldBuilder, story: Story, inputs: BillingInputs, day: date, *, run: bool = False
) -> Invoice:
    """An invoice no correct system issues, issued on local `day` at the renewal time (`run`:
    by the billing run after a trial's end, as every first charge is, before midnight)."""
    at = local_to_utc(day, story.time_of_day(), story.timezone)
    invoice = Invoice(
        id=b.new_id("INV"),
        customer_id=b.customer.id,
        subscription_id=story.sub.id,
        issued_at=story.run_stamp_on(at) if run else at,
        correct=None,
        billed=inputs,
    )
    return b.file_invoice(invoice)


def _trial_summary(
    story: Story,
    ended: Event,
    victims: list[Invoice],
    trial_end: date,
    length: int,
    extended: bool,
) -> str:
    currency = victims[0].billed.currency
    if extended:  # past the first period; billing kept the trial's earlier end
        inside, last = victims[:-1], victims[-1]
        totals = [f"{format_cents(inv.billed_amounts().total_cents)} on {inv.id}" for inv in inside]
        return (
            f"{story.sub.id} had an extended {length}-day free trial ending at "
            f"{ended.occurred_at} (first charged day {trial_end.isoformat()} local), but "
            f"billing kept its earlier end and charged from "
            f"{inside[0].billed.proration_start}: the period of "
            f"{join_words([inv.id for inv in inside])} lay wholly inside the trial (recomputed "
            f"with proration_start {trial_end.isoformat()} it comes to 0.00; totals "
            f"{join_words(totals)} {currency} credited in full), and {last.id} charged its "
            f"period from its start: recomputed it totals "
            f"{format_cents(last.correct_total_cents())}, the {overcharge_text(last)} "
            f"{currency} difference is credited."
        )
    victim = victims[0]
    charged_from = (victim.billed.proration_start or victim.billed.period_start).isoformat()
    return (
        f"{story.sub.id} started with a free trial; its last trial_ended at "
        f"{ended.occurred_at} makes {trial_end.isoformat()} the first charged day, but invoice "
        f"{victim.id} charged from {charged_from}. Recomputed with proration_start "
        f"{trial_end.isoformat()} it totals {format_cents(victim.correct_total_cents())} instead "
        f"of {format_cents(victim.billed_amounts().total_cents)} {currency}; the "
        f"{overcharge_text(victim)} {currency} difference is credited."
    )
