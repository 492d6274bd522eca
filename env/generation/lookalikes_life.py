"""Lifecycle look-alikes (issue 19): legitimate histories that fire the cancellation and trial
checks, each billed correctly by the one engine and told apart by a second record.

- A cancellation confirmed, then reversed (`reactivated`, world v5: after a confirmation only a
  reactivation changes a subscription) before it took effect: billing rightly goes on, so
  invoices start at or after the canceled event's end (and for a dated one the period holding
  that date is billed in full). Separating record: the `reactivated` event after `canceled`.
- A trial extended retroactively after its first paid invoice: a second `trial_ended` event
  later than the first, the invoice charged from the original end (correct when issued), and a
  credit note that already returned exactly the extended days (or the whole invoice when the
  extension covers its period). Separating record: the credit note on that invoice.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import date, time

from env.engine.billing import compute_invoice
from env.engine.calendar import days, local_to_utc
from env.generation.builder import WorldBuilder
from env.generation.changes import earlier_credit
from env.generation.story import CANCEL_REASONS, Story, later_stamp
from env.generation.world import Invoice

REVERSED_SHARE = 0.5  # of the withdrawn cancellations: confirmed first, then reversed
DATED_SHARE = 0.35  # of the reversed ones: asked to end on a date (as `_cancel_on_date`)
RETRO_TRIAL_RATE = 0.5  # of the second subscription's standard trials


def reversed_cancel(b: WorldBuilder, story: Story, k: int) -> bool:
    """Instead of a plain withdrawn request in period k: a cancellation asked, confirmed and
    reversed before it took effect. At period end: all inside period k (there must be a later
    period). On a date: asked late in period k, ending on a date inside period k+1, confirmed
    and reversed before period k+1 starts (its invoice is billed in full). False: not placed."""
    if b.rng.random() >= REVERSED_SHARE or k + 1 >= story.periods:
        return False
    start, end = story.period(k)
    length = (end - start).days
    dated = b.rng.random() < DATED_SHARE
    if dated:
        ask = start + days(b.rng.randint(max(2, length - 12), length - 4))
        nxt_start, nxt_end = story.period(k + 1)
        ends = nxt_start + days(b.rng.randint(3, (nxt_end - nxt_start).days - 3))
        effective = ends.isoformat()
    else:
        ask = start + days(b.rng.randint(2, length - 6))
        effective = "at_period_end"
    details = {"effective": effective, "reason": b.pick(CANCEL_REASONS)}
    at = b.work_time()
    back = ask + days(b.rng.randint(1, min(3, (end - ask).days - 1)))
    if _changed_between(story, ask, back):  # confirmed, nothing but a reactivation may change it
        return False
    asked = local_to_utc(ask, at, story.timezone)
    withdrawn = local_to_utc(back, b.work_time(), story.timezone)
    if withdrawn <= asked:
        withdrawn = local_to_utc(back, time(23, 59), story.timezone)
    confirmed = later_stamp(asked, b.rng, before=withdrawn)
    back_at = later_stamp(confirmed, b.rng, before=withdrawn)
    # once confirmed, only a reactivation changes the subscription (design §1.1, one state): no
    # event already drawn (a scheduled change withdrawn, say) may fall while it stands canceled
    if any(confirmed <= e.occurred_at <= back_at for e in story.sub.events):
        return False
    story.event_at(asked, "cancel_requested", details)
    story.event_at(confirmed, "canceled", {"effective": effective})
    story.event_at(back_at, "reactivated", {"cancellation_reversed": True})
    return True


CHANGES = ("plan_changed", "plan_change_start_moved", "seats_changed", "coupon_applied")


def _changed_between(story: Story, first: date, last: date) -> bool:
    """Whether a change is logged on a local day from `first` to `last` (inclusive)."""
    since = local_to_utc(first, time(0, 0), story.timezone)
    until = local_to_utc(last + days(1), time(0, 0), story.timezone)
    return any(e.type in CHANGES and since <= e.occurred_at < until for e in story.sub.events)


def retro_trial(b: WorldBuilder, story: Story) -> bool:
    """Before billing: the standard trial (ending T0) is extended afterwards to T1, still in
    the first period or inside the second. Logs a second `trial_ended` at T1; the story bills
    from T1, and `charge_before_extension` adds what was charged from T0 and its credit."""
    t0 = story.trial_end
    if t0 is None or story.periods < 3 or b.rng.random() >= RETRO_TRIAL_RATE:
        return False
    # east of UTC a trial ending just after local midnight has yesterday's UTC date: extended
    # by one day, the new end's UTC date is the first end, which the invoice records
    one_day = _crosses(t0 + days(1), story.time_of_day(), story.timezone, -1)
    same = one_day or b.rng.random() < 0.5
    return extend_later(b, story, same_period=same, one_day=one_day) is not None


def _crosses(day: date, at: time, timezone: str, shift: int) -> bool:
    """The UTC date of local (day, at) is `shift` days from `day` (+1 west, -1 east)."""
    return date.fromisoformat(local_to_utc(day, at, timezone)[:10]) == day + days(shift)


def extend_later(
    b: WorldBuilder, story: Story, *, same_period: bool, one_day: bool = False
) -> date | None:
    """The trial (ending T0) extended after it ended, to T1: still in the first period (by
    one day with `one_day`), or inside the second (the first then lies wholly inside the
    trial). Returns T1."""
    t0 = story.trial_end
    end = story.period(0)[1]
    if t0 is None or (end - t0).days < 8:
        return None
    if one_day:
        t1 = t0 + days(1)
    elif same_period:  # a few more days, still inside the first period
        t1 = t0 + days(b.rng.randint(2, (end - t0).days - 4))
    else:  # the whole first period, ending inside the second
        s1, e1 = story.period(1)
        t1 = s1 + days(b.rng.randint(3, (e1 - s1).days - 6))
    changes = [d for d, _ in story.plan_changes if d > t0]
    if changes and t1 > min(changes) - days(2):
        return None  # a plan change's money starts by then: never inside a trial (world v6)
    story.trial_end = t1
    story.trial_end_before = t0
    story.event(t1, story.time_of_day(), "trial_ended", {})
    return t1


def charge_before_extension(
    b: WorldBuilder, story: Story, invoices: list[Invoice], *, credited: bool = True
) -> list[Invoice]:
    """After billing: period 0 as it was invoiced when the trial first ended (T0), paid, and
    the credit note support issued when extending the trial, returning what the extension
    waives. Both invoices are correct as issued; no overcharge remains."""
    t0, t1 = story.trial_end_before, story.trial_end
    if t0 is None or t1 is None or b.draft is None:
        return invoices
    story.trial_end = t0
    inputs = story.inputs(0, b)
    zero = story.trial_inputs(b)
    first_ended = story.run_stamp(  # the billing run after the first end
        min(e.occurred_at for e in story.sub.events if e.type == "trial_ended")
    )
    story.trial_end = t1
    if story.trial_invoice is not None:  # issued at signup, before anyone extended it
        story.trial_invoice.billed = story.trial_invoice.correct = zero
    start = story.period(0)[0]
    old = [i for i in b.draft.invoices if i.subscription_id == story.sub.id]
    old = [i for i in old if i.billed.period_start == start and i is not story.trial_invoice]
    waived = compute_invoice(inputs).total_cents
    if old:  # T1 inside period 0: the extra days, on the invoice's own rates
        waived -= compute_invoice(replace(inputs, proration_start=t1)).total_cents
    for invoice in old:  # the T1 invoice is replaced by the one issued at T0
        _drop(b, invoice)
    if not credited:  # the fault: the charge from T0 stood, nothing returned
        charged = b.issue(story, replace(inputs, proration_start=t1), first_ended)
        b.rebill(charged, proration_start=t0)
        return [charged] + [i for i in invoices if all(i is not o for o in old)]
    charged = b.issue(story, inputs, first_ended)
    if waived > 0:
        earlier_credit(b, charged, waived, charged.issued_at, "trial_extension")
    return [charged] + [i for i in invoices if all(i is not o for o in old)]


def _drop(b: WorldBuilder, invoice: Invoice) -> None:
    assert b.draft is not None
    b.draft.invoices.remove(invoice)
    b.draft.payments = [p for p in b.draft.payments if p.invoice_id != invoice.id]


LATE = (time(22, 40), time(23, 10), time(23, 30), time(23, 45), time(23, 55))


def scheduled_first(b: WorldBuilder, story: Story, day: date, to_plan: str) -> None:
    """Before an immediate change on local `day`: the same change scheduled for the period end
    late the evening before (the customer then chose not to wait). West of UTC that evening has
    `day`'s UTC date, which the invoice records as plan_change_date; the scheduled event's
    local day and `effective` tell it from a date taken in UTC. Half the time where it crosses."""
    at = b.pick(LATE)
    if not _crosses(day - days(1), at, story.timezone, 1) or b.rng.random() >= 0.5:
        return
    before = story.plan_at(day - days(1)).id
    details = {"from_plan_id": before, "to_plan_id": to_plan, "effective": "at_period_end"}
    story.event(day - days(1), at, "plan_changed", details)


MAIN_RETRO_RATE = 0.45  # of the main subscription's trials, in classes whose fault allows it
FAULT_BOTH_ENDS = 0.5  # trial_period_charged's retro form keeping both trial_ended events
MAIN_RETRO_SKIP = ("trial_period_charged", "timezone_period_boundary")


def main_retro_trial(b: WorldBuilder, story: Story) -> None:
    """Before the main subscription is billed: its trial extended after it first ended, by a
    few days inside the first period (`settle_main_trial` finishes it after billing)."""
    if story.trial_end is None or b.label in MAIN_RETRO_SKIP or story.trial_end_before:
        return
    if b.rng.random() < MAIN_RETRO_RATE:
        extend_later(b, story, same_period=True)


def settle_main_trial(b: WorldBuilder, story: Story, keep: str) -> None:
    """After the fault billed the main subscription: the first period charged from the first
    trial end and credited (`charge_before_extension`), unless the fault uses that invoice
    (`keep` holds the ids it names); then the extension simply came before the charge: one
    `trial_ended`, logged with the extended length like `background._extend_trial`."""
    t0, t1 = story.trial_end_before, story.trial_end
    if t0 is None or t1 is None or b.draft is None:
        return
    if b.label == "trial_period_charged" and b.rng.random() < FAULT_BOTH_ENDS:
        return  # the fault's L2/L3 form: this history, its charge not credited
    start = story.period(0)[0]
    first = [
        i
        for i in b.draft.invoices
        if i.subscription_id == story.sub.id
        and i.billed.period_start == start
        and i is not story.trial_invoice
    ]
    if len(first) == 1 and first[0].correct == first[0].billed and first[0].id not in keep:
        charge_before_extension(b, story, first)
        return
    early = min(e.occurred_at for e in story.sub.events if e.type == "trial_ended")
    story.sub.events = [
        e for e in story.sub.events if not (e.type == "trial_ended" and e.occurred_at == early)
    ]
    for event in story.sub.events:
        if event.type == "trial_started":
            event.details.update(
                trial_days=(t1 - start).days,
                standard_trial_days=story.plan.trial_days,
                extended=True,
            )
    story.trial_end_before = None


LATE_SHARE = 0.5  # of trials longer than the plan's: extended after signup, not at it


def zero_covers(b: WorldBuilder, story: Story, end: date) -> date:
    """The last day the trial's zero invoice covers, for a trial that ran to `end` (before any
    extension billing missed): the plan's standard days where support granted the extra days
    after signup (the zero invoice is issued at signup and not reissued), else `end`. Drawn
    the same way in every class: the fault's zero invoice is the same record."""
    standard = story.period(0)[0] + days(story.plan.trial_days)
    if end > standard and b.rng.random() < LATE_SHARE:
        return standard
    return end


