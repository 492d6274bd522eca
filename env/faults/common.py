"""Story shapes shared by several faults: the main subscription sized by difficulty."""

from __future__ import annotations

from env.builder import WorldBuilder
from env.story import Story
from env.world import Invoice, Plan

PERIODS = {"L1": (1, 3), "L2": (3, 5), "L3": (4, 6)}


def periods_for(b: WorldBuilder, minimum: int = 1) -> int:
    low, high = PERIODS[b.difficulty]
    return max(minimum, b.rng.randint(low, high))


def seats_for(b: WorldBuilder, plan: Plan) -> int:
    return b.rng.randint(3, 40) if plan.per_seat else 1


def main_subscription(
    b: WorldBuilder,
    *,
    metered: bool | None = None,
    per_seat: bool | None = None,
    minimum_periods: int = 1,
) -> tuple[Story, list[Invoice]]:
    """A catalog, one subscription and its correct invoices: the plainest story."""
    plans = b.make_catalog()
    options = [
        p
        for p in plans.values()
        if (metered is None or bool(p.overage_unit_price_cents) == metered)
        and (per_seat is None or p.per_seat == per_seat)
    ]
    plan = b.pick(options)
    story = b.make_story(plan, seats=seats_for(b, plan), periods=periods_for(b, minimum_periods))
    if plan.overage_unit_price_cents:
        b.fill_usage(story)
    return story, b.bill(story)
