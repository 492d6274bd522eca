"""Story shapes and summary wording shared by several faults.

The main subscription sized by difficulty, the invoices a fault hits, the overcharge of one,
and the joined ids and amounts the summaries cite. Every helper draws from `b.rng` in a fixed
order: moving one changes no scenario, reordering its draws would change them all.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta

from env.billing import BillingInputs
from env.builder import WorldBuilder
from env.calendar import local_to_utc, utc_stamp
from env.money import format_cents
from env.story import Story
from env.world import CreditNote, Invoice, Plan

PERIODS = {"L1": (2, 3), "L2": (3, 5), "L3": (4, 6)}
# Main-story trials where the fault's own arithmetic does not depend on the first invoice's
# shape (design §1.2); the rest of the main story's background is `env.background.decorate_main`
TRIAL_OK = ("duplicate_payment", "coupon_not_applied", "usage_overage_miscalculated")
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
    if plan.overage_unit_price_cents:
        b.fill_usage(story)
    return story


def immediate_swap(
    b: WorldBuilder, story: Story, plans: dict[str, Plan], *, upgrades_only: bool = False
) -> None:
    """An immediate change to the plan of the same kind (Team <-> Business, Growth <-> Scale)
    inside a period before the last, prorated correctly on the next invoice; `upgrades_only`:
    from the cheaper plan of a pair only."""
    upgrades = {"TEAM": "BUSINESS", "GROWTH": "SCALE"}
    pairs = upgrades if upgrades_only else upgrades | {"BUSINESS": "TEAM", "SCALE": "GROWTH"}
    key = pairs.get(story.plan.id.removeprefix("PLN-"))
    if key is None:
        return
    to = plans[key]
    first = 0  # after the trial: a change during it would credit time that was never charged
    while story.trial_end is not None and story.period(first)[0] < story.trial_end:
        first += 1
    if first > story.periods - 2:
        return
    start, end = story.period(b.rng.randint(first, story.periods - 2))
    day = b.pick(late_days(start, end, story.plan, to, margin=2))
    story.plan_changes.append((day, to))
    details = {"from_plan_id": story.plan.id, "to_plan_id": to.id, "effective": "immediately"}
    story.event(day, b.work_time(), "plan_changed", details)


def unused_share(old: Plan, new: Plan) -> float:
    """The largest share of a period an immediate change from `old` to `new` may leave unused:
    a downgrade's credit for the old plan must stay below the new plan's next charge, since the
    world has no negative invoices (old * u < new * (1 + u), with a margin)."""
    ratio = max(p[0] for p in old.prices) / min(p[0] for p in new.prices)
    return 1.0 if ratio <= 1.8 else 0.8 / (ratio - 1)


def late_days(start: date, end: date, old: Plan, new: Plan, *, margin: int = 1) -> list[date]:
    """Days of [start+margin, end-margin] late enough for a change from `old` to `new`."""
    length = (end - start).days
    first = max(
        start + timedelta(days=margin), end - timedelta(days=int(length * unused_share(old, new)))
    )
    first = min(first, end - timedelta(days=margin + 1))
    return [
        first + timedelta(days=i) for i in range((end - timedelta(days=margin) - first).days + 1)
    ]


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
    invoice = Invoice(
        id=invoice_id,
        customer_id=b.customer.id,
        subscription_id=story.sub.id,
        issued_at=local_to_utc(inputs.period_start, at, story.timezone),
        correct=None,
        billed=inputs,
    )
    return b.file_invoice(invoice)


CREDIT_REASONS = (
    "Goodwill credit agreed with support",
    "Partial credit while the billing team investigates",
    "Courtesy credit for the service interruption",
)


def earlier_credit(
    b: WorldBuilder, invoice: Invoice, cents: int, after: str
) -> tuple[str, str, int]:
    """A credit note support issued before the dispute: (id, invoice id, cents)."""
    assert b.draft is not None
    moment = datetime.strptime(after, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    moment += timedelta(days=b.rng.randint(1, 5), minutes=b.rng.randint(0, 900))
    note = CreditNote(
        id=b.new_id("CN"),
        invoice_id=invoice.id,
        amount_cents=cents,
        currency=invoice.billed.currency,
        reason=b.pick(CREDIT_REASONS),
        created_at=utc_stamp(moment),
    )
    b.draft.credit_notes.append(note)
    return note.id, note.invoice_id, note.amount_cents


def overcharge(invoice: Invoice) -> int:
    return invoice.billed_amounts().total_cents - invoice.correct_total_cents()


def overcharge_text(invoice: Invoice) -> str:
    return format_cents(overcharge(invoice))


def join_words(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def invoice_words(invoices: list[Invoice]) -> str:
    ids = join_words([inv.id for inv in invoices])
    return f"invoice {ids}" if len(invoices) == 1 else f"invoices {ids}"
