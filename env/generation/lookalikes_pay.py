"""Payment and fx look-alikes (world v4, design §1.2): legitimate causes of the signals that
`duplicate_payment` and `currency_conversion_error` leave, drawn in every class.

- A second charge that support already made good with a credit note (not a refund row): the
  payments net of refunds exceed the invoice total, exactly as for a duplicate, but the
  invoice's `amount_credited` (`get_invoice`) and the credit note show it was returned. The
  world's truth (`WorldDraft.overcharges`) nets earlier credits, so nothing is owed.
- An fx rate high in the table's usual band (`fx_high_rate`): the fault's near miss and its
  wrong rates stay inside the band every class's rates come from, so a high recorded rate
  gives no class away.

Both are drawn independently of the label, from `b.rng` in a fixed order.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from fractions import Fraction

from env.generation.builder import FX_BAND_BP, WorldBuilder
from env.generation.changes import earlier_credit
from env.generation.world import Invoice, Payment

CREDITED_SECOND_CHARGE_RATE = 0.35  # of L2/L3 scenarios: a second charge returned as a credit
PARTIAL_SHARE = 0.5  # of those, a second charge for part of the total (the fault's partial form)
FX_BAND = Fraction(FX_BAND_BP, 10000)  # `WorldBuilder.fx_on` draws rates within it


def credited_second_charge(b: WorldBuilder, safe: list[Invoice]) -> Invoice | None:
    """A second succeeded charge on a correctly billed invoice, returned days later by a credit
    note for exactly that charge (support's reasons, shared with the goodwill credits): net
    payments exceed the total, the credit note balances them. Returns the invoice, if any."""
    assert b.draft is not None
    if b.difficulty == "L1" or b.rng.random() >= CREDITED_SECOND_CHARGE_RATE:
        return None
    draft = b.draft
    plain = [
        inv
        for inv in safe
        if not any(p.invoice_id == inv.id and p.status == "refunded" for p in draft.payments)
    ]
    if not plain:
        return None
    invoice = b.pick(plain)
    again = _second_charge(b, invoice)
    if b.rng.random() < PARTIAL_SHARE:  # a retried capture for part of the total
        again.amount_cents = again.amount_cents * b.rng.randint(25, 90) // 100
    earlier_credit(b, invoice, again.amount_cents, again.paid_at, "second_charge")
    return invoice


KEPT_SECOND_CHARGE_RATE = 0.35  # of L2/L3 scenarios: a second charge kept as account credit
# of those in `duplicate_payment`, the fault's own: the victim's second charge kept and never
# applied (`faults.payments`); the look-alike's rate there makes up the rest, so an account
# credit is as common in that class as in any other
KEPT_FAULT_SHARE = 0.5
KEPT_FAULT_RATE = KEPT_SECOND_CHARGE_RATE * KEPT_FAULT_SHARE
KEPT_RATE_BESIDE_FAULT = (KEPT_SECOND_CHARGE_RATE - KEPT_FAULT_RATE) / (1 - KEPT_FAULT_RATE)
CREDIT_IDS = 8  # payment ids reserved for a kept balance's applications


def kept_second_charge(
    b: WorldBuilder, safe: list[Invoice], avoid: list[Invoice]
) -> Invoice | None:
    """World v5/v6, same shape as `duplicate_payment`: a second succeeded charge on a correctly
    billed invoice, in the fault's three sizes (the whole total, a retried capture for part of
    it, the whole less a partial refund), which the customer asked to keep as account credit
    (`get_customer`'s `account_credit`: the payment and the amount kept), on an invoice with
    later ones: billing applies it to them (`WorldDraft.balance_applications`, the separator:
    `list_payments`' `account_credit` rows). Nothing is owed."""
    assert b.draft is not None
    rate = KEPT_RATE_BESIDE_FAULT if b.label == "duplicate_payment" else KEPT_SECOND_CHARGE_RATE
    busy = {i.id for i in avoid} | {n.invoice_id for n in b.draft.credit_notes}
    later = [
        i
        for i in safe
        if absorbed_after(b, i.issued_at) > 0
        and not busy & {r.id for r in reached_by(b, i.issued_at, i.billed_amounts().total_cents)}
    ]
    if b.difficulty == "L1" or not later or b.rng.random() >= rate:
        return None
    if b.customer.kept_credit is not None:  # the fault's own kept charge (rate above)
        return None
    invoice = b.pick(later)
    again = _second_charge(b, invoice)
    kept = kept_size(b, again)
    if busy & {r.id for r in reached_by(b, again.paid_at, kept)}:  # it landed late: refunded
        b.refund(again, kept)
        return None
    keep_as_credit(b, again, kept)
    return invoice


def reached_by(b: WorldBuilder, after: str, amount: int) -> list[Invoice]:
    """The invoices a balance of `amount` kept at `after` pays (the rule of
    `WorldDraft.balance_applications`): those issued after it, in order, until it is used.
    No other payment-level look-alike sits on them: a second charge credited back is sized
    on what was charged (`background_payments.decorate_payments`)."""
    assert b.draft is not None
    reached = []
    for invoice in sorted(b.draft.invoices, key=lambda i: (i.issued_at, i.id)):
        total = invoice.billed_amounts().total_cents
        if amount > 0 and invoice.issued_at > after and total > 0:
            reached.append(invoice)
            amount -= total
    return reached


def kept_reach(b: WorldBuilder) -> set[str]:
    """The invoices the customer's kept balance pays (or, never applied, should pay)."""
    assert b.draft is not None
    kept = b.customer.kept_credit
    source = [p for p in b.draft.payments if kept is not None and p.id == kept[0]]
    if kept is None or not source:
        return set()
    return {i.id for i in reached_by(b, source[0].paid_at, kept[1])}


def kept_size(b: WorldBuilder, again: Payment) -> int:
    """How much of a second charge the customer keeps, in the fault's three sizes: all of it,
    a retried capture for part of the total, or what a partial refund left."""
    form = b.pick(("plain", "partial_second", "partly_refunded"))
    kept = again.amount_cents
    if form == "partial_second":
        again.amount_cents = kept = again.amount_cents * b.rng.randint(25, 90) // 100
    elif form == "partly_refunded":
        kept -= b.refund(again, kept * b.rng.randint(20, 70) // 100).amount_cents
    return kept


def keep_as_credit(b: WorldBuilder, again: Payment, kept: int, *, applied: bool = True) -> None:
    """The customer keeps `kept` of the payment `again` as account credit; billing applies it
    to the next invoices (`applied=False`: the fault, it never did)."""
    b.customer.kept_credit = (again.id, kept, again.paid_at[:10])
    b.customer.credit_ids = tuple(b.new_id("PAY") for _ in range(CREDIT_IDS))
    b.customer.credit_applied = applied


def absorbed_after(b: WorldBuilder, stamp: str) -> int:
    """The totals of the invoices issued a week or more after `stamp`: what a balance kept
    then would surely be applied to (a second charge lands within days of its invoice)."""
    assert b.draft is not None
    week = (datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ") + timedelta(days=7)).strftime(
        "%Y-%m-%dT%H:%M:%SZ"
    )
    return sum(i.billed_amounts().total_cents for i in b.draft.invoices if i.issued_at > week)


def _second_charge(b: WorldBuilder, invoice: Invoice) -> Payment:
    """A second succeeded capture after the invoice's last one, half the time by its method."""
    last = _last_succeeded(b, invoice)
    again = b.pay(invoice, after=last.paid_at, status="succeeded")
    assert again is not None
    if b.rng.random() < 0.5:
        again.method = last.method
    return again


def _last_succeeded(b: WorldBuilder, invoice: Invoice) -> Payment:
    assert b.draft is not None
    return [p for p in b.draft.payments if p.invoice_id == invoice.id and p.status == "succeeded"][
        -1
    ]


def fx_high_rate(b: WorldBuilder, base: Fraction) -> Fraction:
    """A real rate at the top of the usual band (3-4 % above the base): unusually high for the
    customer, but a rate every class's table may hold (`WorldBuilder.fx_on`)."""
    return base * (1 + Fraction(b.rng.randint(300, 400), 10000))


def fx_band_top(base: Fraction) -> Fraction:
    """The highest rate the table's usual band holds for a currency with this base."""
    return base * (1 + FX_BAND)
