"""Usage look-alike (world v5, design §1.2 "same shape"): a legitimate doubling of billed units.

`usage_overage_miscalculated` at L2/L3 bills a quiet month's usage twice, so the invoice's units
are exactly twice the period's usage record. Its twin, drawn in every class at the same rate: the
meter reported only part of the period's events, and a usage correction record for the same
period (`get_subscription_timeline`'s `usage_corrections`, a record apart from the usage row)
adds exactly the units first reported before the invoice was issued; billing bills the corrected
total, correctly. The two differ only in whether that correction record exists.
"""

from __future__ import annotations

import random
from datetime import date, timedelta

from env.generation.story import Story

CORRECTION_RATE = 0.18  # of L2/L3 finished periods billed in one part on a metered plan
QUIET = (0.65, 0.9)  # the fault's quiet month (`pricing.usage_overage_miscalculated`)
REASONS = (
    "late-reported usage batch: one of two meter shards reported after the period's first count",
    "meter correction: events from a second region were reported late for the same period",
    "usage re-sync after a metering outage: the missing half of the period's events",
)


def one_part(story: Story, start: date, end: date) -> bool:
    """Billed whole on a metered plan: no trial inside or over it, no plan change inside it."""
    if story.trial_end is not None and start < story.trial_end:
        return False
    if any(start < d < end for d, _ in story.plan_changes):
        return False
    return bool(story.plan_at(end - timedelta(days=1)).overage_unit_price_cents)


def draw_correction(
    rng: random.Random, difficulty: str, story: Story, start: date, end: date, level: int
) -> tuple[int, str, str] | None:
    """(units first reported = correction's units, recorded day, reason) for a corrected
    period, or None. The draw happens for every L2/L3 period whatever the label."""
    if difficulty == "L1":
        return None
    roll = rng.random()
    if roll >= CORRECTION_RATE or not one_part(story, start, end):
        return None
    units = max(1, int(level * rng.uniform(*QUIET)))
    span = max(1, min(3, (end - start).days - 1))
    recorded = end - timedelta(days=rng.randint(1, span))
    return units, recorded.isoformat(), REASONS[rng.randrange(len(REASONS))]


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
