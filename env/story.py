"""A subscription's story in local dates, and the invoices a correct billing system issues for it.

Faults are injected after this: the story says what *should* have been billed, so the truth
of every scenario is "what was billed" minus "what the story bills", through one engine.
Each change is recorded twice, as an effect on billing and as a UTC-stamped event.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, time
from typing import TYPE_CHECKING, Any

from env.billing import BillingInputs, CouponTerms, PlanTerms
from env.calendar import add_months, local_to_utc
from env.money import parse_rate
from env.world import Coupon, Event, Plan, Subscription

if TYPE_CHECKING:
    from env.builder import WorldBuilder


def plan_terms(plan: Plan, on: date) -> PlanTerms:
    price = max((p for p in plan.prices if p[1] <= on.isoformat()), key=lambda p: p[1])
    return PlanTerms(
        plan_id=plan.id,
        name=plan.name,
        unit_price_cents=price[0],
        per_seat=plan.per_seat,
        included_units=plan.included_units,
        overage_unit_price_cents=plan.overage_unit_price_cents,
    )


def coupon_terms(coupon: Coupon) -> CouponTerms:
    percent = None if coupon.percent_off is None else parse_rate(coupon.percent_off)
    return CouponTerms(coupon.code, percent, coupon.amount_off_cents)


@dataclass
class Story:
    sub: Subscription
    plan: Plan
    seats: int
    anchor: date  # first period start, local
    periods: int  # how many periods were billed (before any cancellation)
    timezone: str
    trial_end: date | None = None
    seat_changes: list[tuple[date, int]] = field(default_factory=list)
    plan_changes: list[tuple[date, Plan]] = field(default_factory=list)
    coupon: Coupon | None = None
    coupon_from: date | None = None
    cancel_effective: date | None = None
    usage: dict[date, int] = field(default_factory=dict)

    def period(self, k: int) -> tuple[date, date]:
        return add_months(self.anchor, k), add_months(self.anchor, k + 1)

    def event(self, day: date, at: time, kind: str, details: dict[str, Any]) -> str:
        stamp = local_to_utc(day, at, self.timezone)
        self.sub.events.append(Event(stamp, kind, details))
        self.sub.events.sort(key=lambda e: e.occurred_at)
        return stamp

    def plan_at(self, day: date) -> Plan:
        current = self.plan
        for effective, plan in sorted(self.plan_changes, key=lambda c: c[0]):
            if effective <= day:
                current = plan
        return current

    def seats_at(self, day: date) -> int:
        current = self.seats
        for effective, seats in sorted(self.seat_changes):
            if effective <= day:
                current = seats
        return current

    def billed_periods(self) -> list[int]:
        ks = []
        for k in range(self.periods):
            start, _ = self.period(k)
            if self.cancel_effective is not None and start >= self.cancel_effective:
                break
            ks.append(k)
        return ks

    def coupon_applies(self, k: int) -> bool:
        coupon = self.coupon
        if coupon is None or self.coupon_from is None:
            return False
        eligible = []
        for j in range(k + 1):
            start, _ = self.period(j)
            if (
                self.coupon_from <= start
                and coupon.valid_from <= start.isoformat() <= coupon.valid_until
            ):
                eligible.append(j)
        if k not in eligible:
            return False
        if coupon.duration == "once":
            return eligible[0] == k
        if coupon.duration == "repeating":
            return eligible.index(k) < (coupon.duration_periods or 0)
        return True

    def inputs(self, k: int, world: WorldBuilder) -> BillingInputs:
        """The correct billing inputs of period k."""
        start, end = self.period(k)
        before = self.plan_at(start)
        mid_changes = [(d, p) for d, p in self.plan_changes if start < d < end]
        previous_plan = previous_seats = change_date = None
        current = before
        if mid_changes:
            change_date, current = max(mid_changes, key=lambda c: c[0])
            previous_plan, previous_seats = plan_terms(before, start), self.seats_at(start)
        proration_start = None
        if self.trial_end is not None and start < self.trial_end:
            proration_start = min(self.trial_end, end)
        return BillingInputs(
            period_start=start,
            period_end=end,
            plan=plan_terms(current, start),
            seats=self.seats_at(start),
            currency=world.customer.currency,
            fx_rate=world.fx_on(start),
            fx_rate_date=start,
            tax_jurisdiction=world.customer.tax_jurisdiction,
            tax_rate=world.tax_rate_on(start),
            tax_exempt=world.exempt_on(start),
            previous_plan=previous_plan,
            previous_seats=previous_seats,
            plan_change_date=change_date,
            proration_start=proration_start,
            coupon=coupon_terms(self.coupon) if self.coupon and self.coupon_applies(k) else None,
            usage_units=self.usage.get(start) if current.overage_unit_price_cents else None,
        )
