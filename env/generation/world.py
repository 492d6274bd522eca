"""The world draft: rows of one scenario's billing database before it is frozen to bytes.

The generator bills every invoice correctly (`correct` inputs), a fault then changes what was
billed (`billed` inputs, an extra payment, an invoice that should not exist); the truth is the
difference, computed by the one billing engine. `freeze` writes the draft to SQLite bytes.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, field
from functools import cache, lru_cache
from importlib import resources
from typing import Any

from env.engine.billing import BillingInputs, InvoiceAmounts, compute_invoice
from env.engine.records import inputs_to_json


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
    # an overpayment kept as account credit (world v5): (payment_id, cents kept, kept_since)
    kept_credit: tuple[str, int, str] | None = None
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

    def _kept(self, invoice: Invoice) -> int:
        """What the customer keeps as account credit of this invoice's payments (world v5)."""
        kept = self.customer.kept_credit
        if kept is None:
            return 0
        return (
            kept[1]
            if any(p.id == kept[0] and p.invoice_id == invoice.id for p in self.payments)
            else 0
        )

    def overcharges(self) -> dict[str, int]:
        """Per invoice: billed minus correct, plus any net payment (succeeded minus refunded)
        beyond the total, minus what earlier credit notes already returned."""
        result: dict[str, int] = {}
        for inv in self.invoices:
            billed = inv.billed_amounts().total_cents
            over = billed - inv.correct_total_cents()
            paid = sum(
                p.amount_cents * (1 if p.status == "succeeded" else -1)
                for p in self.payments
                if p.invoice_id == inv.id and p.status in ("succeeded", "refunded")
            )
            over += max(0, paid - billed - self._kept(inv))
            if over <= 0:  # a goodwill credit on a correct invoice is no overcharge
                continue
            over -= sum(n.amount_cents for n in self.credit_notes if n.invoice_id == inv.id)
            if over != 0:
                result[inv.id] = over
        return result


@cache
def _schema() -> str:
    return resources.files("env.generation").joinpath("data/schema.sql").read_text(encoding="utf-8")


@cache
def _empty_image() -> bytes:
    """The schema alone, built once: parsing it for every scenario was half of `freeze`."""
    db = sqlite3.connect(":memory:")
    db.execute("PRAGMA page_size = 1024")  # small images: reset is a copy of these bytes
    db.executescript(_schema())
    image = db.serialize()
    db.close()
    return image


def freeze(draft: WorldDraft) -> bytes:
    """Writes the draft into a fresh in-memory SQLite database and returns its image."""
    db = sqlite3.connect(":memory:")
    db.deserialize(_empty_image())
    c = draft.customer
    cert = c.exemption or (None, None, None)
    db.execute(
        "INSERT INTO customers VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
        (
            c.id,
            c.name,
            c.email,
            c.company,
            c.country,
            c.region,
            c.tax_jurisdiction,
            c.timezone,
            c.currency,
            *cert,
            c.notes,
            c.created_at,
            c.previous_jurisdiction,
            c.jurisdiction_since,
            (c.exemption_jurisdiction or c.tax_jurisdiction) if c.exemption else None,
            *(c.fx_lock or (None, None, None, None)),
            *(c.kept_credit or (None, None, None)),
            *(c.seat_commitment or (None, None, None, None)),
        ),
    )
    for p in draft.plans:
        db.execute(
            "INSERT INTO plans VALUES (?,?,?,?,?,?,?,?)",
            (
                p.id,
                p.name,
                p.interval,
                "per_seat" if p.per_seat else "flat",
                p.trial_days,
                p.included_units,
                p.overage_unit_price_cents,
                p.unit_name,
            ),
        )
        db.executemany(
            "INSERT INTO plan_prices VALUES (?,?,?,?)", [(p.id, *price) for price in p.prices]
        )
    db.executemany(
        "INSERT INTO coupons VALUES (?,?,?,?,?,?,?)",
        [
            (
                k.code,
                k.percent_off,
                k.amount_off_cents,
                k.valid_from,
                k.valid_until,
                k.duration,
                k.duration_periods,
            )
            for k in draft.coupons
        ],
    )
    for s in draft.subscriptions:
        db.execute(
            "INSERT INTO subscriptions VALUES (?,?,?,?,?,?,?,?)",
            (
                s.id,
                s.customer_id,
                s.plan_id,
                s.seats,
                s.status,
                s.coupon_code,
                s.started_at,
                s.anchor_day,
            ),
        )
        db.executemany(
            "INSERT INTO subscription_events VALUES (?,?,?,?,?)",
            [
                (s.id, i + 1, e.occurred_at, e.type, json.dumps(e.details, sort_keys=True))
                for i, e in enumerate(s.events)
            ],
        )
        db.executemany("INSERT INTO usage_records VALUES (?,?,?,?)", [(s.id, *u) for u in s.usage])
        db.executemany(
            "INSERT INTO usage_corrections VALUES (?,?,?,?,?,?)",
            [(s.id, *u) for u in s.usage_corrections],
        )
        if s.supply_site is not None:
            db.execute("INSERT INTO supply_sites VALUES (?,?,?,?)", (s.id, *s.supply_site))
    db.executemany("INSERT INTO tax_rates VALUES (?,?,?,?)", draft.tax_rates)
    db.executemany("INSERT INTO fx_rates VALUES (?,?,?,?)", draft.fx_rates)
    for inv in draft.invoices:
        amounts = inv.billed_amounts()
        db.execute(
            "INSERT INTO invoices VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                inv.id,
                inv.customer_id,
                inv.subscription_id,
                inv.billed.period_start.isoformat(),
                inv.billed.period_end.isoformat(),
                inv.issued_at,
                inv.billed.currency,
                inv.status,
                inv.memo,
                inputs_to_json(inv.billed),
                amounts.subtotal_cents,
                amounts.discount_cents,
                amounts.tax_cents,
                amounts.total_cents,
            ),
        )
        db.executemany(
            "INSERT INTO invoice_lines VALUES (?,?,?,?,?)",
            [
                (inv.id, n + 1, line.description, line.quantity, line.amount_cents)
                for n, line in enumerate(amounts.lines)
            ],
        )
    db.executemany(
        "INSERT INTO payments VALUES (?,?,?,?,?,?,?,?)",
        [
            (
                p.id,
                p.invoice_id,
                p.customer_id,
                p.amount_cents,
                p.currency,
                p.paid_at,
                p.method,
                p.status,
            )
            for p in draft.payments
        ],
    )
    db.executemany(
        "INSERT INTO credit_notes VALUES (?,?,?,?,?,?,?,?)",
        [
            (n.id, n.invoice_id, n.amount_cents, n.currency, n.reason, n.status, None, n.created_at)
            for n in draft.credit_notes
        ],
    )
    if draft.dispute:
        db.execute(
            "INSERT INTO disputes VALUES (?,?,?,?)", (draft.dispute[0], c.id, *draft.dispute[1:])
        )
    db.commit()
    image = bytearray(db.serialize())
    db.close()
    # A deserialized database stamps its header's change counter (bytes 24-27) and
    # version-valid-for / library version (92-99) on commit; a plain :memory: one never did.
    # Zeroed, the image is byte-identical to one built from the schema script every time.
    image[24:28] = bytes(4)
    image[92:100] = bytes(8)
    return bytes(image)
