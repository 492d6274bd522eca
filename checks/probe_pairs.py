"""The pair search's schema: which fields of the public tables relate, and what each pair shows.

A pair is a field of one record and its source of truth (an invoice's recorded input against
the timeline, customer, tax, fx, usage or payment record; an invoice's amounts against its
inputs recomputed by the billing engine; an invoice against the previous invoice of its
subscription; an event against the state in force before it; a record's day against the
dispute's). `RELATES` names the related fields per record once; `PAIRS` is generated from it
(and every invoice field against the previous invoice), not a list of suspected tells. Per
scenario each pair becomes a few numbers (`pair_features`): whether it compares any record,
the share that disagree, and the discrepancy's signed size and ratio (numbers) or day gap
(dates), largest and smallest over the scenario's records.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any

from checks.probe_ledger import Bill, Event, Ledger, cents, immediate, rate
from checks.probe_lookups import (
    RECORDS,
    allowed_seats,
    as_float,
    before_event,
    billed_plan,
    cancel_ends,
    covers,
    date_of,
    dispute_day,
    fx_on,
    fx_row_before,
    jurisdiction_on,
    nearest,
    net_paid,
    recomputed,
)

Value = Any  # a number, a date, an id (str / bool), or None where the record has none
Reader = Callable[[Ledger, Any], Value]
NUMBER, DAY, ID = "number", "day", "id"
STATS = {  # what a pair's discrepancy gives per scenario, by the fields' kind
    NUMBER: ("any", "off", "diff_max", "diff_min", "ratio_max", "ratio_min", "ratio_whole"),
    DAY: ("any", "off", "gap_max", "gap_min"),
    ID: ("any", "off"),
}  # any: the pair compares a record; off: the share of those that disagree (no counts of
# records: a scenario's size is a surface feature, section (b))
NEUTRAL = {"ratio_max": 1.0, "ratio_min": 1.0, "ratio_whole": 0.5}  # nothing compared; others 0


# fields: record -> field -> (kind, reader) ------------------------------------------------------

INVOICE: dict[str, tuple[str, Reader]] = {
    "plan_id": (ID, lambda led, i: billed_plan(i)["plan_id"]),
    "seats": (NUMBER, lambda led, i: i.inputs["seats"]),
    "unit_price": (NUMBER, lambda led, i: cents(billed_plan(i)["unit_price"])),
    "included_units": (NUMBER, lambda led, i: billed_plan(i)["included_units"]),
    "overage_unit_price": (NUMBER, lambda led, i: cents(billed_plan(i)["overage_unit_price"])),
    "usage_units": (NUMBER, lambda led, i: i.inputs["usage_units"]),
    "tax_rate": (NUMBER, lambda led, i: as_float(rate(i.inputs["tax_rate"]))),
    "tax_jurisdiction": (ID, lambda led, i: i.inputs["tax_jurisdiction"]),
    "tax_exempt": (ID, lambda led, i: bool(i.inputs["tax_exempt"])),
    "currency": (ID, lambda led, i: i.inputs["currency"]),
    "fx_rate": (NUMBER, lambda led, i: as_float(rate(i.inputs["fx_rate"]))),
    "fx_rate_date": (DAY, lambda led, i: i.day("fx_rate_date")),
    "plan_change_date": (DAY, lambda led, i: i.day("plan_change_date")),
    "proration_start": (DAY, lambda led, i: i.day("proration_start")),
    "proration_end": (DAY, lambda led, i: i.day("proration_end")),
    "coupon_code": (ID, lambda led, i: (i.inputs["coupon"] or {}).get("coupon_code")),
    "period_start": (DAY, lambda led, i: i.start),
    "issue_day": (DAY, lambda led, i: i.issue_day),
    "subtotal": (NUMBER, lambda led, i: i.subtotal),
    "discount": (NUMBER, lambda led, i: i.discount),
    "tax": (NUMBER, lambda led, i: i.tax),
    "total": (NUMBER, lambda led, i: i.total),
    "amount_paid": (NUMBER, lambda led, i: net_paid(led, i)),
    "amount_credited": (NUMBER, lambda led, i: led.credits.get(i.id, 0)),
}


def _amount(name: str) -> Reader:
    def read(led: Ledger, inv: Bill) -> Value:
        amounts = recomputed(inv)
        return None if amounts is None else getattr(amounts, f"{name}_cents")

    return read


def _in_force(kind: str, key: str, at: str) -> Reader:
    return lambda led, i: led.in_force(i.sub, getattr(i, at), kind, key)


INVOICE_TRUTHS: dict[str, dict[str, Reader]] = {
    "plan_id": {
        "plan in force at period start": _in_force("plan_changed", "plan_id", "start"),
        "subscription row plan": lambda led, i: led.subs[i.sub]["plan_id"],
    },
    "seats": {
        "seats in force at period start": _in_force("seats_changed", "seats", "start"),
        "subscription row seats": lambda led, i: led.subs[i.sub]["seats"],
        "seats the plan's pricing allows": lambda led, i: allowed_seats(
            led, billed_plan(i)["plan_id"]
        ),
    },
    "unit_price": {
        "price history at period start": lambda led, i: led.unit_price(
            billed_plan(i)["plan_id"], i.start
        ),
        "price history at issue day": lambda led, i: led.unit_price(
            billed_plan(i)["plan_id"], i.issue_day
        ),
    },
    "included_units": {
        "plan catalogue": lambda led, i: (led.plans.get(billed_plan(i)["plan_id"]) or {}).get(
            "included_units"
        ),
    },
    "overage_unit_price": {
        "plan catalogue": lambda led, i: (led.plans.get(billed_plan(i)["plan_id"]) or {}).get(
            "overage_unit_price_cents"
        ),
    },
    "usage_units": {
        "usage record of the previous period": lambda led, i: led.usage.get(
            (i.sub, i.start.isoformat())
        ),
    },
    "tax_rate": {
        "table rate, recorded jurisdiction, issue day": lambda led, i: as_float(
            led.tax_rate(i.inputs["tax_jurisdiction"], i.issue_day)
        ),
        "table rate, customer's jurisdiction then, issue day": lambda led, i: as_float(
            led.tax_rate(jurisdiction_on(led, i.issue_day), i.issue_day)
        ),
    },
    "tax_jurisdiction": {
        "customer's jurisdiction on the issue day": lambda led, i: jurisdiction_on(
            led, i.issue_day
        ),
        "customer's jurisdiction now": lambda led, i: led.customer["tax_jurisdiction"],
    },
    "tax_exempt": {
        "certificate window covers the issue day": lambda led, i: covers(led, i.issue_day),
        "certificate covers the issue day and jurisdiction": lambda led, i: covers(
            led, i.issue_day, i.inputs["tax_jurisdiction"]
        ),
    },
    "currency": {"customer currency": lambda led, i: led.customer["currency"]},
    "fx_rate": {
        "fx table at the recorded date": lambda led, i: as_float(
            fx_on(led, i.inputs["currency"], i.day("fx_rate_date"))
        ),
        "fx table at the issue day": lambda led, i: as_float(
            fx_on(led, i.inputs["currency"], i.issue_day)
        ),
        "fx table, latest row by the issue day": lambda led, i: as_float(
            fx_on(led, i.inputs["currency"], fx_row_before(led, i))
        ),
    },
    "fx_rate_date": {
        "issue day": lambda led, i: i.issue_day,
        "latest fx row by the issue day": fx_row_before,
        "period start": lambda led, i: i.start,
    },
    "plan_change_date": {
        "nearest immediate plan_changed local day": lambda led, i: nearest(
            i.day("plan_change_date"),
            [e.day for e in led.of_type(i.sub, "plan_changed") if immediate(e)],
        ),
        "nearest plan_changed event's effective date": lambda led, i: nearest(
            i.day("plan_change_date"),
            [
                d
                for e in led.of_type(i.sub, "plan_changed")
                if (d := date_of(e.details.get("effective")))
            ],
        ),
        "period start": lambda led, i: i.start,
        "issue day": lambda led, i: i.issue_day,
    },
    "proration_start": {
        "last trial_ended local day": lambda led, i: led.trial_end(i.sub),
        "period start": lambda led, i: i.start,
    },
    "proration_end": {
        "nearest cancellation end": lambda led, i: nearest(
            i.day("proration_end"), cancel_ends(led, i.sub)
        ),
        "period end": lambda led, i: i.end,
    },
    "coupon_code": {
        "coupon in force at period start": lambda led, i: led.coupon_on(i.sub, i.start)
    },
    "period_start": {
        "nearest cancellation end": lambda led, i: nearest(i.start, cancel_ends(led, i.sub)),
        "last trial_ended local day": lambda led, i: led.trial_end(i.sub),
        "subscription start day": lambda led, i: led.anchor(i.sub),
    },
    "issue_day": {"period start": lambda led, i: i.start, "dispute day": dispute_day},
    "subtotal": {"recomputed from the recorded inputs": _amount("subtotal")},
    "discount": {"recomputed from the recorded inputs": _amount("discount")},
    "tax": {"recomputed from the recorded inputs": _amount("tax")},
    "total": {
        "recomputed from the recorded inputs": _amount("total"),
        "amount paid": lambda led, i: net_paid(led, i),
    },
    "amount_paid": {
        "total": lambda led, i: i.total,
        "total + amount credited": lambda led, i: i.total + led.credits.get(i.id, 0),
    },
    "amount_credited": {
        "total": lambda led, i: i.total,
        "amount paid - total": lambda led, i: net_paid(led, i) - i.total,
    },
}


def _detail(key: str, *types: str) -> Reader:
    def read(led: Ledger, e: Event) -> Value:
        return e.details.get(key) if e.type in types else None

    return read


def _before_seats(led: Ledger, e: Event) -> Value:
    return before_event(led, e, "seats_changed", "seats")


def _before_plan(led: Ledger, e: Event) -> Value:
    return before_event(led, e, "plan_changed", "plan_id")


def _cancel_end_before(led: Ledger, e: Event) -> date | None:
    """The end of the latest confirmed cancellation logged before `e` (None: there is none)."""
    if e.type in ("canceled", "created"):
        return None
    canceled = [c for c in led.of_type(e.sub, "canceled") if c.seq < e.seq]
    if not canceled:
        return None
    ends = led.ends(e.sub, "canceled")
    return ends[len(canceled) - 1]


def _request_day(led: Ledger, e: Event) -> date | None:
    asked = [r.day for r in led.of_type(e.sub, "cancel_requested") if r.seq < e.seq]
    return asked[-1] if asked and e.type == "canceled" else None


def _trial_end_logged(led: Ledger, e: Event) -> date | None:
    started = [s for s in led.of_type(e.sub, "trial_started") if s.seq < e.seq]
    if e.type != "trial_ended" or not started:
        return None
    days = started[-1].details.get("trial_days")
    return started[-1].day + timedelta(days=int(days)) if days is not None else None


EVENT: dict[str, tuple[str, Reader]] = {
    "from_plan_id": (ID, _detail("from_plan_id", "plan_changed")),
    "to_plan_id": (ID, _detail("to_plan_id", "plan_changed")),
    "from_seats": (NUMBER, _detail("from_seats", "seats_changed")),
    "to_seats": (NUMBER, _detail("to_seats", "seats_changed")),
    "day": (DAY, lambda led, e: e.day),
    "effective date": (DAY, lambda led, e: date_of(e.details.get("effective"))),
}
EVENT_TRUTHS: dict[str, dict[str, Reader]] = {
    "from_plan_id": {"plan in force before the event": _before_plan},
    "to_plan_id": {"plan in force before the event": _before_plan},
    "from_seats": {"seats in force before the event": _before_seats},
    "to_seats": {
        "seats the plan in force allows": lambda led, e: allowed_seats(led, _before_plan(led, e))
    },
    "day": {
        "end of a confirmed cancellation before it": _cancel_end_before,
        "cancel_requested day before a canceled": _request_day,
        "trial_started day + trial_days": _trial_end_logged,
        "dispute day": dispute_day,
    },
    "effective date": {"the event's own day": lambda led, e: e.day},
}
SUBSCRIPTION: dict[str, tuple[str, Reader]] = {
    "seats": (NUMBER, lambda led, s: led.subs[s]["seats"]),
    "plan_id": (ID, lambda led, s: led.subs[s]["plan_id"]),
}
SUBSCRIPTION_TRUTHS: dict[str, dict[str, Reader]] = {
    "seats": {
        "seats the row's plan allows": lambda led, s: allowed_seats(led, led.subs[s]["plan_id"]),
    },
    "plan_id": {
        "plan in force on the dispute day": lambda led, s: led.in_force(
            s, led.opened or date.max, "plan_changed", "plan_id"
        ),
    },
}
OTHER: dict[str, dict[str, tuple[str, Reader, dict[str, Reader]]]] = {
    "fx row": {"date": (DAY, lambda led, d: d, {"dispute day": dispute_day})},
    "payment": {
        "paid day": (
            DAY,
            lambda led, p: led.local_day(p[1]),
            {"dispute day": dispute_day, "invoice issue day": lambda led, p: p[0].issue_day},
        )
    },
}


# the pairs, generated -------------------------------------------------------------------------


@dataclass(frozen=True)
class Pair:
    name: str  # "invoice.fx_rate_date ~ issue day"
    kind: str
    record: str
    field: Reader
    truth: Reader


def _previous(field: Reader) -> Reader:
    """The same field on the previous invoice of the invoice's subscription."""

    def read(led: Ledger, inv: Bill) -> Value:
        mine = [i for i in led.invoices if i.sub == inv.sub]
        k = mine.index(inv)
        return field(led, mine[k - 1]) if k > 0 else None

    return read


