"""Story shapes and summary wording shared by several faults.

The main subscription sized by difficulty, the invoices a fault hits, the overcharge of one,
and the joined ids and amounts the summaries cite. Every helper draws from `b.rng` in a fixed
order: moving one changes no scenario, reordering its draws would change them all.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import date, time

from env.engine.billing import BillingInputs, compute_invoice
from env.engine.calendar import local_to_utc
from env.engine.money import format_cents
from env.generation.builder import WorldBuilder
from env.generation.faults.base import call, recompute
from env.generation.lookalikes_life import main_retro_trial
from env.generation.story import Story
from env.generation.world import Invoice, Plan
from env.scenario import ToolCall

PERIODS = {"L1": (2, 3), "L2": (3, 5), "L3": (4, 6)}
# Main-story trials where the fault's own arithmetic does not depend on the first invoice's
# shape (design §1.2); the rest of the main story's background is
# `env.generation.background.decorate_main`
TRIAL_OK: tuple[str, ...] = (
    "duplicate_payment",
    "coupon_not_applied",
    "usage_overage_miscalculated",
)
TRIAL_OK += ("wrong_tax_rate", "tax_exempt_charged", "currency_conversion_error")
METERED_RATE = 0.65  # main subscriptions on a metered plan, where the fault allows any plan


def periods_for(b: WorldBuilder, minimum: int = 1) -> int:
    low, high = PERIODS[b.difficulty]
    return max(minimum, b.rng.randint(low, high))


def seats_for(b: WorldBuilder, plan: Plan) -> int:
    return b.rng.randint(3, 40) if plan.per_seat else 1


def unbilled_story(
    b: WorldBuilder,
    *,
    metered: bool | None = None,
    per_seat: bool | None = None,
    minimum_periods: int = 1,
) -> Story:
    """A catalog and one subscription whose invoices are not issued yet: tax history,
    exemptions, coupons and fx rates must be in place before `b.bill`."""
    plans = b.make_catalog()
    if metered is None and per_seat is None:  # metered plans as common as the usage class needs
        metered = b.rng.random() < METERED_RATE
    options = [
        p
        for p in plans.values()
        if (metered is None or bool(p.overage_unit_price_cents) == metered)
        and (per_seat is None or p.per_seat == per_seat)
    ]
    plan = b.pick(options)
    trial = b.label in TRIAL_OK and b.main_trial(plan)
    periods = periods_for(b, minimum_periods)
    story = b.make_story(plan, seats=seats_for(b, plan), periods=periods, trial=trial)
    main_retro_trial(b, story)  # before the fault reads its issue days (the trial's end moves)
    if plan.overage_unit_price_cents:
        b.fill_usage(story)
    return story


def period_starts(story: Story) -> list[date]:
    return [story.period(k)[0] for k in range(story.periods)]


def victim_count(b: WorldBuilder, room: int) -> int:
    """How many consecutive invoices a fault touches: mostly one at L1, up to three later."""
    high = 1 if b.difficulty == "L1" and b.rng.random() < 0.8 else 3
    return b.rng.randint(1, max(1, min(high, room)))


def invoices_by_start(invoices: list[Invoice]) -> dict[date, Invoice]:
    return {inv.billed.period_start: inv for inv in invoices}


def issue_unwarranted(
    b: WorldBuilder, story: Story, inputs: BillingInputs, invoice_id: str, at: time
) -> Invoice:
    """Files an invoice a correct billing system never issues (`correct=None`), paid as usual;
    where it carries the proration of a change made before the cancellation took effect, what
    a correct system bills is the closing invoice for that alone (`closing_inputs`).

    The caller draws the id and the local issue time: their order in `b.rng` differs between
    faults, and keeping it keeps every generated scenario the same.
    """
    invoice = Invoice(
        id=invoice_id,
        customer_id=b.customer.id,
        subscription_id=story.sub.id,
        issued_at=local_to_utc(inputs.period_start, at, story.timezone),
        correct=closing_inputs(inputs),
        billed=inputs,
    )
    return b.file_invoice(invoice)


def closing_inputs(billed: BillingInputs) -> BillingInputs | None:
    """The closing invoice of a period nobody owes: the proration of a plan change made in the
    period before, alone (`env.engine.billing`: a charge that stops at its period's start),
    where there is one and it charges something; else None (nothing at all is owed). A
    credit-only one has no invoice to go on (the world keeps no credit balance)."""
    change = billed.plan_change_date
    if billed.previous_plan is None or change is None or change >= billed.period_start:
        return None
    closing = replace(billed, proration_end=billed.period_start, usage_units=None)
    return closing if compute_invoice(closing).total_cents > 0 else None


def unwarranted_evidence(invoice: Invoice) -> list[ToolCall]:
    """What shows an unwarranted invoice's overcharge: its payments, and for a closing one the
    recompute that bills the closing proration alone (its `difference` is what is owed back)."""
    shown = [call("list_payments", customer_id=invoice.customer_id, invoice_id=invoice.id)]
    if invoice.correct is not None:
        start = invoice.billed.period_start.isoformat()
        shown.append(recompute(invoice, proration_end=start))
    return shown


def overcharge(invoice: Invoice) -> int:
    return invoice.billed_amounts().total_cents - invoice.correct_total_cents()


def overcharge_text(invoice: Invoice) -> str:
    return format_cents(overcharge(invoice))


def join_words(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def invoice_words(invoices: list[Invoice]) -> str:
    ids = join_words([inv.id for inv in invoices])
    return f"invoice {ids}" if len(invoices) == 1 else f"invoices {ids}"