def signup_zero(b: WorldBuilder, story: Story) -> None:
    """After billing: an extended trial (one `trial_ended`, the zero invoice covering it all)
    maybe extended after signup, so its zero invoice covers the standard days only. The zero
    invoice stays 0.00 and correct; the first paid invoice still charges from the trial end."""
    zero, end = story.trial_invoice, story.trial_end
    ended = [e for e in story.sub.events if e.type == "trial_ended"]
    if zero is None or end is None or len(ended) != 1 or zero.billed.period_end != end:
        return
    covered = zero_covers(b, story, end)
    if covered != end:
        shorter = replace(zero.billed, period_end=covered, proration_start=covered)
        zero.billed = zero.correct = shorter


def coupon_at_end(b: WorldBuilder, story: Story, today: date) -> None:
    """World v6, the twin of `billed_after_cancellation`'s extra period: a subscription whose
    cancellation took effect by the dispute, its coupon still on, has it removed by the clock
    where its service ended (`coupon_removed`, reason `subscription_ended`): a coupon removed
    after a confirmed cancellation, billed correctly (no invoice after it). No draw."""
    end, coupon = story.cancel_effective, story.coupon
    if end is None or coupon is None or end > today or story.sub.status != "canceled":
        return
    assert b.draft is not None
    removed = [e for e in story.sub.events if e.type == "coupon_removed"]
    billed_on = [  # an invoice after the end: billing never processed it (a fault)
        i
        for i in b.draft.invoices
        if i.subscription_id == story.sub.id and i.billed.period_start >= end
    ]
    if removed or billed_on or not story.coupon_applies(story.periods - 1):
        return
    details = {"coupon_code": coupon.code, "reason": "subscription_ended"}
    story.event(end, time(0, 0), "coupon_removed", details)