def _generate() -> tuple[Pair, ...]:
    pairs = []
    tables = (
        ("invoice", INVOICE, INVOICE_TRUTHS),
        ("event", EVENT, EVENT_TRUTHS),
        ("subscription", SUBSCRIPTION, SUBSCRIPTION_TRUTHS),
    )
    for record, fields, truths in tables:
        for name, (kind, read) in fields.items():
            for truth_name, truth in truths.get(name, {}).items():
                pairs.append(Pair(f"{record}.{name} ~ {truth_name}", kind, record, read, truth))
    for name, (kind, read) in INVOICE.items():  # every invoice field against the one before
        if kind != DAY:
            pairs.append(Pair(f"invoice.{name} ~ previous invoice", kind, "invoice", read,
                              _previous(read)))  # fmt: skip
    for record, fields_of in OTHER.items():
        for name, (kind, read, truths_of) in fields_of.items():
            for truth_name, truth in truths_of.items():
                pairs.append(Pair(f"{record}.{name} ~ {truth_name}", kind, record, read, truth))
    return tuple(pairs)


PAIRS: tuple[Pair, ...] = _generate()
PAIR_NAMES: tuple[str, ...] = tuple(p.name for p in PAIRS)


def _compared(led: Ledger, pair: Pair) -> Iterator[tuple[Value, Value]]:
    for record in RECORDS[pair.record](led):
        a, b = pair.field(led, record), pair.truth(led, record)
        if a is not None and b is not None:
            yield a, b


