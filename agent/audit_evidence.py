"""What the auditor has seen: tool outputs gathered into one `Evidence`, and how to read them.

Tool results are plain JSON; these helpers turn amounts, rates, days and UTC event stamps into
values a check can compare, and return None rather than raise on anything malformed, so no
odd tool output can break the auditor. Used by `agent.audit_checks` and `agent.auditor`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from decimal import Decimal, InvalidOperation
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from env.engine.calendar import fx_rate_day
from env.engine.money import format_cents
from env.engine.supply import SupplySite, taxed_in

Json = dict[str, Any]


@dataclass(frozen=True)
class Candidate:
    label: str
    invoice_id: str
    note: str  # the evidence in words, citing tool numbers
    overrides: Json | None = None  # recompute with these to confirm and measure
    cents: int | None = None  # an overcharge a tool printed literally; no recompute needed
    shown: str | None = None  # the recompute in words, where an override's value is printed
    # nowhere but in the recompute's own echo (a weekend's Friday rate date)
    credited: int = 0  # already returned by earlier credit notes: netted from the difference
    rule: str = ""  # the billing rule the engine applies here, stated (`env.engine.rules`)

    def owed(self, difference: int | None) -> int | None:
        """What a recompute's `difference` leaves owed after earlier credits; None if nothing."""
        if difference is None or difference - self.credited <= 0:
            return None
        return difference - self.credited


@dataclass(frozen=True)
class Event:
    stamp: str
    kind: str
    local: date  # the day in the customer's timezone
    utc: date  # the day of the UTC timestamp, which a careless biller uses
    details: Json


@dataclass(frozen=True)
class TaxWindow:
    rate: str
    start: str
    end: str | None  # exclusive; None = open-ended
    jurisdiction: str = ""

    def covers(self, day: str, jurisdiction: str = "") -> bool:
        inside = self.start <= day and (self.end is None or day < self.end)
        return inside and jurisdiction in ("", self.jurisdiction)


