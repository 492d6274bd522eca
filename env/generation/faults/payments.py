"""duplicate_payment: one invoice was paid twice (two succeeded payments).

Partial forms (design §1.2): the second charge was for part of the total (a retried partial
capture), so the overcharge is that payment, not a number printed on the invoice; or support
refunded part of the second charge, so what is still owed is printed nowhere and must be
derived (second charge - refund), a calculation the summary writes (rewards/README.md G10).
L3 may add a near miss: another invoice charged twice and refunded in full (nothing left to
return). A duplicate partly credited already is not generated.
"""

from __future__ import annotations

from env.engine.money import format_cents
from env.generation.background import decorate_main
from env.generation.builder import WorldBuilder
from env.generation.faults.base import FaultOutcome, call
from env.generation.faults.common import unbilled_story
from env.generation.lookalikes_pay import KEPT_FAULT_RATE, absorbed_after, keep_as_credit
from env.generation.story import Story
from env.generation.world import Invoice, Payment

VARIANTS = ("plain", "partial_second", "partly_refunded")


def second_charge(b: WorldBuilder, invoice: Invoice) -> tuple[Payment, Payment]:
    """(first succeeded payment, a second succeeded one for the same invoice, later)."""
    assert b.draft is not None
    first = next(
        p for p in b.draft.payments if p.invoice_id == invoice.id and p.status == "succeeded"
    )
    second = b.pay(invoice, after=first.paid_at, status="succeeded")
    assert second is not None
    if b.rng.random() < 0.5:
        second.method = first.method
    return first, second


def kept_form(b: WorldBuilder, victim: Invoice, total: int) -> bool:
    """World v6, L2/L3: the second charge kept as account credit that billing never applied
    (at `KEPT_FAULT_RATE`, the look-alike making up the class's share of kept credits), where
    the invoices after it would have absorbed it all."""
    roll = b.rng.random()
    return (
        b.difficulty != "L1"
        and roll < KEPT_FAULT_RATE
        and absorbed_after(b, victim.issued_at) >= total
    )


def _kept_unapplied(
    b: WorldBuilder, story: Story, victim: Invoice, first: Payment, second: Payment, variant: str
) -> FaultOutcome:
    """The customer kept the second charge (less any refund) as account credit, and billing
    never applied it: every later invoice was charged in full, so the kept amount is owed."""
    assert b.draft is not None
    refunded = [p for p in b.draft.payments if p.id in b.fault_rows and p.status == "refunded"]
    kept = second.amount_cents - sum(p.amount_cents for p in refunded)
    b.fault_rows.clear()  # a twin keeps the charge: there billing applied the credit
    keep_as_credit(b, second, kept, applied=False)
    cur = victim.billed.currency
    summary = (
        f"Invoice {victim.id} was paid by {first.id} and again by {second.id}; the customer "
        f"kept {format_cents(kept)} {cur} of it as account credit (get_customer's "
        f"account_credit, payment {second.id}), but billing never applied it: the invoices "
        "issued after it were charged in full and list_payments shows no account_credit "
        f"payment drawn from {second.id}. The {format_cents(kept)} {cur} kept is owed back "
        "and refunded now."
    )
    evidence = [call("list_payments", customer_id=b.customer.id)]
    return FaultOutcome(
        label="duplicate_payment",
        story=story,
        focus=[victim],
        evidence=evidence,
        summary=summary,
        slots={
            "invoice_id": victim.id,
            "amount": format_cents(kept),
            "period": victim.billed.period_start,
        },
        variant=f"kept_unapplied_{variant}",
    )


def duplicate_payment(b: WorldBuilder) -> FaultOutcome:
    b.make_customer()
    story = unbilled_story(b)
    decorate_main(b, story)
    invoices = b.bill(story)
    victim = b.pick([inv for inv in invoices if inv.billed_amounts().total_cents > 0])
    first, second = second_charge(b, victim)
    b.fault_rows.append(second.id)
    variant = b.pick(VARIANTS)
    total = second.amount_cents
    cur = victim.billed.currency
    evidence = [call("list_payments", customer_id=b.customer.id, invoice_id=victim.id)]
    summary = (
        f"Invoice {victim.id} was paid twice: payments {first.id} and {second.id} both "
        f"succeeded for {format_cents(total)} {cur}."
    )
    if variant == "partial_second":  # the retried capture took part of the total
        second.amount_cents = total * b.rng.randint(25, 90) // 100
        total = second.amount_cents
        summary = (
            f"Invoice {victim.id} was paid in full by {first.id}, and {second.id} took another "
            f"{format_cents(total)} {cur} for it. That second payment is refunded."
        )
    elif variant == "partly_refunded":  # support returned part of it: the rest is derived
        refund = b.refund(second, total * b.rng.randint(20, 70) // 100)
        b.fault_rows.append(refund.id)
        owed = total - refund.amount_cents
        summary = (
            f"Invoice {victim.id} was paid in full by {first.id}, and {second.id} took another "
            f"{format_cents(total)} {cur} for it, of which {refund.id} refunded "
            f"{format_cents(refund.amount_cents)}: {format_cents(total)} − "
            f"{format_cents(refund.amount_cents)} = {format_cents(owed)} {cur} is still owed "
            "and is refunded now."
        )
        total = owed
    else:
        summary += f" The duplicate {format_cents(total)} is refunded."
    if kept_form(b, victim, total):  # kept as account credit, and billing never applied it
        return _kept_unapplied(b, story, victim, first, second, variant)
    traps = []
    focus = [victim]
    others = [inv for inv in invoices if inv is not victim and inv.billed_amounts().total_cents]
    if b.difficulty == "L3" and others and b.rng.random() < 0.25:  # near miss, refunded in full
        other = b.pick(others)
        _, again = second_charge(b, other)
        b.refund(again, again.amount_cents)
        focus.append(other)
        evidence.append(call("list_payments", customer_id=b.customer.id, invoice_id=other.id))
        summary += f" The second charge on {other.id} was refunded in full: nothing is owed."
        traps.append("refunded_duplicate_decoy")
    return FaultOutcome(
        label="duplicate_payment",
        story=story,
        focus=focus,
        evidence=evidence,
        summary=summary,
        slots={
            "invoice_id": victim.id,
            "amount": format_cents(total),
            "period": victim.billed.period_start,
        },
        traps=traps,
        variant=variant,
    )
