"""Setting a fault's records right, for counterfactual twins (`env.generation.twins`).

The generator builds the faulted world in full, with every draw of its rng, and only then
calls `set_right`: an invoice billed from a wrong input is billed again from its correct
inputs (its payments follow the bill, as `WorldBuilder.rebill` made them follow the wrong
one), an invoice that should never exist goes with its payments (or, where it carried the
proration of a change in the canceled period, becomes the closing invoice billing that alone),
the subscription row shows the cancellation billing never processed, the rows a fault
added beside an invoice (`WorldBuilder.fault_rows`) go, and a kept balance billing never
applied is applied (its applications follow, `WorldDraft.recorded_payments`). Nothing else in
the draft moves.
"""

from __future__ import annotations

from env.generation.faults.base import FaultOutcome, call, recompute
from env.generation.world import WorldDraft, scaled_payments


def set_right(
    draft: WorldDraft, overcharges: dict[str, int], fault_rows: list[str], ended: set[str]
) -> None:
    """Sets right every record behind `overcharges` (the faulted world's truth). `ended`: the
    subscriptions whose cancellation took effect by the dispute (a pending one stays active)."""
    # a cancellation billing never processed (an unwarranted invoice, a dated end billed in
    # full) is processed in the twin: its row says canceled once the service has ended
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
    draft.customer.credit_applied = True  # a kept balance billing never applied: applied
    for sub in draft.subscriptions:  # a cancellation billing never processed: processed now
        kinds = [e.type for e in sub.events]
        stopped = "canceled" in kinds and "reactivated" not in kinds
        if sub.id in faulted and sub.status == "active" and stopped and sub.id in ended:
            sub.status = "canceled"


def _follow(draft: WorldDraft, invoice_id: str, wrong: int, right: int) -> None:
    """The invoice's payments follow its new total (`world.scaled_payments`): parts scale with
    it, and what they net is the new total wherever it was the old one; none where the new
    total is nothing to collect (a closing invoice that only credits)."""
    mine = [p for p in draft.payments if p.invoice_id == invoice_id]
    others = [p for p in draft.payments if p.invoice_id != invoice_id]
    draft.payments = sorted(
        others + scaled_payments(mine, wrong, right), key=lambda p: (p.paid_at, p.id)
    )


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
