"""Decoys added by difficulty: a second, correctly billed subscription from L2 on.

Decoys never change the truth: they are billed correctly by the same story machinery, so an
agent that credits them commits a false reversal.
"""

from __future__ import annotations

from env.builder import WorldBuilder
from env.faults.base import FaultOutcome


def add_decoys(b: WorldBuilder, outcome: FaultOutcome) -> None:
    if b.difficulty == "L1" or "no_second_subscription" in outcome.traps:
        return
    draft = b.draft
    assert draft is not None
    taken = outcome.story.plan.id
    options = [p for p in draft.plans if p.id != taken and not p.overage_unit_price_cents]
    plan = b.pick(options)
    periods = b.rng.randint(2, 4)
    story = b.make_story(plan, seats=b.rng.randint(2, 12) if plan.per_seat else 1, periods=periods)
    invoices = b.bill(story)
    outcome.traps.append("second_subscription")
    if b.difficulty == "L3" and invoices:
        outcome.focus.append(b.pick(invoices))
