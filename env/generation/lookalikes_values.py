"""Value look-alikes (issue 19, design §1.2 "no fingerprints"): the recorded billing inputs a
fault leaves must be values the correct world also produces, so that a faulted record is wrong
only relative to another record.

- Seat counts: background seat changes are cuts as well as rises (`seat_step`), with the same
  steps the seat fault draws, so a subscription row with fewer seats than an earlier invoice
  billed, or a count that went down and up again, is no label. A cut is drawn only where no
  credit can exceed a smaller subtotal (`seat_cut_ok`: no immediate downgrade, no fixed
  amount off, no flat plan priced against the seats).
- fx rates: a day at the top of the table's usual band on a period start (`high_fx_day`), as
  often in every class as `currency_conversion_error`'s own correctly billed jump, so a high
  recorded rate gives no class away.

Every builder draws from `b.rng` in a fixed order and is called with one-line hooks.
"""

from __future__ import annotations

from datetime import timedelta

from env.engine.calendar import fx_day
from env.generation.builder import WorldBuilder
from env.generation.lookalikes_pay import fx_high_rate
from env.generation.story import Story

SEAT_STEPS = (1, 2, 3, 5)  # seats added or removed by one change, in every class
SEAT_CUT_RATE = 0.7  # of background seat changes where a cut is safe (the seat fault cuts 1 in 2)
MIN_SEATS = 2  # a cut leaves at least this many seats
HIGH_FX_RATE = {"L1": 0.0, "L2": 0.5, "L3": 1.0}  # as `currency_conversion_error` draws its jump


def seat_step(b: WorldBuilder, before: int, *, cut_ok: bool) -> int:
    """The seat count after one background change from `before`: a rise, or (where safe and
    now and then) a cut by one of the same steps."""
    step = b.pick(SEAT_STEPS)
    if cut_ok and before - step >= MIN_SEATS and b.rng.random() < SEAT_CUT_RATE:
        return before - step
    return before + step


def seat_cut_ok(story: Story) -> bool:
    """Whether a seat cut on this story stays safe: no fixed amount off (sized on the smallest
    count so far), and every plan change between per-seat plans and either an upgrade or one
    scheduled for a period start (an immediate downgrade's credit is sized on the old count;
    a flat plan's price is compared with the seats at the time)."""
    fixed = story.coupon is not None and story.coupon.amount_off_cents is not None
    if fixed or not story.plan.per_seat:
        return False
    starts = {story.period(k)[0] for k in range(story.periods + 1)}
    for day, to in story.plan_changes:
        before = story.plan_at(day - timedelta(days=1))
        if not (before.per_seat and to.per_seat):
            return False
        upgrade = min(p[0] for p in to.prices) >= max(p[0] for p in before.prices)
        if day not in starts and not upgrade:
            return False
    return True


def fault_seat_cut(b: WorldBuilder, before: int) -> int:
    """The seat fault's cut: one of the background's steps, leaving at least `MIN_SEATS`."""
    return before - b.pick([s for s in SEAT_STEPS if before - s >= MIN_SEATS] or [1])


def seat_cuts(story: Story) -> bool:
    """Whether the story's seat changes include a cut (then only upgrades may follow)."""
    current = story.seats
    for _, seats in sorted(story.seat_changes):
        if seats < current:
            return True
        current = seats
    return False


def high_fx_day(b: WorldBuilder, story: Story) -> None:
    """A real rate at the top of the band on one of the main story's issue days, at
    `currency_conversion_error`'s own rate for its correctly billed jump (that class draws its
    own, so it skips this one): the invoice of that period records it, billed correctly."""
    if b.customer.currency == "USD" or b.label == "currency_conversion_error":
        return
    if b.rng.random() >= HIGH_FX_RATE[b.difficulty]:
        return
    day = fx_day(story.issue_day(b.rng.randrange(story.periods)))  # the day its invoice converts
    b.raise_fx(day, fx_high_rate(b, b.fx_base()))  # unless its days are recorded already
