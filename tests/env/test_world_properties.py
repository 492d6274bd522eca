"""Property tests (hypothesis) on the billing engine and the generated timeline (design §1.1).

The engine: totals add up, a recorded invoice recomputes to itself, proration items for a
change to the same plan cancel out, and a later change never costs more on an upgrade. The
timeline: any train seed yields a world that passes every invariant of `checks.invariants`.
"""

from __future__ import annotations

from datetime import date, timedelta
from fractions import Fraction

from hypothesis import given, settings
from hypothesis import strategies as st

from checks.validate import invariant_problems
from env.engine.billing import BillingInputs, CouponTerms, PlanTerms, compute_invoice
from env.engine.records import inputs_from_json, inputs_to_json
from env.generation.generator import generate
from env.generation.splits import spec

TEAM = PlanTerms("PLN-TEAM", "Team", 1200, per_seat=True)
BUSINESS = PlanTerms("PLN-BUSINESS", "Business", 3100, per_seat=True)
GROWTH = PlanTerms(
    "PLN-GROWTH", "Growth", 14900, False, included_units=1000, overage_unit_price_cents=3
)

days_in = st.integers(min_value=0, max_value=27)
starts = st.builds(
    lambda year, month, day: date(year, month, day),
    st.integers(2025, 2026),
    st.integers(1, 12),
    st.integers(1, 28),
)


def _next_month(day: date) -> date:
    return date(day.year + day.month // 12, day.month % 12 + 1, day.day)


@st.composite
def billing_inputs(draw: st.DrawFn) -> BillingInputs:
    start = draw(starts)
    plan = draw(st.sampled_from((TEAM, BUSINESS, GROWTH)))
    coupon = draw(
        st.none()
        | st.builds(lambda p: CouponTerms("P", percent_off=Fraction(p, 100)), st.integers(5, 50))
        | st.builds(lambda c: CouponTerms("A", amount_off_cents=c), st.integers(100, 5000))
    )
    change = None
    previous = None
    if plan.per_seat and draw(st.booleans()):
        previous = TEAM if plan is BUSINESS else BUSINESS
        before = date(start.year - (start.month == 1), (start.month - 2) % 12 + 1, start.day)
        change = before + timedelta(days=draw(st.integers(1, (start - before).days - 1)))
    return BillingInputs(
        period_start=start,
        period_end=_next_month(start),
        plan=plan,
        seats=draw(st.integers(1, 40)),
        currency="EUR",
        fx_rate=Fraction(draw(st.integers(8000, 16000)), 10000),
        fx_rate_date=start,
        tax_jurisdiction="DE",
        tax_rate=Fraction(draw(st.integers(0, 25)), 100),
        tax_exempt=draw(st.booleans()),
        previous_plan=previous,
        previous_seats=None if previous is None else draw(st.integers(1, 40)),
        plan_change_date=change,
        proration_start=draw(st.none() | st.builds(lambda d: start + timedelta(days=d), days_in)),
        coupon=coupon,
        usage_units=draw(st.integers(0, 5000)) if plan.overage_unit_price_cents else None,
    )


@settings(max_examples=200, deadline=None)
@given(billing_inputs())
def test_the_totals_add_up(inputs: BillingInputs) -> None:
    amounts = compute_invoice(inputs)
    assert amounts.subtotal_cents == sum(line.amount_cents for line in amounts.lines)
    assert 0 <= amounts.discount_cents <= max(0, amounts.subtotal_cents)
    if inputs.tax_exempt:
        assert amounts.tax_cents == 0
    expected = amounts.subtotal_cents - amounts.discount_cents + amounts.tax_cents
    assert amounts.total_cents == expected


@settings(max_examples=200, deadline=None)
@given(billing_inputs())
def test_recorded_inputs_recompute_the_same_invoice(inputs: BillingInputs) -> None:
    assert compute_invoice(inputs_from_json(inputs_to_json(inputs))) == compute_invoice(inputs)


@settings(max_examples=100, deadline=None)
@given(billing_inputs())
def test_a_change_to_the_same_plan_prorates_to_nothing(inputs: BillingInputs) -> None:
    if inputs.plan_change_date is None:
        return
    same = inputs.with_overrides(previous_plan=inputs.plan, previous_seats=None)
    plain = inputs.with_overrides(previous_plan=None, plan_change_date=None)
    assert compute_invoice(same).subtotal_cents == compute_invoice(plain).subtotal_cents


@settings(max_examples=100, deadline=None)
@given(billing_inputs(), st.integers(1, 5))
def test_an_upgrade_dated_later_costs_less(inputs: BillingInputs, shift: int) -> None:
    change = inputs.plan_change_date
    if change is None or inputs.plan is not BUSINESS:  # Team -> Business: an upgrade
        return
    later = min(change + timedelta(days=shift), inputs.period_start - timedelta(days=1))
    early = compute_invoice(inputs.with_overrides(coupon=None, tax_rate=Fraction(0)))
    late = compute_invoice(
        inputs.with_overrides(coupon=None, tax_rate=Fraction(0), plan_change_date=later)
    )
    assert late.total_cents <= early.total_cents


@settings(max_examples=12, deadline=None)
@given(st.integers(min_value=0, max_value=50_000))
def test_any_train_world_obeys_the_invariants(offset: int) -> None:
    scenario = generate.__wrapped__("train", spec("train").first_seed + offset)
    assert invariant_problems(scenario) == []


@settings(max_examples=8, deadline=None)
@given(st.integers(min_value=0, max_value=49))
def test_any_heldout_world_has_a_possible_timeline(offset: int) -> None:
    scenario = generate.__wrapped__("heldout", spec("heldout").first_seed + offset)
    assert invariant_problems(scenario) == []
