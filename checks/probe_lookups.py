"""Look-ups the pair search reads: the records a pair sits on, and the state in force.

`checks.probe_pairs` relates a field to its source of truth; the truth is often not a column
but a reading of the timeline (the plan or seats in force before an event, the end of a
cancellation, the jurisdiction on a day, the fx row by a day) or the engine's recompute of an
invoice from its recorded inputs. Each is a small function over a `checks.probe_ledger.Ledger`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from datetime import date
from fractions import Fraction
from typing import Any

from checks.probe_ledger import Bill, Event, Ledger, immediate
from env.engine.billing import BillingError, compute_invoice
from env.engine.records import inputs_from_json

# the records a pair can sit on ----------------------------------------------------------------


def invoice_records(led: Ledger) -> Iterable[Bill]:
    return led.invoices


def event_records(led: Ledger) -> Iterable[Event]:
    return [e for events in led.events.values() for e in events]


def subscription_records(led: Ledger) -> Iterable[str]:
    return led.subs


def fx_days(led: Ledger) -> Iterable[date]:
    return sorted({date.fromisoformat(day) for _, day in led.fx})


def payment_records(led: Ledger) -> Iterable[tuple[Bill, str]]:
    by_id = {inv.id: inv for inv in led.invoices}
    return [(by_id[i], at) for i, rows in led.payments.items() if i in by_id for *_, at in rows]


RECORDS: dict[str, Callable[[Ledger], Iterable[Any]]] = {
    "invoice": invoice_records,
    "event": event_records,
    "subscription": subscription_records,
    "fx row": fx_days,
    "payment": payment_records,
}


# the state in force ---------------------------------------------------------------------------


def effective_day(led: Ledger, e: Event) -> date:
    return e.day if immediate(e) else led.next_start(e.sub, e.day)


def before_event(led: Ledger, e: Event, kind: str, key: str) -> object:
    """The `created` value of `key`, then every earlier `kind` change in force by `e`'s day."""
    created = led.of_type(e.sub, "created")
    value = created[0].details.get(key) if created else None
    changes = [(effective_day(led, c), c.seq, c) for c in led.of_type(e.sub, kind) if c.seq < e.seq]
    for effective, _, c in sorted(changes, key=lambda x: (x[0], x[1])):
        if effective <= e.day:
            value = c.details.get("to_plan_id" if kind == "plan_changed" else "to_seats")
    return value


def allowed_seats(led: Ledger, plan_id: object) -> int | None:
    """Seats a plan's pricing implies: 1 on a flat plan; None (any count) per seat."""
    plan = led.plans.get(str(plan_id))
    return None if plan is None or plan["pricing"] == "per_seat" else 1


def nearest(day: date | None, days: Iterable[date]) -> date | None:
    found = sorted(days, key=lambda d: (abs((d - day).days), d)) if day else []
    return found[0] if found else None


def date_of(value: object) -> date | None:
    text = str(value or "")
    return date.fromisoformat(text[:10]) if text[:1].isdigit() else None


def dispute_day(led: Ledger, record: object = None) -> date | None:
    return led.opened


def jurisdiction_on(led: Ledger, day: date) -> str:
    c = led.customer
    since = c.get("tax_jurisdiction_since")
    if since and day.isoformat() < since and c.get("previous_tax_jurisdiction"):
        return str(c["previous_tax_jurisdiction"])
    return str(c["tax_jurisdiction"])


def covers(led: Ledger, day: date, jurisdiction: str | None = None) -> bool:
    c = led.customer
    if not c["exemption_certificate_id"]:
        return False
    inside = c["exemption_valid_from"] <= day.isoformat() < c["exemption_valid_until"]
    where = c.get("exemption_jurisdiction")
    return inside and (jurisdiction is None or where in (None, jurisdiction))


def fx_on(led: Ledger, currency: str, day: date | None) -> Fraction | None:
    if day is None:
        return None
    return Fraction(1) if currency == "USD" else led.fx.get((currency, day.isoformat()))


def fx_row_before(led: Ledger, inv: Bill) -> date | None:
    if inv.inputs["currency"] == "USD":
        return inv.issue_day
    days = [date.fromisoformat(d) for q, d in led.fx if q == inv.inputs["currency"]]
    return max((d for d in days if d <= inv.issue_day), default=None)


def recomputed(inv: Bill) -> Any:
    try:
        return compute_invoice(inputs_from_json(json.dumps(inv.inputs, sort_keys=True)))
    except (BillingError, KeyError, TypeError, ValueError):
        return None


def net_paid(led: Ledger, inv: Bill) -> int:
    rows = led.payments.get(inv.id, [])
    return sum(c for c, s, _ in rows if s == "succeeded") - sum(
        c for c, s, _ in rows if s == "refunded"
    )


def cancel_ends(led: Ledger, sub: str) -> list[date]:
    return led.ends(sub, "canceled")


def billed_plan(inv: Bill) -> dict[str, Any]:
    return inv.inputs["plan"]


def as_float(value: object) -> float | None:
    return None if value is None else float(value)  # type: ignore[arg-type]
