"""Setting a fault's records right, for counterfactual twins (`env.generation.twins`).

The generator builds the faulted world in full, with every draw of its rng, and only then
calls `set_right`: an invoice billed from a wrong input is billed again from its correct
inputs (its payments follow the bill, as `WorldBuilder.rebill` made them follow the wrong
one), an invoice that should never exist goes with its payments (or, where it carried the
proration of a change in the canceled period, becomes the closing invoice billing that alone),
the subscription row shows the cancellation billing never processed, and the rows a fault
added beside an invoice (`WorldBuilder.fault_rows`) go. Nothing else in the draft moves.
"""

from __future__ import annotations

from env.generation.faults.base import FaultOutcome, call, recompute
from env.generation.world import WorldDraft


def set_right(draft: WorldDraft, overcharges: dict[str, int], fault_rows: list[str]) -> None:
    """Sets right every record behind `overcharges` (the faulted world's truth)."""
    # a cancellation billing never processed (an unwarranted invoice, a dated end billed in
    # full) is processed in the twin: its row says canceled
    faulted = [draft.invoice(i).subscription_id for i in overcharges]
    for invoice_id in overcharges:
        invoice = draft.invoice(invoice_id)
        if invoice.correct is None:  # a correct billing system never issued it
            draft.invoices.remove(invoice)
            draft.payments = [p for p in draft.payments if p.invoice_id != invoice_id]
            draft.credit_notes = [n for n in draft.credit_notes if n.invoice_id != invoice_id]
        elif invoice.billed != invoice.correct:  # a closing invoice's too (`closing_inputs`)
            wrong = invoice.billed_amounts().total_cents
            invoice.billed = invoice.correct  # the one billing engine bills it again
            _follow(draft, invoice_id, wrong, invoice.billed_amounts().total_cents)
    draft.payments = [p for p in draft.payments if p.id not in fault_rows]
    for sub in draft.subscriptions:  # a cancellation billing never processed: processed now
        kinds = [e.type for e in sub.events]
        ended = "canceled" in kinds and "reactivated" not in kinds
        if sub.id in faulted and sub.status == "active" and ended:
            sub.status = "canceled"


def _follow(draft: WorldDraft, invoice_id: str, wrong: int, right: int) -> None:
    """The invoice's payments follow its new total: an attempt for the whole total is for the
    new one, parts (a split payment, a refunded second charge) scale with it, and what the
    succeeded payments net after refunds is the new total wherever it was the old one."""
    if right <= 0:  # nothing to collect (a closing invoice that only credits)
        draft.payments = [p for p in draft.payments if p.invoice_id != invoice_id]
        return
    payments = [p for p in draft.payments if p.invoice_id == invoice_id]
    net = sum(
        p.amount_cents * (1 if p.status == "succeeded" else -1)
        for p in payments
        if p.status in ("succeeded", "refunded")
    )
    for payment in payments:
        payment.amount_cents = payment.amount_cents * right // wrong
    succeeded = [p for p in payments if p.status == "succeeded"]
    if net == wrong and succeeded:  # rounding: the last succeeded part takes the remainder
        now = sum(
            p.amount_cents * (1 if p.status == "succeeded" else -1)
            for p in payments
            if p.status in ("succeeded", "refunded")
        )
        succeeded[-1].amount_cents += right - now


def twin_outcome(
    draft: WorldDraft, outcome: FaultOutcome, overcharges: dict[str, int]
) -> FaultOutcome:
    """The twin's verdict: `no_error`, with the investigation that finds nothing to credit:
    the invoices the fault touched, recomputed from their recorded inputs (difference 0), or
    their payments looked up. Its summary cites no number; the reference adds a fact of the
    disputed invoice (rewards/README.md G11.3)."""
    kept = {inv.id for inv in draft.invoices}
    focus = [inv for inv in outcome.focus if inv.id in kept]
    evidence = []
    for invoice_id in overcharges:
        if invoice_id not in kept:
            continue
        invoice = draft.invoice(invoice_id)
        if invoice not in focus:
            focus.append(invoice)
        evidence.append(recompute(invoice))
        evidence.append(call("list_payments", customer_id=draft.customer.id, invoice_id=invoice_id))
    summary = (
        "Every invoice in question recomputes to what was billed from its recorded inputs, and"
        " its payments match its total: nothing was overcharged."
    )
    return FaultOutcome(
        label="no_error",
        story=outcome.story,
        focus=focus,
        evidence=evidence,
        summary=summary,
        slots=outcome.slots,
        variant=f"twin_of_{outcome.label}",
    )
