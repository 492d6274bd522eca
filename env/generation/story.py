"""A subscription's story in local dates, and the invoices a correct billing system issues for it.

Faults are injected after this: the story says what *should* have been billed, so the truth
of every scenario is "what was billed" minus "what the story bills", through one engine.
Each change is recorded twice, as an effect on billing and as a UTC-stamped event.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from typing import Any, Protocol
from zoneinfo import ZoneInfo

from env.engine.billing import BillingInputs, CouponTerms, PlanTerms
from env.engine.calendar import add_months, local_to_utc
from env.engine.money import parse_rate
from env.generation.world import Coupon, Event, Invoice, Plan, Subscription

# why a customer asks to cancel: one pool for every cancellation request in every story
CANCEL_REASONS = ("too_expensive", "switched_provider", "project_ended", "missing_features")


def later_stamp(stamp: str, rng: random.Random, *, before: str | None = None) -> str:
    """A person's reaction time after `stamp`: minutes, hours or a day or two (design §1.2:
    human intervals), and strictly before `before` when given (the dispute, a period end)."""
    moment = datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    shape = rng.random()
    if shape < 0.5:
        gap = timedelta(minutes=rng.randint(1, 180))
    elif shape < 0.8:
        gap = timedelta(hours=rng.randint(3, 20), minutes=rng.randint(0, 59))
    else:
        gap = timedelta(days=rng.randint(1, 2), minutes=rng.randint(0, 600))
    if before is not None:
        limit = datetime.strptime(before, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
        if moment + gap >= limit:  # whole minutes, like every other stamp
            gap = timedelta(minutes=max(1, int((limit - moment).total_seconds() // 120)))
    return (moment + gap).strftime("%Y-%m-%dT%H:%M:%SZ")


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


class RateBook(Protocol):
    """Where an invoice's currency, fx and tax inputs come from: the world being built
    (`WorldBuilder.rates_on`). A story bills against it without knowing the builder."""

    def rates_on(self, issued: date, subscription_id: str = "") -> dict[str, Any]: ...


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
    usage_before_change: dict[date, int] = field(default_factory=dict)  # split at a change
    usage_in_trial: dict[date, int] = field(default_factory=dict)  # split at the trial's end
    # a usage correction record (look-alike): (units added, recorded day, reason); the period's
    # `usage` holds the corrected total billed, its usage row the units first reported
    usage_corrections: dict[date, tuple[int, str, str]] = field(default_factory=dict)
    trial_jitter: dict[date, float] = field(default_factory=dict)  # its share's draw, once
    change_jitter: dict[date, float] = field(default_factory=dict)  # the change's, once
    trial_invoice: Invoice | None = None
    trial_end_before: date | None = None  # a trial extended after it first ended (look-alike)
    # minutes from `trial_ended` to the billing run that issues the first paid invoice (world
    # v6): after a late-evening end, the next local day (`run_crosses`)
    run_lag: int = 0
    usage_level: int = 0  # the customer's typical units per period, whatever the plan
    usage_drawn: bool = False  # usage_level drawn by the builder (not pinned by a fault)
    keeps_plan: bool = False  # a look-alike about this plan's price: no pending plan change
    # no change is drawn on or after this local day: a cancellation is asked then and, once
    # confirmed, only a reactivation changes the subscription (design §1.1, one state)
    changes_until: date | None = None
    # a committed seat minimum (look-alike, `lookalikes_seats`): periods starting in
    # [from, until) bill at least this many seats, whatever fewer the timeline has in force
    seat_floor: tuple[date, date, int] | None = None

    def change_limit(self, end: date) -> date:
        """The end of the days a change may be drawn on in a period ending `end`."""
        return end if self.changes_until is None else min(end, self.changes_until)

    def time_of_day(self) -> time:
        """The local time of day the subscription was created: its renewal time."""
        moment = datetime.strptime(self.sub.started_at, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
        return moment.astimezone(ZoneInfo(self.timezone)).time()

    def period(self, k: int) -> tuple[date, date]:
        return add_months(self.anchor, k), add_months(self.anchor, k + 1)

    def after_trial(self, day: date, margin: int = 2) -> date:
        """`day`, or `margin` days after the trial ends if that is later: an immediate change
        credits unused time of the old plan, and trial days were never charged."""
        if self.trial_end is None:
            return day
        return max(day, self.trial_end + timedelta(days=margin))

    def event(self, day: date, at: time, kind: str, details: dict[str, Any]) -> str:
        stamp = local_to_utc(day, at, self.timezone)
        self.sub.events.append(Event(stamp, kind, details))
        self.sub.events.sort(key=lambda e: e.occurred_at)
        return stamp

    def event_at(self, stamp: str, kind: str, details: dict[str, Any]) -> str:
        """An event at a UTC moment (a confirmation or withdrawal some time after a request)."""
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

    def billed_seats(self, day: date) -> int:
        """The seats billed for a period starting on `day`: those in force, or the committed
        minimum where a seat commitment covers that period start."""
        seats = self.seats_at(day)
        floor = self.seat_floor
        if floor is not None and floor[0] <= day < floor[1]:
            return max(seats, floor[2])
        return seats

    def billed_periods(self) -> list[int]:
        """Periods a correct system invoices: not after the cancellation took effect, and not
        a period that lies wholly inside the free trial (the trial's zero invoice covers it)."""
        ks = []
        for k in range(self.periods):
            start, end = self.period(k)
            if self.cancel_effective is not None and start >= self.cancel_effective:
                break
            if self.trial_end is not None and end <= self.trial_end:
                continue
            ks.append(k)
        return ks

    def issue_day(self, k: int) -> date:
        """The local date period k's invoice is issued: its start, or the trial's end for the
        first paid period, the next day where the billing run came after midnight (tax, fx and
        exemptions are taken on this day)."""
        start, end = self.period(k)
        if self.trial_end is not None and start < self.trial_end < end:
            return self.trial_end + timedelta(days=1) if self.run_crosses() else self.trial_end
        return start

    def run_crosses(self) -> bool:
        """Whether the billing run after the trial's end came after local midnight, still
        inside the first paid period."""
        if self.trial_end is None:
            return False
        at = self.time_of_day()
        late = at.hour * 60 + at.minute + self.run_lag >= 24 * 60
        return late and self.trial_end + timedelta(days=2) <= self._period_end_of(self.trial_end)

    def _period_end_of(self, day: date) -> date:
        k = 0
        while self.period(k)[1] <= day:
            k += 1
        return self.period(k)[1]

    def run_stamp_on(self, ended: str) -> str:
        """`run_lag` minutes after `ended`, never past the local midnight after it (a charge
        whose day was fixed before the run)."""
        at = self.time_of_day()
        lag = min(self.run_lag, max(0, 24 * 60 - 1 - at.hour * 60 - at.minute))
        moment = datetime.strptime(ended, "%Y-%m-%dT%H:%M:%SZ") + timedelta(minutes=lag)
        return moment.strftime("%Y-%m-%dT%H:%M:%SZ")

    def run_stamp(self, ended: str) -> str:
        """When the first paid invoice is issued: `run_lag` minutes after `trial_ended`, before
        midnight where the next day would leave its period."""
        if not self.run_crosses():
            return self.run_stamp_on(ended)
        moment = datetime.strptime(ended, "%Y-%m-%dT%H:%M:%SZ")
        return (moment + timedelta(minutes=self.run_lag)).strftime("%Y-%m-%dT%H:%M:%SZ")

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

    def inputs(self, k: int, world: RateBook) -> BillingInputs:
        """The correct billing inputs of period k: the period in advance, proration items for a
        plan change inside period k-1, and period k-1's usage (in arrears)."""
        start, end = self.period(k)
        before = self.period(k - 1)[0]
        current = self.plan_at(start)
        changes = [(d, p) for d, p in self.plan_changes if before < d < start]
        previous_plan = previous_seats = change_date = None
        if k > 0 and changes:
            change_date = max(changes, key=lambda c: c[0])[0]
            previous_plan = plan_terms(self.plan_at(change_date - timedelta(days=1)), before)
            previous_seats = self.billed_seats(before)
        proration_start = proration_end = None
        if self.trial_end is not None and start < self.trial_end:
            proration_start = min(self.trial_end, end)
        if self.cancel_effective is not None and start < self.cancel_effective < end:
            proration_end = self.cancel_effective  # canceled on a date: the last period prorated
        issued = self.issue_day(k)
        usage, usage_start = self.billed_usage(k)
        split = self.usage_before_change.get(before) if change_date and usage is not None else None
        used_on = self.plan_at(start - timedelta(days=1))
        scheduled_from = None  # a change scheduled at this start: the usage was on the old plan
        if k > 0 and used_on.id != current.id and (usage is not None or previous_plan):
            scheduled_from = plan_terms(used_on, before)
        return BillingInputs(
            period_start=start,
            period_end=end,
            plan=plan_terms(current, start),
            seats=self.billed_seats(start),
            **world.rates_on(issued, self.sub.id),
            previous_plan=previous_plan,
            previous_seats=previous_seats,
            plan_change_date=change_date,
            proration_start=proration_start,
            proration_end=proration_end,
            coupon=coupon_terms(self.coupon) if self.coupon and self.coupon_applies(k) else None,
            usage_units=usage,
            usage_units_before_change=split,
            usage_start=usage_start,
            scheduled_from_plan=scheduled_from,
        )

    def billed_usage(self, k: int) -> tuple[int | None, date | None]:
        """The units invoice k bills for period k-1 (in arrears) and the day they count from:
        none for the first invoice or an unmetered period; usage during a free trial is not
        billed (design §1.1), so a period the trial ended in bills from its end, and one wholly
        inside the trial bills nothing."""
        start = self.period(k)[0]
        before = self.period(k - 1)[0]
        plans = [self.plan_at(before), self.plan_at(start - timedelta(days=1))]
        plans += [p for d, p in self.plan_changes if before < d < start]
        if k == 0 or before not in self.usage or not any(p.overage_unit_price_cents for p in plans):
            return None, None
        trial = self.trial_end
        if trial is None or trial <= before:
            return self.usage[before], None
        if trial >= start:
            return None, None
        return self.usage[before] - self.usage_in_trial.get(before, 0), trial

    def trial_inputs(self, world: RateBook) -> BillingInputs:
        """The zero-amount invoice issued when the trial starts (its window is the trial)."""
        assert self.trial_end is not None
        start = self.period(0)[0]
        return BillingInputs(
            period_start=start,
            period_end=self.trial_end,
            plan=plan_terms(self.plan, start),
            seats=self.seats,
            **world.rates_on(start, self.sub.id),
            proration_start=self.trial_end,
        )
