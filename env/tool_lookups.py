"""Read-side queries behind the tools: parameterised SQL, one shape per result.

Kept apart from `env.tools` so the tool class reads as the agent's table of contents.
Every lookup raises `NotFound` / `InvalidArgument` with the accepted form in the message.
"""

from __future__ import annotations

import json
import re
import sqlite3
from datetime import date
from fractions import Fraction
from typing import Any

from env.engine.billing import BillingInputs, CouponTerms, InvoiceAmounts, PlanTerms
from env.engine.money import format_cents, format_rate, parse_rate
from env.tool_errors import InvalidArgument, NotFound

_DAY = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_ID = {"CUS": "CUS-4Q2P9A", "INV": "INV-7F3K2Q", "SUB": "SUB-8K2M4T", "PLN": "PLN-BASIC"}


def parse_day(text: str, name: str) -> date:
    if not _DAY.match(text):
        raise InvalidArgument(f"{name} {text[:40]!r} is not a date in the form YYYY-MM-DD")
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise InvalidArgument(f"{name} {text!r} is not a real calendar date") from None


def _missing(kind: str, value: str) -> NotFound:
    prefix = _ID[kind]
    return NotFound(f"no {kind.lower()} record with id {value[:60]!r}; ids look like '{prefix}'")


class Lookups:
    def __init__(self, connection: sqlite3.Connection) -> None:
        self.connection = connection

    def _one(self, sql: str, args: tuple[Any, ...]) -> sqlite3.Row | None:
        return self.connection.execute(sql, args).fetchone()

    def customer_record(self, customer_id: str) -> dict[str, Any]:
        row = self._one("SELECT * FROM customers WHERE id = ?", (customer_id,))
        if row is None:
            raise _missing("CUS", customer_id)
        certificate = None
        if row["exemption_certificate_id"]:
            certificate = {
                "certificate_id": row["exemption_certificate_id"],
                "valid_from": row["exemption_valid_from"],
                "valid_until": row["exemption_valid_until"],
                "jurisdiction": row["exemption_jurisdiction"],
            }
        subscriptions = [
            r[0]
            for r in self.connection.execute(
                "SELECT id FROM subscriptions WHERE customer_id = ? ORDER BY started_at, id",
                (customer_id,),
            )
        ]
        return {
            "customer_id": row["id"],
            "name": row["name"],
            "email": row["email"],
            "company": row["company"],
            "country": row["country"],
            "region": row["region"],
            "tax_jurisdiction": row["tax_jurisdiction"],
            "previous_tax_jurisdiction": row["previous_tax_jurisdiction"],
            "tax_jurisdiction_since": row["tax_jurisdiction_since"],
            "fx_rate_lock": _fx_lock(row),
            "account_credit": _account_credit(row),
            "seat_commitment": _seat_commitment(row),
            "timezone": row["timezone"],
            "currency": row["currency"],
            "exemption_certificate": certificate,
            "subscription_ids": subscriptions,
            "notes": row["notes"],
        }

    def invoice_summaries(
        self, customer_id: str, status: str | None, start: str | None, end: str | None
    ) -> dict[str, Any]:
        if self._one("SELECT 1 FROM customers WHERE id = ?", (customer_id,)) is None:
            raise _missing("CUS", customer_id)
        if status is not None and status not in ("paid", "open", "void"):
            raise InvalidArgument(f"status {status[:20]!r} is not one of 'paid', 'open', 'void'")
        low = parse_day(start, "period_from").isoformat() if start else "0000-01-01"
        high = parse_day(end, "period_to").isoformat() if end else "9999-12-31"
        rows = self.connection.execute(
            "SELECT id, subscription_id, period_start, period_end, issued_at, currency, "
            "total_cents, status FROM invoices WHERE customer_id = ? AND period_start >= ? "
            "AND period_start <= ? AND (? IS NULL OR status = ?) "
            "ORDER BY period_start, issued_at, id",  # a zero trial invoice before its charge
            (customer_id, low, high, status, status),
        )
        return {
            "customer_id": customer_id,
            "invoices": [
                {
                    "invoice_id": r[0],
                    "subscription_id": r[1],
                    "period_start": r[2],
                    "period_end": r[3],
                    "issued_at": r[4],
                    "currency": r[5],
                    "total": format_cents(r[6]),
                    "status": r[7],
                }
                for r in rows
            ],
        }

    def invoice_row(self, invoice_id: str) -> sqlite3.Row:
        row = self._one("SELECT * FROM invoices WHERE id = ?", (invoice_id,))
        if row is None:
            raise _missing("INV", invoice_id)
        return row

    def credited_cents(self, invoice_id: str) -> int:
        row = self._one(
            "SELECT COALESCE(SUM(amount_cents), 0) FROM credit_notes WHERE invoice_id = ?",
            (invoice_id,),
        )
        return int(row[0]) if row else 0

    def credit_note_count(self) -> int:
        row = self._one("SELECT COUNT(*) FROM credit_notes", ())
        return int(row[0]) if row else 0

    @staticmethod
    def amounts_view(amounts: InvoiceAmounts, inputs: BillingInputs) -> dict[str, Any]:
        return {
            "lines": [
                {
                    "description": line.description,
                    "quantity": line.quantity,
                    "amount": format_cents(line.amount_cents),
                }
                for line in amounts.lines
            ],
            "subtotal": format_cents(amounts.subtotal_cents),
            "discount": format_cents(amounts.discount_cents),
            "tax": {
                "jurisdiction": inputs.tax_jurisdiction,
                "rate": format_rate(inputs.tax_rate),
                "exempt": inputs.tax_exempt,
                "amount": format_cents(amounts.tax_cents),
            },
            "total": format_cents(amounts.total_cents),
        }

    def invoice_detail(self, invoice_id: str) -> dict[str, Any]:
        row = self.invoice_row(invoice_id)
        lines = self.connection.execute(
            "SELECT description, quantity, amount_cents FROM invoice_lines WHERE invoice_id = ? "
            "ORDER BY line_no",
            (invoice_id,),
        ).fetchall()
        inputs = json.loads(row["inputs"])
        paid = self._one(
            "SELECT COALESCE(SUM(CASE status WHEN 'succeeded' THEN amount_cents "
            "WHEN 'refunded' THEN -amount_cents ELSE 0 END), 0), COALESCE(SUM(CASE WHEN "
            "applied_from IS NOT NULL AND status = 'succeeded' THEN amount_cents ELSE 0 END), 0) "
            "FROM payments WHERE invoice_id = ?",
            (invoice_id,),
        )
        notes = self.connection.execute(
            "SELECT id, amount_cents, reason, status FROM credit_notes WHERE invoice_id = ? "
            "ORDER BY id",
            (invoice_id,),
        ).fetchall()
        return {
            "invoice_id": row["id"],
            "customer_id": row["customer_id"],
            "subscription_id": row["subscription_id"],
            "period_start": row["period_start"],
            "period_end": row["period_end"],
            "issued_at": row["issued_at"],
            "currency": row["currency"],
            "status": row["status"],
            "memo": row["memo"],
            "billing_inputs": inputs,
            "lines": [
                {"description": d, "quantity": q, "amount": format_cents(a)} for d, q, a in lines
            ],
            "subtotal": format_cents(row["subtotal_cents"]),
            "discount": format_cents(row["discount_cents"]),
            "tax": {
                "jurisdiction": inputs["tax_jurisdiction"],
                "rate": inputs["tax_rate"],
                "exempt": inputs["tax_exempt"],
                "amount": format_cents(row["tax_cents"]),
            },
            "total": format_cents(row["total_cents"]),
            "amount_paid": format_cents(int(paid[0]) if paid else 0),
            "balance_applied": format_cents(int(paid[1]) if paid else 0),
            "amount_credited": format_cents(sum(n[1] for n in notes)),
            "credit_notes": [
                {
                    "credit_note_id": n[0],
                    "amount": format_cents(n[1]),
                    "reason": n[2],
                    "status": n[3],
                }
                for n in notes
            ],
        }

    def payment_list(self, customer_id: str, invoice_id: str | None) -> dict[str, Any]:
        if self._one("SELECT 1 FROM customers WHERE id = ?", (customer_id,)) is None:
            raise _missing("CUS", customer_id)
        if invoice_id is not None:
            self.invoice_row(invoice_id)
        rows = self.connection.execute(
            "SELECT id, invoice_id, amount_cents, currency, paid_at, method, status, applied_from "
            "FROM payments WHERE customer_id = ? AND (? IS NULL OR invoice_id = ?) "
            "ORDER BY paid_at, id",
            (customer_id, invoice_id, invoice_id),
        )
        return {
            "customer_id": customer_id,
            "payments": [
                {
                    "payment_id": r[0],
                    "invoice_id": r[1],
                    "amount": format_cents(r[2]),
                    "currency": r[3],
                    "paid_at": r[4],
                    "method": r[5],
                    "status": r[6],
                    "applied_from": r[7],
                }
                for r in rows
            ],
        }

    def timeline(self, subscription_id: str) -> dict[str, Any]:
        sub = self._one("SELECT * FROM subscriptions WHERE id = ?", (subscription_id,))
        if sub is None:
            raise _missing("SUB", subscription_id)
        plan = self._one("SELECT * FROM plans WHERE id = ?", (sub["plan_id"],))
        if plan is None:
            raise NotFound(f"subscription {subscription_id} refers to a missing plan")
        prices = self.connection.execute(
            "SELECT unit_price_cents, effective_from, announced_at FROM plan_prices "
            "WHERE plan_id = ? ORDER BY effective_from",
            (sub["plan_id"],),
        ).fetchall()
        usage = self.connection.execute(
            "SELECT period_start, period_end, units FROM usage_records WHERE subscription_id = ? "
            "ORDER BY period_start",
            (subscription_id,),
        ).fetchall()
        corrections = self.connection.execute(
            "SELECT period_start, period_end, units, recorded_at, reason FROM usage_corrections "
            "WHERE subscription_id = ? ORDER BY period_start",
            (subscription_id,),
        ).fetchall()
        events = self.connection.execute(
            "SELECT occurred_at, type, details FROM subscription_events "
            "WHERE subscription_id = ? ORDER BY seq",
            (subscription_id,),
        ).fetchall()
        site = self._one(
            "SELECT jurisdiction, until, reason FROM supply_sites WHERE subscription_id = ?",
            (subscription_id,),
        )
        return {
            "subscription_id": sub["id"],
            "customer_id": sub["customer_id"],
            "status": sub["status"],
            "seats": sub["seats"],
            "started_at": sub["started_at"],
            "plan": {
                "plan_id": plan["id"],
                "name": plan["name"],
                "interval": plan["interval"],
                "pricing": plan["pricing"],
                "trial_days": plan["trial_days"],
                "included_units": plan["included_units"],
                "overage_unit_price": format_cents(plan["overage_unit_price_cents"]),
                "unit_name": plan["unit_name"],
                "price_history": [
                    {"unit_price": format_cents(p[0]), "effective_from": p[1], "announced_at": p[2]}
                    for p in prices
                ],
            },
            "coupon": self._coupon_view(sub["coupon_code"]),
            "usage": [{"period_start": u[0], "period_end": u[1], "units": u[2]} for u in usage],
            "usage_corrections": [  # contract v5: units added to a period after its first count
                {
                    "period_start": c[0],
                    "period_end": c[1],
                    "units": c[2],
                    "recorded_at": c[3],
                    "reason": c[4],
                }
                for c in corrections
            ],
            # contract v6: a service site of its own, where invoices issued before `until`
            # (null: still there) are taxed instead of the customer's jurisdiction; null: none
            "place_of_supply": None
            if site is None
            else {"jurisdiction": site[0], "until": site[1], "reason": site[2]},
            "events": [
                {"occurred_at": e[0], "type": e[1], "details": json.loads(e[2])} for e in events
            ],
        }

    def _coupon_view(self, code: str | None) -> dict[str, Any] | None:
        if not code:
            return None
        row = self._one("SELECT * FROM coupons WHERE code = ?", (code,))
        if row is None:
            return None
        return {
            "code": row["code"],
            "percent_off": row["percent_off"],
            "amount_off": None
            if row["amount_off_cents"] is None
            else format_cents(row["amount_off_cents"]),
            "valid_from": row["valid_from"],
            "valid_until": row["valid_until"],
            "duration": row["duration"],
            "duration_periods": row["duration_periods"],
        }

    def tax_rate_on(self, jurisdiction: str, day: date) -> dict[str, Any]:
        row = self._one(
            "SELECT rate, effective_from, effective_to FROM tax_rates WHERE jurisdiction = ? "
            "AND effective_from <= ? AND (effective_to IS NULL OR effective_to > ?) "
            "ORDER BY effective_from DESC",
            (jurisdiction, day.isoformat(), day.isoformat()),
        )
        if row is None:
            known = [
                r[0]
                for r in self.connection.execute(
                    "SELECT DISTINCT jurisdiction FROM tax_rates ORDER BY jurisdiction"
                )
            ]
            if jurisdiction not in known:
                raise NotFound(
                    f"unknown jurisdiction {jurisdiction[:20]!r}; known: {', '.join(known)}"
                )
            raise NotFound(f"no {jurisdiction} tax rate recorded for {day.isoformat()}")
        return {
            "jurisdiction": jurisdiction,
            "date": day.isoformat(),
            "rate": row[0],
            "effective_from": row[1],
            "effective_to": row[2],
        }

    def plan_terms(self, plan_id: str, on: date) -> PlanTerms:
        plan = self._one("SELECT * FROM plans WHERE id = ?", (plan_id,))
        if plan is None:
            raise _missing("PLN", plan_id)
        price = self._one(
            "SELECT unit_price_cents FROM plan_prices WHERE plan_id = ? AND effective_from <= ? "
            "ORDER BY effective_from DESC",
            (plan_id, on.isoformat()),
        )
        if price is None:
            raise NotFound(f"plan {plan_id} had no price in force on {on.isoformat()}")
        return PlanTerms(
            plan_id=plan["id"],
            name=plan["name"],
            unit_price_cents=int(price[0]),
            per_seat=plan["pricing"] == "per_seat",
            included_units=plan["included_units"],
            overage_unit_price_cents=plan["overage_unit_price_cents"],
        )

    def coupon_terms(self, code: str) -> CouponTerms:
        row = self._one("SELECT * FROM coupons WHERE code = ?", (code,))
        if row is None:
            raise NotFound(f"no coupon with code {code[:40]!r}; see the subscription's coupon")
        percent = None if row["percent_off"] is None else parse_rate(row["percent_off"])
        return CouponTerms(
            code=row["code"], percent_off=percent, amount_off_cents=row["amount_off_cents"]
        )

    def fx_rate_on(self, currency: str, day: date) -> Fraction:
        if currency == "USD":
            return Fraction(1)
        row = self._one(
            "SELECT rate FROM fx_rates WHERE base = 'USD' AND quote = ? AND date = ?",
            (currency, day.isoformat()),
        )
        if row is None:
            dates = [
                r[0]
                for r in self.connection.execute(
                    "SELECT date FROM fx_rates WHERE base = 'USD' AND quote = ? ORDER BY date",
                    (currency,),
                )
            ]
            raise NotFound(
                f"no USD->{currency} rate recorded on {day.isoformat()}; dates with a rate: "
                + ", ".join(dates[:20])
            )
        return parse_rate(row[0])


