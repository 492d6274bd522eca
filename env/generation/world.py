"""The world draft: rows of one scenario's billing database before it is frozen to bytes.

The generator bills every invoice correctly (`correct` inputs), a fault then changes what was
billed (`billed` inputs, an extra payment, an invoice that should not exist); the truth is the
difference, computed by the one billing engine. `env.generation.freeze` writes the draft to
SQLite bytes.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Any

from env.engine.billing import BillingInputs, InvoiceAmounts, compute_invoice


@dataclass
class Customer:
    id: str
    name: str
    email: str
    company: str
    country: str
    region: str | None
    tax_jurisdiction: str
    timezone: str
    currency: str
    created_at: str
    exemption: tuple[str, str, str] | None = None  # certificate id, valid_from, valid_until
    notes: str = ""
    # a move on record: invoices issued before `jurisdiction_since` are taxed in the previous one
    previous_jurisdiction: str | None = None
    jurisdiction_since: str | None = None
    exemption_jurisdiction: str | None = None  # where the certificate applies (None: own)
    # a documented rate lock (world v5): (subscription_id, rate_date, issued_from, issued_until),
    # the subscription's invoices issued in the window convert at the rate of rate_date
    # (`env.engine.calendar.fx_rate_day`)
    fx_lock: tuple[str, str, str, str] | None = None
    # an overpayment kept as account credit (world v5): (payment_id, cents kept, kept_since);
    # world v6: billing applies it to the next invoices (`WorldDraft.balance_applications`),
    # as payments with these ids, unless `credit_applied` is False (a fault: never applied)
    kept_credit: tuple[str, int, str] | None = None
    credit_ids: tuple[str, ...] = ()
    credit_applied: bool = True
    # a committed seat minimum (world v5, `lookalikes_seats`): (subscription_id, seats,
    # periods_from, periods_until): its periods starting in the window bill at least the seats
    seat_commitment: tuple[str, int, str, str] | None = None


@dataclass
class Plan:
    id: str
    name: str
    per_seat: bool
    trial_days: int
    included_units: int
    overage_unit_price_cents: int
    unit_name: str | None
    prices: list[tuple[int, str, str | None]]  # (cents, effective_from, announced_at)
    interval: str = "month"


@dataclass
class Coupon:
    code: str
    percent_off: str | None
    amount_off_cents: int | None
    valid_from: str
    valid_until: str
    duration: str  # once | repeating | forever
    duration_periods: int | None


@dataclass
class Event:
    occurred_at: str  # UTC ISO timestamp
    type: str
    details: dict[str, Any]


@dataclass
class Subscription:
    id: str
    customer_id: str
    plan_id: str
    seats: int
    status: str
    started_at: str
    coupon_code: str | None = None
    events: list[Event] = field(default_factory=list)
    usage: list[tuple[str, str, int]] = field(default_factory=list)
    # (period_start, period_end, units, recorded_at, reason): `lookalikes_usage`
    usage_corrections: list[tuple[str, str, int, str, str]] = field(default_factory=list)
    anchor_day: int | None = None
    # (jurisdiction, until or None, reason): a service site of its own (`lookalikes_supply`)
    supply_site: tuple[str, str | None, str] | None = None


@dataclass
class Invoice:
    id: str
    customer_id: str
    subscription_id: str
    issued_at: str
    correct: BillingInputs | None  # None: this invoice should never have been issued
    billed: BillingInputs
    status: str = "paid"
    memo: str = ""

    def billed_amounts(self) -> InvoiceAmounts:
        return _amounts(self.billed)

    def correct_total_cents(self) -> int:
        return 0 if self.correct is None else _amounts(self.correct).total_cents


@lru_cache(maxsize=256)
def _amounts(inputs: BillingInputs) -> InvoiceAmounts:
    """The engine is pure and inputs are frozen: a draft asks for each invoice ~5 times."""
    return compute_invoice(inputs)


@dataclass
class Payment:
    id: str
    invoice_id: str
    customer_id: str
    amount_cents: int
    currency: str
    paid_at: str
    method: str
    status: str = "succeeded"
    applied_from: str | None = None  # a kept balance's application: the overpayment it draws on


BALANCE_METHOD = "account_credit"  # a payment drawn from the customer's kept balance


def scaled_payments(payments: list[Payment], was: int, now: int) -> list[Payment]:
    """Copies of one invoice's payments for an amount due of `now` instead of `was`: every
    attempt scaled (a split payment's parts, a refunded second charge alike), the last
    succeeded one taking the rounding so that what they net is `now` where it was `was`;
    none where nothing is due."""
    if now <= 0:
        return []
    out = [replace(p, amount_cents=p.amount_cents * now // was) for p in payments]
    net = sum(_signed(p) for p in payments)
    succeeded = [p for p in out if p.status == "succeeded"]
    if net == was and succeeded:
        succeeded[-1].amount_cents += now - sum(_signed(p) for p in out)
    return out


def _signed(payment: Payment) -> int:
    return {"succeeded": 1, "refunded": -1}.get(payment.status, 0) * payment.amount_cents


@dataclass
class CreditNote:
    """A credit note issued before the dispute (by support, not by an episode)."""

    id: str
    invoice_id: str
    amount_cents: int
    currency: str
    reason: str
    created_at: str
    status: str = "issued"


@dataclass
class WorldDraft:
    customer: Customer
    plans: list[Plan] = field(default_factory=list)
    coupons: list[Coupon] = field(default_factory=list)
    subscriptions: list[Subscription] = field(default_factory=list)
    tax_rates: list[tuple[str, str, str, str | None]] = field(default_factory=list)
    fx_rates: list[tuple[str, str, str, str]] = field(
        default_factory=list
    )  # date, base, quote, rate
    invoices: list[Invoice] = field(default_factory=list)
    payments: list[Payment] = field(default_factory=list)
    credit_notes: list[CreditNote] = field(default_factory=list)
    dispute: tuple[str, str, str] | None = None  # id, opened_at, message

    def invoice(self, invoice_id: str) -> Invoice:
        return next(inv for inv in self.invoices if inv.id == invoice_id)

    def subscription(self, subscription_id: str) -> Subscription:
        return next(sub for sub in self.subscriptions if sub.id == subscription_id)

    def balance_applications(self, *, applied: bool | None = None) -> list[tuple[Invoice, int]]:
        """(invoice, cents) a kept account balance pays (world v6, design §1.1): the customer's
        invoices issued after the overpayment, in issue order, each up to its total, until the
        balance is used. `applied`: as billing should (True), as it did (None: the customer's
        `credit_applied`), or not at all."""
        kept = self.customer.kept_credit
        applied = self.customer.credit_applied if applied is None else applied
        source = next((p for p in self.payments if kept and p.id == kept[0]), None)
        if kept is None or not applied or source is None:
            return []
        balance, out = kept[1], []
        for invoice in sorted(self.invoices, key=lambda i: (i.issued_at, i.id)):
            total = invoice.billed_amounts().total_cents
            if invoice.issued_at > source.paid_at and total > 0 and balance > 0:
                out.append((invoice, min(balance, total)))
                balance -= out[-1][1]
        return out

    def recorded_payments(self) -> list[Payment]:
        """The payments as the database records them (world v6): each invoice a kept balance
        pays gets an `account_credit` payment for that part, at its issue; what was charged
        for it covers the rest (each attempt scaled, none where the balance paid it all)."""
        applied = self.balance_applications()
        if not applied:
            return list(self.payments)
        kept = self.customer.kept_credit
        assert kept is not None and len(self.customer.credit_ids) >= len(applied)
        out = []
        for (invoice, cents), payment_id in zip(applied, self.customer.credit_ids, strict=False):
            total = invoice.billed_amounts().total_cents
            charged = [p for p in self.payments if p.invoice_id == invoice.id]
            out += scaled_payments(charged, total, total - cents)
            out.append(
                Payment(
                    payment_id, invoice.id, invoice.customer_id, cents,
                    invoice.billed.currency, invoice.issued_at, BALANCE_METHOD,
                    applied_from=kept[0],
                )
            )  # fmt: skip
        paid = {inv.id for inv, _ in applied}
        out += [p for p in self.payments if p.invoice_id not in paid]
        return sorted(out, key=lambda p: (p.paid_at, p.id))

    def _not_owed(self, invoice: Invoice) -> int:
        """Of this invoice's overpayment, what is no overcharge (world v5/v6): a kept balance,
        less what billing should have applied to later invoices and did not."""
        kept = self.customer.kept_credit
        if kept is None or not any(
            p.id == kept[0] and p.invoice_id == invoice.id for p in self.payments
        ):
            return 0
        should = sum(c for _, c in self.balance_applications(applied=True))
        done = sum(c for _, c in self.balance_applications())
        return kept[1] - should + done

    def overcharges(self) -> dict[str, int]:
        """Per invoice: billed minus correct, plus any net payment (succeeded minus refunded)
        beyond the total, minus what earlier credit notes already returned."""
        result: dict[str, int] = {}
        payments = self.recorded_payments()
        for inv in self.invoices:
            billed = inv.billed_amounts().total_cents
            over = billed - inv.correct_total_cents()
            paid = sum(
                p.amount_cents * (1 if p.status == "succeeded" else -1)
                for p in payments
                if p.invoice_id == inv.id and p.status in ("succeeded", "refunded")
            )
            over += max(0, paid - billed - self._not_owed(inv))
            if over <= 0:  # a goodwill credit on a correct invoice is no overcharge
                continue
            over -= sum(n.amount_cents for n in self.credit_notes if n.invoice_id == inv.id)
            if over != 0:
                result[inv.id] = over
        return result
