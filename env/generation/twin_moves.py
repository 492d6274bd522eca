"""Moved twins: the same fault on a different invoice of the same world.

Where a fault is one wrong input on one invoice (seats, tax rate, a missing exemption or
coupon), the moved twin sets that invoice right (`twin_repair.set_right`) and bills the same
wrong input on the first other invoice of the subscription whose correct inputs hold the same
right value and which the wrong value overcharges: a policy that follows the evidence finds
it there; one that follows the complaint looks where the complaint points. Other classes
(a charge that should not exist, a date, a proration) have no such invoice: None.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from env.engine.billing import BillingInputs
from env.engine.money import format_cents, format_rate
from env.generation.faults.base import recompute
from env.generation.world import Invoice, WorldDraft
from env.scenario import ToolCall

# the input fields a fault may have billed wrong that a recompute override can set right
MOVABLE = ("seats", "tax_rate", "tax_jurisdiction", "tax_exempt", "coupon")


def wrong_fields(invoice: Invoice) -> dict[str, Any] | None:
    """The fields billed differently from the correct inputs, when all of them are movable."""
    if invoice.correct is None:
        return None
    fields = BillingInputs.__dataclass_fields__
    wrong = {
        name: getattr(invoice.billed, name)
        for name in fields
        if getattr(invoice.billed, name) != getattr(invoice.correct, name)
    }
    if not wrong or any(name not in MOVABLE for name in wrong):
        return None
    return wrong


def override(invoice: Invoice, wrong: dict[str, Any]) -> dict[str, Any]:
    """The recompute arguments that bill `invoice` from its right value again."""
    right = invoice.correct
    assert right is not None
    args: dict[str, Any] = {}
    if "seats" in wrong:
        args["seats"] = right.seats
    if "tax_rate" in wrong or "tax_jurisdiction" in wrong:
        args["tax_rate"] = format_rate(right.tax_rate)
    if "tax_exempt" in wrong:
        args["tax_exempt"] = right.tax_exempt
    if "coupon" in wrong:
        if right.coupon is None:
            return {}
        args["coupon_code"] = right.coupon.code
    return args


def move_fault(
    draft: WorldDraft, victim: Invoice, wrong: dict[str, Any], focus: list[Invoice]
) -> tuple[Invoice, ToolCall] | None:
    """Bills `wrong` (the fault's wrong input on `victim`, read before the draft was set
    right) on another invoice. Returns (the new victim, the recompute that shows its
    overcharge), or None."""
    if not override(victim, wrong):
        return None
    assert victim.correct is not None
    seen = {inv.id for inv in focus} | {victim.id}
    for other in draft.invoices:
        right = other.correct
        if other.id in seen or right is None or other.billed != right:
            continue
        if other.subscription_id != victim.subscription_id or not _plain(draft, other):
            continue
        if any(getattr(right, name) != getattr(victim.correct, name) for name in wrong):
            continue
        before = other.billed_amounts().total_cents
        other.billed = replace(right, **wrong)
        after = other.billed_amounts().total_cents
        if after <= before:
            other.billed = right
            continue
        for payment in draft.payments:  # the payments follow the bill (`WorldBuilder.rebill`)
            if payment.invoice_id == other.id and payment.amount_cents == before:
                payment.amount_cents = after
        return other, recompute(other, **override(other, wrong))
    return None


def _plain(draft: WorldDraft, invoice: Invoice) -> bool:
    """No credit note on it and one succeeded payment of its total (no second charge, split or
    kept credit): its overcharge is then what a recompute's difference shows."""
    if any(n.invoice_id == invoice.id for n in draft.credit_notes):
        return False
    paid = [p for p in draft.payments if p.invoice_id == invoice.id and p.status != "failed"]
    total = invoice.billed_amounts().total_cents
    kept = draft.customer.kept_credit
    if kept is not None and any(p.id == kept[0] for p in paid):
        return False
    return len(paid) == 1 and paid[0].status == "succeeded" and paid[0].amount_cents == total


def moved_summary(invoice: Invoice, cents: int) -> str:
    return (
        f"Invoice {invoice.id} was billed from a wrong input: recomputed with the value its"
        f" records give, it was overcharged {format_cents(cents)} {invoice.billed.currency},"
        " credited."
    )