def _fx_lock(row: sqlite3.Row) -> dict[str, str] | None:
    """A documented rate lock (contract v5): the subscription's invoices issued in
    [issued_from, issued_until) convert at the USD rate of rate_date; null when none."""
    if row["fx_rate_lock_date"] is None:
        return None
    return {
        "subscription_id": row["fx_rate_lock_subscription_id"],
        "rate_date": row["fx_rate_lock_date"],
        "issued_from": row["fx_rate_lock_from"],
        "issued_until": row["fx_rate_lock_until"],
    }


def _seat_commitment(row: sqlite3.Row) -> dict[str, Any] | None:
    """A committed seat minimum (contract v6): the subscription's invoices for periods starting
    in [periods_from, periods_until) bill at least `seats` seats; null when none."""
    if row["seat_commitment_seats"] is None:
        return None
    return {
        "subscription_id": row["seat_commitment_subscription_id"],
        "seats": int(row["seat_commitment_seats"]),
        "periods_from": row["seat_commitment_from"],
        "periods_until": row["seat_commitment_until"],
    }


def _account_credit(row: sqlite3.Row) -> dict[str, str] | None:
    """An overpayment kept as account credit (contract v5): the payment and the amount the
    customer keeps on account, not owed back; null when none."""
    if row["account_credit_payment_id"] is None:
        return None
    return {
        "payment_id": row["account_credit_payment_id"],
        "amount": format_cents(int(row["account_credit_cents"])),
        "since": row["account_credit_since"],
    }
