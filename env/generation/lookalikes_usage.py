"""Usage look-alike (world v5/v6, design §1.2 "same shape"): a legitimate rise of billed units.

`usage_overage_miscalculated` at L2/L3 bills a quiet month with a batch of its events counted
twice, so the invoice's units are the period's usage record plus a share of it. Its twin, drawn
in every class at the same rate: the meter reported only part of the period's events, and a usage
correction record for the same period (`get_subscription_timeline`'s `usage_corrections`, a record
apart from the usage row) adds the late batch; billing bills the corrected total, correctly. Both
draw the batch from one distribution (`batch_share`: the whole first count is one case among
others, world v6), and a correction is recorded as real ones are, after the period ended and
before the invoice that bills it was issued (a UTC time that night). The two differ only in
whether that correction record exists.
"""

from __future__ import annotations

import random
from datetime import date, time, timedelta

from env.engine.calendar import local_to_utc
from env.generation.story import Story

CORRECTION_RATE = 0.18  # of L2/L3 finished periods billed in one part on a metered plan
QUIET = (0.65, 0.9)  # the fault's quiet month (`pricing.usage_overage_miscalculated`)
WHOLE_SHARE = 0.3  # of late batches, as large as the first count (a second shard as busy)
BATCH = (0.2, 0.95)  # the others, as a share of the first count
REASONS = (
    "late-reported usage batch: one of two meter shards reported after the period's first count",
    "meter correction: events from a second region were reported late for the same period",
    "usage re-sync after a metering outage: the period's missing events",
)


def batch_share(rng: random.Random) -> float:
    """A late (or twice counted) batch as a share of the period's first count."""
    return 1.0 if rng.random() < WHOLE_SHARE else rng.uniform(*BATCH)


def one_part(story: Story, start: date, end: date) -> bool:
    """Billed whole on a metered plan: no trial inside or over it, no plan change inside it."""
    if story.trial_end is not None and start < story.trial_end:
        return False
    if any(start < d < end for d, _ in story.plan_changes):
        return False
    return bool(story.plan_at(end - timedelta(days=1)).overage_unit_price_cents)


def draw_correction(
    rng: random.Random, difficulty: str, story: Story, start: date, end: date, level: int
) -> tuple[int, int, str, str] | None:
    """(units first reported, the correction's units, when it was recorded, reason) for a
    corrected period, or None. The draws happen for every L2/L3 period whatever the label."""
    if difficulty == "L1":
        return None
    roll = rng.random()
    first = max(1, int(level * rng.uniform(*QUIET)))
    late = max(1, int(first * batch_share(rng)))
    issued = story.time_of_day()  # the next invoice's renewal moment that day
    minutes = issued.hour * 60 + issued.minute
    at = rng.randrange(max(1, minutes))
    if roll >= CORRECTION_RATE or not one_part(story, start, end) or minutes < 2:
        return None
    recorded = local_to_utc(end, time(at // 60, at % 60), story.timezone)
    return first, late, recorded, REASONS[rng.randrange(len(REASONS))]


def correction_rows(story: Story) -> list[tuple[str, str, int, str, str]]:
    """The `usage_corrections` rows of a story's subscription, in period order."""
    rows = []
    for start in sorted(story.usage_corrections):
        units, recorded, reason = story.usage_corrections[start]
        end = next(e for s, e in _periods(story) if s == start)
        rows.append((start.isoformat(), end.isoformat(), units, recorded, reason))
    return rows


def _periods(story: Story) -> list[tuple[date, date]]:
    return [story.period(k) for k in range(story.periods)]
