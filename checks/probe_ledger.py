"""A scenario's public database read once into plain Python: what the comparison checks read.

The checks of `checks.probe_comparisons` compare one record with its source of truth; each
would otherwise re-query SQLite, so the tables are loaded here once, dates read in the
customer's timezone (every billing rule is in local dates, design §1.1). Only the tables the
agent's tools read are loaded; the truth never is.
"""

from __future__ import annotations

import json
import sqlite3
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from fractions import Fraction
from typing import Any
from zoneinfo import ZoneInfo

from env.engine.calendar import add_months
from env.engine.money import parse_amount, parse_rate


@dataclass(frozen=True)
class Event:
    sub: str
    seq: int
    at: str  # UTC timestamp as stored
    day: date  # its local date
    type: str
    details: dict[str, Any]


@dataclass(frozen=True)
class Bill:
    """An invoice row with its recorded billing inputs parsed."""

    id: str
    sub: str
    start: date
    end: date
    issued_at: str
    issue_day: date  # local
    inputs: dict[str, Any]
    subtotal: int
    discount: int
    tax: int
    total: int
    lines: tuple[tuple[str, int, int], ...]

    def day(self, key: str) -> date | None:
        value = self.inputs.get(key)
        return None if value is None else date.fromisoformat(value)


@dataclass
class Ledger:
    customer: dict[str, Any]
    zone: ZoneInfo
    plans: dict[str, dict[str, Any]]
    prices: dict[str, list[tuple[str, int]]]  # plan -> (effective_from, cents), ascending
    coupons: dict[str, dict[str, Any]]
    subs: dict[str, dict[str, Any]]
    events: dict[str, list[Event]]  # subscription -> events by seq
    tax: dict[str, list[tuple[str, str | None, Fraction]]]  # jurisdiction -> (from, to, rate)
    fx: dict[tuple[str, str], Fraction]  # (quote currency, ISO date) -> rate per USD
    usage: dict[tuple[str, str], int]  # (subscription, ISO period_end) -> units
    invoices: list[Bill]
    payments: dict[str, list[tuple[int, str, str]]] = field(default_factory=dict)
    credits: dict[str, int] = field(default_factory=dict)  # invoice -> credit notes' sum
    opened: date | None = None  # the dispute's local day (the world's now)

    def local_day(self, stamp: str) -> date:
        moment = datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
        return moment.astimezone(self.zone).date()

    def of_type(self, sub: str, *types: str) -> list[Event]:
        return [e for e in self.events.get(sub, []) if e.type in types]

    def anchor(self, sub: str) -> date:
        return self.local_day(self.subs[sub]["started_at"])

    def next_start(self, sub: str, day: date) -> date:
        """The first period start of `sub` after local `day` (anchor day <= 28: no clipping)."""
        anchor = self.anchor(sub)
        k = max(0, (day.year - anchor.year) * 12 + day.month - anchor.month - 1)
        while add_months(anchor, k) <= day:
            k += 1
        return add_months(anchor, k)

    def tax_rate(self, jurisdiction: str, day: date) -> Fraction | None:
        iso = day.isoformat()
        rows = [r for r in self.tax.get(jurisdiction, []) if r[0] <= iso < (r[1] or "9999")]
        return max(rows)[2] if rows else None

    def unit_price(self, plan: str, day: date) -> int | None:
        rows = [cents for start, cents in self.prices.get(plan, []) if start <= day.isoformat()]
        return rows[-1] if rows else None

    # the timeline: what was in force on a local day

    def in_force(self, sub: str, day: date, kind: str, key: str) -> object:
        """The created event's `key`, then every change of `kind` that took effect by `day`.

        An immediate plan change takes effect on its local day; a scheduled one and a seat
        change at the next period start."""
        created = self.of_type(sub, "created")
        value = created[0].details.get(key) if created else None
        changes = []
        for e in self.of_type(sub, kind):
            effective = e.day if immediate(e) else self.next_start(sub, e.day)
            changes.append((effective, e.seq, e.details))
        for effective, _, details in sorted(changes, key=lambda c: (c[0], c[1])):
            if effective <= day:
                value = details.get("to_plan_id" if kind == "plan_changed" else "to_seats")
        return value

    def coupon_on(self, sub: str, day: date) -> str | None:
        """The coupon applied (and not removed) by local `day`."""
        code = None
        moves = self.of_type(sub, "coupon_applied", "coupon_removed")
        for e in sorted(moves, key=lambda e: (e.day, e.seq)):
            if e.day <= day:
                code = e.details.get("coupon_code") if e.type == "coupon_applied" else None
        return code

    def trial_end(self, sub: str) -> date | None:
        ended = self.of_type(sub, "trial_ended")
        return ended[-1].day if ended else None

    def ends(self, sub: str, kind: str) -> list[date]:
        """When each `kind` event (canceled / cancel_requested) ends the subscription: its
        date, or the end of the period the cancellation was asked in."""
        asked = self.of_type(sub, "cancel_requested")
        out = []
        for e in self.of_type(sub, kind):
            effective = str(e.details.get("effective", ""))
            if effective[:1].isdigit():
                out.append(date.fromisoformat(effective))
                continue
            before = [r.day for r in asked if r.seq <= e.seq]
            out.append(self.next_start(sub, before[-1] if before else e.day))
        return out

    def last_invoices(self) -> list[Bill]:
        """Each subscription's latest invoice."""
        last: dict[str, Bill] = {}
        for inv in self.invoices:
            last[inv.sub] = inv
        return list(last.values())