@dataclass
class Evidence:
    """Everything the auditor's opening look-ups returned; failed look-ups are simply absent."""

    customer: Json = field(default_factory=dict)
    invoices: list[Json] = field(default_factory=list)  # list_invoices summaries
    timelines: dict[str, Json] = field(default_factory=dict)
    payments: list[Json] = field(default_factory=list)
    details: dict[str, Json] = field(default_factory=dict)  # get_invoice results
    tax_windows: list[TaxWindow] = field(default_factory=list)

    @property
    def timezone(self) -> str:
        return str(self.customer.get("timezone") or "UTC")

    def inputs(self, invoice_id: str) -> Json:
        inputs = self.details.get(invoice_id, {}).get("billing_inputs")
        return mapping(inputs)

    def fetched(self) -> list[Json]:
        """Summaries of the invoices whose details were fetched, in period order."""
        return [s for s in self.invoices if self.inputs(s["invoice_id"])]

    def of_subscription(self, subscription_id: str) -> list[Json]:
        return [s for s in self.invoices if s.get("subscription_id") == subscription_id]

    def events(self, subscription_id: str) -> list[Event]:
        raw = listed(self.timelines.get(subscription_id, {}).get("events"))
        return [e for e in (to_event(r, self.timezone) for r in raw) if e is not None]

    def issue_day(self, summary: Json) -> str:
        """The local day an invoice was issued: tax, exemption and fx are taken on it."""
        event = to_event({"occurred_at": summary.get("issued_at"), "type": ""}, self.timezone)
        return event.local.isoformat() if event else str(summary.get("period_start"))

    def fx_date(self, issue_day: str, subscription_id: str) -> str:
        """The day whose rate converts an invoice issued on `issue_day`: a documented rate
        lock's `rate_date` for its subscription inside its window (`get_customer`'s
        `fx_rate_lock`), else the issue day's (a weekend's Friday), by the engine's rule."""
        lock = mapping(self.customer.get("fx_rate_lock"))
        keys = ("subscription_id", "rate_date", "issued_from", "issued_until")
        values = [lock.get(k) for k in keys]
        ok = all(isinstance(v, str) for v in values) and _is_day(values[1])
        window = (str(values[0]), str(values[1]), str(values[2]), str(values[3])) if ok else None
        return fx_rate_day(date.fromisoformat(issue_day), subscription_id, window).isoformat()

    def committed_seats(self, subscription_id: str, start: date) -> int:
        """The seats a commitment (`get_customer`'s `seat_commitment`) bills at least for the
        subscription's period starting on `start`; 0 outside its window or without one."""
        commitment = mapping(self.customer.get("seat_commitment"))
        keys = ("seats", "periods_from", "periods_until")
        seats, since, until = (commitment.get(k) for k in keys)
        if commitment.get("subscription_id") != subscription_id or not isinstance(seats, int):
            return 0
        if not (_is_day(since) and _is_day(until) and str(since) <= start.isoformat() < str(until)):
            return 0
        return seats

    def withheld(self, subscription_id: str, issued: str) -> bool:
        """Whether the subscription's timeline withholds the certificate on an issue day (an
        `exemption_withheld` event whose [issued_from, issued_until) holds it): tax is due."""
        for event in self.events(subscription_id):
            if event.kind != "exemption_withheld":
                continue
            since, until = event.details.get("issued_from"), event.details.get("issued_until")
            if isinstance(since, str) and isinstance(until, str) and since <= issued < until:
                return True
        return False

    def kept(self, payments: list[Json]) -> int:
        """Of these payments' overpayment, what the customer keeps on account and is not owed
        back (`get_customer`'s `account_credit`): the amount kept, less what billing should
        have applied to the invoices issued after it (each up to its total) and did not
        (`list_payments` rows whose `applied_from` names the kept payment)."""
        kept = mapping(self.customer.get("account_credit"))
        payment = kept.get("payment_id")
        source = [p for p in payments if p.get("payment_id") == payment]
        if not isinstance(payment, str) or not source:
            return 0
        amount = cents(kept.get("amount")) or 0
        moment = str(source[0].get("paid_at"))
        later = sum(
            cents(s.get("total")) or 0 for s in self.invoices if str(s.get("issued_at")) > moment
        )
        applied = sum(
            cents(p.get("amount")) or 0
            for p in self.payments
            if p.get("applied_from") == payment and p.get("status") == "succeeded"
        )
        return amount - min(amount, later) + applied

    def credited(self, invoice_id: str) -> int:
        """What earlier credit notes already returned on an invoice (0 if not fetched)."""
        return cents(self.details.get(invoice_id, {}).get("amount_credited")) or 0

    def jurisdiction_on(self, day: str, subscription_id: str = "") -> str:
        """Where an invoice of the subscription issued on `day` is taxed, by the engine's rule
        (`env.engine.supply`): its service site (the timeline's `place_of_supply`) while that
        applies, else the customer's jurisdiction then (the previous one before a move on
        record, `tax_jurisdiction_since`)."""
        since = self.customer.get("tax_jurisdiction_since")
        previous = self.customer.get("previous_tax_jurisdiction")
        move = (
            previous if isinstance(previous, str) else None,
            since if isinstance(since, str) else None,
        )
        own = str(self.customer.get("tax_jurisdiction", ""))
        if not _is_day(day):  # a garbled issue day: no rule applies, the customer's own
            return own
        return taxed_in(date.fromisoformat(day), own, move, self.supply_site(subscription_id))

    def supply_site(self, subscription_id: str) -> SupplySite | None:
        """The subscription's service site from its timeline (None: none, or not read)."""
        site = mapping(self.timelines.get(subscription_id, {}).get("place_of_supply"))
        where, until = site.get("jurisdiction"), site.get("until")
        if not isinstance(where, str) or not (until is None or _is_day(until)):
            return None
        return where, until

    def rate_on(self, day: str, subscription_id: str = "") -> str | None:
        """The rate where an invoice issued on `day` is taxed, if a look-up covered it."""
        where = self.jurisdiction_on(day, subscription_id)
        return next((w.rate for w in self.tax_windows if w.covers(day, where)), None)


# parsing -------------------------------------------------------------------------------------


def _is_day(value: Any) -> bool:
    """Whether a tool printed a YYYY-MM-DD date here (a garbled answer is ignored)."""
    try:
        date.fromisoformat(str(value))
    except ValueError:
        return False
    return True


def mapping(value: Any) -> Json:
    """An object field of a tool result; anything else reads as empty."""
    return value if isinstance(value, dict) else {}


def listed(value: Any) -> list[Any]:
    """A list field of a tool result; anything else reads as empty."""
    return value if isinstance(value, list) else []


def cents(text: Any) -> int | None:
    """ "12.40" -> 1240, "-0.05" -> -5; None for anything else."""
    try:
        value = Decimal(str(text))
    except (InvalidOperation, ValueError):
        return None
    if not value.is_finite() or value != value.quantize(Decimal("0.01")):
        return None
    return int(value * 100)


def rate(text: Any) -> Decimal | None:
    try:
        value = Decimal(str(text))
    except (InvalidOperation, ValueError):
        return None
    return value if value.is_finite() else None


def day(text: Any) -> date | None:
    try:
        return date.fromisoformat(str(text)[:10])
    except ValueError:
        return None


def to_event(raw: Any, timezone: str) -> Event | None:
    """A timeline event with its local and UTC days; None when the stamp or zone is unreadable."""
    if not isinstance(raw, dict):
        return None
    stamp = str(raw.get("occurred_at", ""))
    try:
        moment = datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
        local = moment.astimezone(ZoneInfo(timezone)).date()
    except (ValueError, ZoneInfoNotFoundError, OSError, OverflowError):
        return None
    details = mapping(raw.get("details"))
    return Event(stamp, str(raw.get("type", "")), local, moment.date(), details)


def money(amount: int, currency: str) -> str:
    return f"{format_cents(amount)} {currency}"