def stats(kind: str, values: Iterable[tuple[Value, Value]]) -> dict[str, float]:
    """One pair's discrepancy over a scenario's records, as the numbers of `STATS[kind]`."""
    found = list(values)
    out = {s: NEUTRAL.get(s, 0.0) for s in STATS[kind]}
    out["any"] = float(bool(found))
    out["off"] = sum(a != b for a, b in found) / len(found) if found else 0.0
    if kind == DAY:
        gaps = [float((a - b).days) for a, b in found]
        out["gap_max"], out["gap_min"] = max(gaps, default=0.0), min(gaps, default=0.0)
    elif kind == NUMBER:
        diffs = [float(a) - float(b) for a, b in found]
        ratios = [float(a) / float(b) for a, b in found if b]
        out["diff_max"], out["diff_min"] = max(diffs, default=0.0), min(diffs, default=0.0)
        out["ratio_max"], out["ratio_min"] = max(ratios, default=1.0), min(ratios, default=1.0)
        out["ratio_whole"] = min((_whole(r) for r in ratios), default=0.5)
    return out


def _whole(ratio: float) -> float:
    """How far a ratio (or its inverse) is from a whole multiple >= 2: 0 for a doubled, tripled
    or halved value, up to 0.5; 0.5 where the two agree or their ratio is below 2 either way."""
    r = ratio if ratio >= 1 else (1 / ratio if ratio > 0 else 0.0)
    return abs(r - round(r)) if r >= 1.5 else 0.5


def pair_features(led: Ledger) -> dict[str, float]:
    """`pair|stat` -> value for every pair of `PAIRS` on one scenario's ledger."""
    out: dict[str, float] = {}
    for pair in PAIRS:
        for stat, value in stats(pair.kind, _compared(led, pair)).items():
            out[f"{pair.name}|{stat}"] = value
    return out