def immediate(event: Event) -> bool:
    return event.details.get("effective") == "immediately"


def _dicts(db: sqlite3.Connection, sql: str) -> list[dict[str, Any]]:
    cursor = db.execute(sql)
    names = [c[0] for c in cursor.description]
    return [dict(zip(names, row, strict=True)) for row in cursor]


def ledger_of(db: sqlite3.Connection) -> Ledger:
    """Loads every public table of one scenario's database."""
    customer = _dicts(db, "SELECT * FROM customers")[0]
    ledger = Ledger(
        customer=customer,
        zone=ZoneInfo(customer["timezone"]),
        plans={p["id"]: p for p in _dicts(db, "SELECT * FROM plans")},
        prices=defaultdict(list),
        coupons={c["code"]: c for c in _dicts(db, "SELECT * FROM coupons")},
        subs={s["id"]: s for s in _dicts(db, "SELECT * FROM subscriptions")},
        events=defaultdict(list),
        tax=defaultdict(list),
        fx={},
        usage={},
        invoices=[],
        payments=defaultdict(list),
    )
    for plan, cents, start, _ in db.execute("SELECT * FROM plan_prices ORDER BY effective_from"):
        ledger.prices[plan].append((start, cents))
    for sub, seq, at, kind, details in db.execute(
        "SELECT * FROM subscription_events ORDER BY subscription_id, seq"
    ):
        event = Event(sub, seq, at, ledger.local_day(at), kind, json.loads(details))
        ledger.events[sub].append(event)
    for jurisdiction, rate, start, end in db.execute("SELECT * FROM tax_rates"):
        ledger.tax[jurisdiction].append((start, end, parse_rate(rate)))
    for day, _, quote, rate in db.execute("SELECT * FROM fx_rates"):
        ledger.fx[(quote, day)] = parse_rate(rate)
    for sub, _, end, units in db.execute("SELECT * FROM usage_records"):
        ledger.usage[(sub, end)] = units
    lines: dict[str, list[tuple[str, int, int]]] = defaultdict(list)
    for invoice, _, text, quantity, cents in db.execute(
        "SELECT * FROM invoice_lines ORDER BY invoice_id, line_no"
    ):
        lines[invoice].append((text, quantity, cents))
    for row in _dicts(db, "SELECT * FROM invoices ORDER BY period_start, issued_at, id"):
        ledger.invoices.append(_bill(ledger, row, tuple(lines[row["id"]])))
    for invoice, cents, paid_at, status in db.execute(
        "SELECT invoice_id, amount_cents, paid_at, status FROM payments ORDER BY paid_at"
    ):
        ledger.payments[invoice].append((cents, status, paid_at))
    for invoice, cents in db.execute("SELECT invoice_id, amount_cents FROM credit_notes"):
        ledger.credits[invoice] = ledger.credits.get(invoice, 0) + cents
    opened = db.execute("SELECT MIN(opened_at) FROM disputes").fetchone()[0]
    ledger.opened = None if opened is None else ledger.local_day(opened)
    return ledger


def _bill(ledger: Ledger, row: dict[str, Any], lines: tuple[tuple[str, int, int], ...]) -> Bill:
    return Bill(
        id=row["id"],
        sub=row["subscription_id"],
        start=date.fromisoformat(row["period_start"]),
        end=date.fromisoformat(row["period_end"]),
        issued_at=row["issued_at"],
        issue_day=ledger.local_day(row["issued_at"]),
        inputs=json.loads(row["inputs"]),
        subtotal=row["subtotal_cents"],
        discount=row["discount_cents"],
        tax=row["tax_cents"],
        total=row["total_cents"],
        lines=lines,
    )


def cents(text: str | None) -> int:
    return 0 if text is None else parse_amount(text)


def rate(text: str | None) -> Fraction | None:
    return None if text is None else parse_rate(text)
