"""Decoys added by difficulty: a second, correctly billed subscription from L2 on, with
background features (`env.generation.background`), and payment-level look-alikes at every level.

Decoys never change the truth: they are billed correctly by the same story machinery, so an
agent that credits them commits a false reversal.
"""

from __future__ import annotations

from env.generation.background import decorate_second
from env.generation.background_payments import decorate_payments
from env.generation.builder import WorldBuilder
from env.generation.faults.base import FaultOutcome
from env.generation.lookalikes_life import charge_before_extension, settle_main_trial, signup_zero

THIRD_RATE = {"L1": 0.0, "L2": 0.2, "L3": 0.45}  # a third subscription, as some faults have


def add_decoys(b: WorldBuilder, outcome: FaultOutcome) -> None:
    draft = b.draft
    assert draft is not None
    named = [str(c.arguments) for c in outcome.evidence] + [i.id for i in outcome.focus]
    keep = f"{' '.join(named)} {outcome.summary} {outcome.slots}"  # ids the fault relies on
    settle_main_trial(b, outcome.story, keep)
    if b.difficulty != "L1" and "no_second_subscription" not in outcome.traps:
        plans = {p.id.removeprefix("PLN-"): p for p in draft.plans}
        story, _ = decorate_second(b, plans)
        invoices = b.bill(story)
        invoices = charge_before_extension(b, story, invoices)
        outcome.traps.append("second_subscription")
        if b.difficulty == "L3" and invoices:
            outcome.focus.append(b.pick(invoices))
        if b.rng.random() < THIRD_RATE[b.difficulty]:  # counts of a feature must not tell either
            third = decorate_second(b, plans)[0]
            charge_before_extension(b, third, b.bill(third))
    for story in b.stories:  # trials extended after signup, in every class
        signup_zero(b, story)
    decorate_payments(b, list(outcome.focus))
