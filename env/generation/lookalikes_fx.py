"""The fx rate lock look-alike (world v5, design §1.2 "same shape"): a contract rate on the
customer record (`fx_rate_lock`, read with `get_customer`) under which one invoice of the main
subscription converts at the rate of a day several days before its issue day, billed correctly.
Its date and rate come from the fault's own chooser (`stale_day`), so the invoice's fx date and
rate look exactly like `currency_conversion_error`'s wrong date; only the customer record tells
the two apart (`env.engine.calendar.fx_rate_day`).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import date
from fractions import Fraction

from env.engine.calendar import days, fx_day
from env.generation.builder import WorldBuilder
from env.generation.lookalikes_pay import fx_band_top
from env.generation.story import Story

RATE_LOCK_RATE = {"L1": 0.0, "L2": 0.35, "L3": 0.35}  # of non-USD customers, in every class
LOCK_TAIL_DAYS = (1, 10)  # the window runs on this many days past the locked invoice's issue


class NoStaleDay(Exception):
    """No day before the start converts higher: the right rate is at the top of the band the
    table keeps, and the path may not rise past it."""


def stale_day(
    b: WorldBuilder,
    start: date,
    right: Fraction,
    recorded: set[date],
    higher: Callable[[Fraction, date], bool],
) -> tuple[date, Fraction]:
    """A weekday two or more days before `start` whose rate is `higher` than the right one: a
    day the table holds that no invoice records (latest first), else a fresh day 2-31 days
    back where the rate's path is higher, else one whose path is raised about 1 % above
    `right` (up to the band's top) around it (`WorldBuilder.raise_fx`)."""
    latest = (start - days(2)).isoformat()
    known = sorted(date.fromisoformat(d) for d in b.fx if d <= latest)
    for day in reversed(known):
        if day.weekday() >= 5 or day in recorded:
            continue  # a weekend has no rate; an invoice's own day is no stale rate
        rate = b.fx_on(day)
        if higher(rate, day):
            return day, rate
    fresh = [
        start - days(n)
        for n in range(2, 32)
        if (start - days(n)).weekday() < 5
        and (start - days(n)).isoformat() not in b.fx
        and start - days(n) not in recorded
    ]
    b.rng.shuffle(fresh)
    for day in fresh:
        if higher(b.path_rate(day), day):
            return day, b.fx_on(day)
    high = fx_band_top(b.fx_base())
    for day in fresh:
        low = min(right * Fraction(101, 100), high)
        rate = low + (high - low) * Fraction(b.rng.randint(0, 100), 100)
        rate = Fraction(round(rate * 10000), 10000)
        if not higher(rate, day):  # the right rate is at the band's top already
            rate = Fraction(round(right * Fraction(101, 100) * 10000), 10000)
        if higher(rate, day) and b.raise_fx(day, rate):
            return day, b.fx_on(day)
    raise NoStaleDay(f"no stale fx day before {start} converts higher than {right}")


def rate_lock(b: WorldBuilder, story: Story) -> None:
    """Before the main story is billed: now and then (`RATE_LOCK_RATE`) a contract rate for a
    run of consecutive paid invoices (1-3, as many as the fault's victims), at a stale day's
    higher rate as the fault draws it. A period whose issue day's rate is already set (a
    high-rate day, the fault's jump) is left alone; at least one other paid period stays
    unlocked."""
    if b.customer.currency == "USD" or b.rng.random() >= RATE_LOCK_RATE[b.difficulty]:
        return
    issues = [story.issue_day(k) for k in range(story.periods)]
    # every paid period, the first one too (a trial's, issued at its end: world v6), unless a
    # trial extended after its first charge may still reissue it at its first end
    moving = {0} if story.trial_end_before is not None else set()
    room = [
        k
        for k in range(story.periods)
        if k not in moving and fx_day(issues[k]).isoformat() not in b.fx
    ]
    if len(room) < 2:  # another paid period stays unlocked (a fault's victim needs one)
        return
    count = b.rng.randint(1, min(3, len(room) - 1))  # as `faults.common.victim_count` at L2/L3
    head = b.pick(off_start(b, story, room))  # drawn as the fault draws its victims
    run = [head]
    while len(run) < count and run[-1] + 1 in room:
        run.append(run[-1] + 1)
    issued = issues[head]
    right = b.fx_on(fx_day(issued))  # the table holds the issue day's rate, as beside a victim
    assert b.draft is not None
    recorded = {fx_day(d) for d in issues} | {inv.billed.fx_rate_date for inv in b.draft.invoices}
    start = min(story.period(head)[0], fx_day(issued))
    try:
        day, _ = stale_day(b, start, right, recorded, lambda rate, _day: rate > right)
    except NoStaleDay:
        return  # no contract rate above one at the band's top
    for k in run[1:]:
        b.fx_on(fx_day(issues[k]))  # their own days' rates too, which they do not use
    last = run[-1]
    before = issues[head - 1] + days(1) if head > 0 else day
    after = issues[last + 1] if last + 1 < story.periods else issues[last] + days(1)
    until = min(issues[last] + days(b.rng.randint(*LOCK_TAIL_DAYS)), after)
    window = (max(day, before).isoformat(), until.isoformat())
    b.customer.fx_lock = (story.sub.id, day.isoformat(), *window)


OFF_DAY_SHARE = 0.9  # runs drawn among periods whose right fx date is not their start


def off_start(b: WorldBuilder, story: Story, ks: list[int]) -> list[int]:
    """The periods a run of conversions at another day's rate is drawn from, the fault's and
    the rate lock's alike: mostly those whose right fx date already is not the period start (a
    weekend start, a trial's end), so the other date adds no invoice whose fx date differs
    from its start (design §1.2: a value the correct world records too)."""
    off = [k for k in ks if fx_day(story.issue_day(k)) != story.period(k)[0]]
    return off if off and b.rng.random() < OFF_DAY_SHARE else ks


def locked_periods(b: WorldBuilder, story: Story) -> set[int]:
    """The main story's periods whose invoice the customer's rate lock covers."""
    lock = b.customer.fx_lock
    if lock is None or lock[0] != story.sub.id:
        return set()
    return {k for k in range(story.periods) if lock[2] <= story.issue_day(k).isoformat() < lock[3]}
