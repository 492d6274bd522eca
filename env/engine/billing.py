"""The billing engine: the one implementation of LedgerGym's invoice arithmetic.

The scenario generator bills with it and `recompute_invoice` recomputes with it, so a
difference between the two can only come from different inputs, never different code.
Periods are local calendar dates, `period_end` exclusive. Each line is rounded half-up to the
cent once, after proration and fx conversion; discount and tax are rounded once each.

World v2 semantics (design §1.1): the subscription line bills the period in advance; a plan
change dated inside the *previous* period appears as two proration items (credit for the unused
time on the old plan, charge for the same days on the new one); usage units are those of the
previous period (billed in arrears), on the plan they were used on (`scheduled_from_plan`
where a scheduled change replaced it at this period start) and only from `usage_start` (a free
trial's end: usage during a trial is not billed). A plan change dated inside the invoice's own
period splits the period instead (what recompute does with such an override; no correct invoice
has one).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import date, timedelta
from fractions import Fraction

from env.engine.money import format_cents, round_half_up


@dataclass(frozen=True)
class PlanTerms:
    plan_id: str
    name: str
    unit_price_cents: int  # USD, per seat or flat, for one full period
    per_seat: bool
    included_units: int = 0
    overage_unit_price_cents: int = 0  # USD per unit beyond the included ones; 0 = not metered


@dataclass(frozen=True)
class CouponTerms:
    code: str
    percent_off: Fraction | None = None  # 0.2 = 20 % off the subtotal
    amount_off_cents: int | None = None  # USD, converted at the invoice's fx rate


@dataclass(frozen=True)
class BillingInputs:
    """Everything an invoice is computed from; recorded on the invoice as it was billed."""

    period_start: date
    period_end: date
    plan: PlanTerms
    seats: int
    currency: str
    fx_rate: Fraction  # invoice currency per USD
    fx_rate_date: date
    tax_jurisdiction: str
    tax_rate: Fraction
    tax_exempt: bool = False
    previous_plan: PlanTerms | None = None  # plan before a change inside this period
    previous_seats: int | None = None
    plan_change_date: date | None = None
    proration_start: date | None = None  # charged window inside the period; default whole period
    proration_end: date | None = None
    coupon: CouponTerms | None = None
    usage_units: int | None = None  # the previous period's units, in arrears
    usage_units_before_change: int | None = None  # of those, used before plan_change_date
    usage_start: date | None = None  # usage billed from this day (a trial's end), not before
    scheduled_from_plan: PlanTerms | None = None  # the plan a change scheduled at this period
    # start replaced: the previous period's usage (and a proration's remaining days) was on it

    def with_overrides(self, **changes: object) -> BillingInputs:
        return replace(self, **changes)  # type: ignore[arg-type]


@dataclass(frozen=True)
class InvoiceLine:
    description: str
    quantity: int
    amount_cents: int


@dataclass(frozen=True)
class InvoiceAmounts:
    lines: tuple[InvoiceLine, ...]
    subtotal_cents: int
    discount_cents: int
    tax_cents: int
    total_cents: int


class BillingError(ValueError):
    """Inputs the engine cannot bill (an empty period, negative seats…)."""


def compute_invoice(inputs: BillingInputs) -> InvoiceAmounts:
    period_days = (inputs.period_end - inputs.period_start).days
    if period_days <= 0:
        raise BillingError("period_end must be after period_start")
    if inputs.seats < 0 or (inputs.previous_seats or 0) < 0:
        raise BillingError("seats must not be negative")
    lines = [
        *_subscription_lines(inputs, period_days),
        *_proration_lines(inputs),
        *_usage_lines(inputs),
    ]
    subtotal = sum(line.amount_cents for line in lines)
    discount = _discount(inputs, subtotal)
    taxable = subtotal - discount
    tax = 0 if inputs.tax_exempt else round_half_up(taxable * inputs.tax_rate)
    return InvoiceAmounts(tuple(lines), subtotal, discount, tax, taxable + tax)


def _charged_window(inputs: BillingInputs) -> tuple[date, date]:
    start = max(inputs.proration_start or inputs.period_start, inputs.period_start)
    end = min(inputs.proration_end or inputs.period_end, inputs.period_end)
    return start, end


def _segments(inputs: BillingInputs) -> list[tuple[PlanTerms, int, date, date]]:
    start, end = _charged_window(inputs)
    if end <= start:
        return []
    change = inputs.plan_change_date
    if inputs.previous_plan is None or change is None or change <= start:
        return [(inputs.plan, inputs.seats, start, end)]
    previous_seats = inputs.seats if inputs.previous_seats is None else inputs.previous_seats
    if change >= end:
        return [(inputs.previous_plan, previous_seats, start, end)]
    return [
        (inputs.previous_plan, previous_seats, start, change),
        (inputs.plan, inputs.seats, change, end),
    ]


def previous_period_start(period_start: date) -> date:
    """The start of the monthly period before `period_start` (day clipped to the month)."""
    index = period_start.year * 12 + period_start.month - 2
    year, month = index // 12, index % 12 + 1
    last_day = (date(year + month // 12, month % 12 + 1, 1) - timedelta(days=1)).day
    return date(year, month, min(period_start.day, last_day))


def _quantity(plan: PlanTerms, seats: int) -> int:
    return seats if plan.per_seat else 1


def _proration_lines(inputs: BillingInputs) -> list[InvoiceLine]:
    """Proration items for a plan change in the previous period (billed on this invoice)."""
    change, old = inputs.plan_change_date, inputs.previous_plan
    if old is None or change is None or change >= inputs.period_start:
        return []
    before = previous_period_start(inputs.period_start)
    if change < before:
        raise BillingError(
            f"plan_change_date {change.isoformat()} is before the previous period "
            f"({before.isoformat()} to {inputs.period_start.isoformat()})"
        )
    seats = inputs.seats if inputs.previous_seats is None else inputs.previous_seats
    days, whole = (inputs.period_start - change).days, (inputs.period_start - before).days
    lines = []
    new = inputs.scheduled_from_plan or inputs.plan
    for plan, sign, what in ((old, -1, "Unused time on"), (new, 1, "Remaining time on")):
        quantity = _quantity(plan, seats)
        exact = Fraction(plan.unit_price_cents * quantity * days, whole) * inputs.fx_rate
        label = (
            f"{what} {plan.name} ({plan.plan_id}) x {quantity} from {change.isoformat()}, "
            f"{days}/{whole} days of the previous period"
        )
        lines.append(InvoiceLine(label, quantity, sign * round_half_up(exact)))
    return lines


def _subscription_lines(inputs: BillingInputs, period_days: int) -> list[InvoiceLine]:
    lines = []
    segments = _segments(inputs)
    if inputs.proration_end is not None and inputs.proration_end <= inputs.period_start:
        return []  # a closing invoice: only the previous period's proration, after a cancellation
    if not segments:  # a free trial: the window charged is empty
        plan = inputs.plan
        label = (
            f"{plan.name} ({plan.plan_id}) free trial, "
            f"{inputs.period_start.isoformat()} to {inputs.period_end.isoformat()}"
        )
        return [InvoiceLine(label, _quantity(plan, inputs.seats), 0)]
    for plan, seats, start, end in segments:
        quantity = seats if plan.per_seat else 1
        days = (end - start).days
        exact = Fraction(plan.unit_price_cents * quantity * days, period_days) * inputs.fx_rate
        unit = "seat" if plan.per_seat else "subscription"
        label = f"{plan.name} ({plan.plan_id}) x {quantity} {unit}{'s' if quantity != 1 else ''}"
        if days != period_days:
            label += f", prorated {days}/{period_days} days from {start.isoformat()}"
        lines.append(InvoiceLine(label, quantity, round_half_up(exact)))
    return lines


def usage_parts(inputs: BillingInputs) -> list[tuple[PlanTerms, int, date, date, int]]:
    """(plan, units, from, to, included) for each part of the previous period's usage: one
    part, or two split at a plan change inside that period, each on the plan in force while
    it was used with the included units prorated by days (design §1.1). Usage before
    `usage_start` (a free trial) is not billed: the window starts there, its allowance
    prorated by the window's days."""
    before, start = previous_period_start(inputs.period_start), inputs.period_start
    units, change, old = inputs.usage_units, inputs.plan_change_date, inputs.previous_plan
    if units is None:
        return []
    first = before
    if inputs.usage_start is not None and before < inputs.usage_start:
        first = inputs.usage_start
    if first >= start:
        return []
    used_on = inputs.scheduled_from_plan or inputs.plan
    whole = (start - before).days
    split = inputs.usage_units_before_change
    if split is None or old is None or change is None or not first < change < start:
        pieces = [(used_on, units, first, start)]
    else:
        pieces = [(old, split, first, change), (used_on, units - split, change, start)]
    parts = []
    for plan, used, a, b in pieces:
        included = plan.included_units
        if (a, b) != (before, start):
            included = round_half_up(Fraction(plan.included_units * (b - a).days, whole))
        parts.append((plan, used, a, b, included))
    return parts


def _usage_lines(inputs: BillingInputs) -> list[InvoiceLine]:
    lines = []
    for plan, units, first, last, included in usage_parts(inputs):
        if plan.overage_unit_price_cents <= 0:
            continue
        billable = max(0, units - included)
        exact = billable * plan.overage_unit_price_cents * inputs.fx_rate
        label = (
            f"Usage overage, {first.isoformat()} to {last.isoformat()}: {units} units, "
            f"{included} included, "
            f"{billable} billed at {format_cents(plan.overage_unit_price_cents)} USD"
        )
        lines.append(InvoiceLine(label, billable, round_half_up(exact)))
    return lines


def _discount(inputs: BillingInputs, subtotal: int) -> int:
    coupon = inputs.coupon
    if coupon is None or subtotal <= 0:
        return 0
    if coupon.percent_off is not None:
        return min(subtotal, round_half_up(subtotal * coupon.percent_off))
    return min(subtotal, round_half_up((coupon.amount_off_cents or 0) * inputs.fx_rate))
