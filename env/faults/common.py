"""Story shapes and summary wording shared by several faults.

The main subscription sized by difficulty, the invoices a fault hits, the overcharge of one,
and the joined ids and amounts the summaries cite. Every helper draws from `b.rng` in a fixed
order: moving one changes no scenario, reordering its draws would change them all.
"""

from __future__ import annotations

from datetime import date, time

from env.billing import BillingInputs
from env.builder import WorldBuilder
from env.calendar import local_to_utc
from env.money import format_cents
from env.story import Story
from env.world import Invoice, Plan

PERIODS = {"L1": (1, 3), "L2": (3, 5), "L3": (4, 6)}


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
    """A catalog and one subscription whose invoices are not issued yet.

    Tax history, exemptions, coupons and fx rates must be in place before `b.bill`; faults
    that need none of them use `main_subscription`, which bills at once.
    """
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
    return story


def main_subscription(
    b: WorldBuilder,
    *,
    metered: bool | None = None,
    per_seat: bool | None = None,
    minimum_periods: int = 1,
) -> tuple[Story, list[Invoice]]:
    """A catalog, one subscription and its correct invoices: the plainest story."""
    story = unbilled_story(b, metered=metered, per_seat=per_seat, minimum_periods=minimum_periods)
    return story, b.bill(story)


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
    """Files an invoice a correct billing system never issues (`correct=None`), paid as usual.

    The caller draws the id and the local issue time: their order in `b.rng` differs between
    faults, and keeping it keeps every generated scenario the same.
    """
    assert b.draft is not None
    invoice = Invoice(
        id=invoice_id,
        customer_id=b.customer.id,
        subscription_id=story.sub.id,
        issued_at=local_to_utc(inputs.period_start, at, story.timezone),
        correct=None,
        billed=inputs,
    )
    b.draft.invoices.append(invoice)
    b.draft.invoices.sort(key=lambda inv: (inv.issued_at, inv.id))
    b.pay(invoice)
    return invoice


def overcharge(invoice: Invoice) -> int:
    return invoice.billed_amounts().total_cents - invoice.correct_total_cents()


def overcharge_text(invoice: Invoice) -> str:
    return format_cents(overcharge(invoice))


def join_words(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def invoice_words(invoices: list[Invoice]) -> str:
    ids = join_words([inv.id for inv in invoices])
    return f"invoice {ids}" if len(invoices) == 1 else f"invoices {ids}"
