"""duplicate_payment: one invoice was paid twice (two succeeded payments)."""

from __future__ import annotations

from env.builder import WorldBuilder
from env.faults.base import FaultOutcome, call
from env.faults.common import main_subscription
from env.money import format_cents


def duplicate_payment(b: WorldBuilder) -> FaultOutcome:
    b.make_customer()
    story, invoices = main_subscription(b, metered=False)
    victim = b.pick(invoices)
    first = next(p for p in b.draft.payments if p.invoice_id == victim.id)  # type: ignore[union-attr]
    second = b.pay(victim, delay_days=b.rng.randint(0, 2))
    if b.rng.random() < 0.5:
        second.method = first.method
    traps = []
    if b.difficulty == "L3":  # near miss: a failed attempt and its retry on another invoice
        other = b.pick([inv for inv in invoices if inv is not victim] or [victim])
        failed = b.pay(other, delay_days=0)
        failed.status = "failed"
        traps.append("failed_retry_decoy")
    amount = format_cents(second.amount_cents)
    return FaultOutcome(
        label="duplicate_payment",
        story=story,
        focus=[victim],
        evidence=[call("list_payments", customer_id=b.customer.id, invoice_id=victim.id)],
        summary=(
            f"Invoice {victim.id} was paid twice: payments {first.id} and {second.id} both "
            f"succeeded for {amount} {victim.billed.currency}. The duplicate {amount} is refunded."
        ),
        slots={"invoice_id": victim.id, "amount": amount, "period": victim.billed.period_start},
        traps=traps,
    )
