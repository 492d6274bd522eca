"""Hand-worked examples of the billing engine (env/engine/billing.py); the arithmetic is in
comments.

Amounts are cents. Every line is rounded half-up once, after proration and fx; discount and
tax are rounded once each.
"""

from __future__ import annotations

from datetime import date
from fractions import Fraction
from typing import Any

import pytest

from env.engine.billing import (
    BillingError,
    BillingInputs,
    CouponTerms,
    PlanTerms,
    compute_invoice,
)
from tests.env.conftest import TOTALS, hand_draft

TEAM = PlanTerms("PLN-TEAM", "Team", 4900, per_seat=True)
STARTER = PlanTerms("PLN-STARTER", "Starter", 2900, per_seat=False)
GROWTH = PlanTerms(
    "PLN-GROWTH", "Growth", 14900, per_seat=False, included_units=1000, overage_unit_price_cents=2
)
JAN = (date(2025, 1, 1), date(2025, 2, 1))  # 31 days
FEB = (date(2025, 2, 1), date(2025, 3, 1))  # 28 days
APR = (date(2025, 4, 1), date(2025, 5, 1))  # 30 days


def inputs(period: tuple[date, date] = JAN, **changes: Any) -> BillingInputs:
    base = BillingInputs(
        period_start=period[0],
        period_end=period[1],
        plan=TEAM,
        seats=3,
        currency="USD",
        fx_rate=Fraction(1),
        fx_rate_date=period[0],
        tax_jurisdiction="US-CA",
        tax_rate=Fraction(0),
    )
    return base.with_overrides(**changes)


def test_a_full_period_bills_price_times_seats() -> None:
    amounts = compute_invoice(inputs())
    assert [line.amount_cents for line in amounts.lines] == [14700]  # 49.00 x 3
    assert amounts.lines[0].quantity == 3
    assert amounts.lines[0].description == "Team (PLN-TEAM) x 3 seats"
    assert (amounts.subtotal_cents, amounts.discount_cents, amounts.tax_cents) == (14700, 0, 0)
    assert amounts.total_cents == 14700


def test_proration_bills_17_of_31_days_of_three_seats() -> None:
    # 4900 x 3 x 17 / 31 = 249900 / 31 = 8061.29 -> 8061
    amounts = compute_invoice(inputs(proration_start=date(2025, 1, 15)))
    (line,) = amounts.lines
    assert line.amount_cents == 8061
    assert line.description.endswith("prorated 17/31 days from 2025-01-15")
    assert amounts.total_cents == 8061


def test_proration_end_stops_the_charge_before_the_period_end() -> None:
    # 1 Jan to 11 Jan = 10 days: 14700 x 10 / 31 = 4741.94 -> 4742
    amounts = compute_invoice(inputs(proration_end=date(2025, 1, 11)))
    assert amounts.total_cents == 4742


def test_a_charged_window_outside_the_period_is_clipped_to_it() -> None:
    clipped = inputs(proration_start=date(2024, 12, 1), proration_end=date(2025, 3, 1))
    assert compute_invoice(clipped).total_cents == 14700


def test_trial_ending_inside_the_period_prorates_from_the_trial_end() -> None:
    # flat 29.00, trial ends 10 Feb: 19 of 28 days, 2900 x 19 / 28 = 1967.86 -> 1968
    amounts = compute_invoice(inputs(FEB, plan=STARTER, seats=1, proration_start=date(2025, 2, 10)))
    (line,) = amounts.lines
    assert line.amount_cents == 1968
    assert line.quantity == 1
    assert (
        line.description
        == "Starter (PLN-STARTER) x 1 subscription, prorated 19/28 days from 2025-02-10"
    )


def test_an_empty_charged_window_bills_nothing() -> None:
    # a trial's zero invoice: one line at 0.00 that says so
    empty = inputs(proration_start=date(2025, 1, 20), proration_end=date(2025, 1, 20))
    amounts = compute_invoice(empty.with_overrides(tax_rate=Fraction(19, 100)))
    (line,) = amounts.lines
    assert (line.amount_cents, line.quantity) == (0, 3)
    assert line.description == "Team (PLN-TEAM) free trial, 2025-01-01 to 2025-02-01"
    assert (amounts.subtotal_cents, amounts.discount_cents, amounts.tax_cents) == (0, 0, 0)
    assert amounts.total_cents == 0


def test_a_trial_covering_the_whole_period_bills_nothing() -> None:
    amounts = compute_invoice(inputs(proration_start=date(2025, 2, 1)))
    assert amounts.total_cents == 0


def test_plan_change_mid_period_bills_each_plan_for_its_days() -> None:
    # April (30 days), Starter 29.00 flat until 11 Apr, then Team 49.00 x 3:
    # 2900 x 10/30 = 966.67 -> 967; 14700 x 20/30 = 9800
    amounts = compute_invoice(
        inputs(APR, previous_plan=STARTER, previous_seats=1, plan_change_date=date(2025, 4, 11))
    )
    assert [line.amount_cents for line in amounts.lines] == [967, 9800]
    assert [line.quantity for line in amounts.lines] == [1, 3]
    assert "prorated 10/30 days from 2025-04-01" in amounts.lines[0].description
    assert "prorated 20/30 days from 2025-04-11" in amounts.lines[1].description
    assert amounts.total_cents == 10767


def test_a_seat_change_mid_period_bills_old_and_new_seats() -> None:
    # 2 seats for 15 days, 5 seats for 15 days: 4900 x 2 / 2 = 4900; 4900 x 5 / 2 = 12250
    amounts = compute_invoice(
        inputs(
            APR, seats=5, previous_plan=TEAM, previous_seats=2, plan_change_date=date(2025, 4, 16)
        )
    )
    assert [line.amount_cents for line in amounts.lines] == [4900, 12250]


def test_a_change_on_or_before_the_start_bills_only_the_new_plan() -> None:
    change = inputs(APR, previous_plan=STARTER, previous_seats=1, plan_change_date=APR[0])
    assert [line.amount_cents for line in compute_invoice(change).lines] == [14700]


def test_a_change_at_or_after_the_end_bills_only_the_previous_plan() -> None:
    change = inputs(APR, previous_plan=STARTER, previous_seats=1, plan_change_date=APR[1])
    assert [line.amount_cents for line in compute_invoice(change).lines] == [2900]


def test_previous_seats_default_to_the_current_seats() -> None:
    # Starter is flat, so quantity 1 before; Team x 3 after: 2900/2 = 1450; 14700/2 = 7350
    change = inputs(APR, previous_plan=STARTER, plan_change_date=date(2025, 4, 16))
    assert [line.amount_cents for line in compute_invoice(change).lines] == [1450, 7350]


def test_metered_overage_bills_units_beyond_the_included_ones() -> None:
    # 1500 used, 1000 included: 500 x 0.02 = 10.00 on top of 149.00
    amounts = compute_invoice(inputs(plan=GROWTH, seats=1, usage_units=1500))
    base, usage = amounts.lines
    assert base.amount_cents == 14900
    assert (usage.quantity, usage.amount_cents) == (500, 1000)
    assert usage.description == (
        "Usage overage, 2024-12-01 to 2025-01-01: 1500 units, 1000 included, 500 billed at 0.02 USD"
    )
    assert amounts.total_cents == 15900


def test_usage_within_the_included_units_bills_a_zero_overage_line() -> None:
    amounts = compute_invoice(inputs(plan=GROWTH, seats=1, usage_units=800))
    assert [(line.quantity, line.amount_cents) for line in amounts.lines][1] == (0, 0)
    assert amounts.total_cents == 14900


def test_no_usage_line_without_recorded_usage_or_on_an_unmetered_plan() -> None:
    assert len(compute_invoice(inputs(plan=GROWTH, seats=1)).lines) == 1
    assert len(compute_invoice(inputs(usage_units=5000)).lines) == 1


def test_percent_coupon_and_tax_are_each_rounded_once() -> None:
    # 14700, 20 % off = 2940; taxable 11760; 19 % = 2234.4 -> 2234; total 13994
    coupon = CouponTerms("SAVE20", percent_off=Fraction(1, 5))
    amounts = compute_invoice(inputs(coupon=coupon, tax_rate=Fraction(19, 100)))
    assert (amounts.discount_cents, amounts.tax_cents, amounts.total_cents) == (2940, 2234, 13994)


def test_fixed_coupon_is_converted_at_the_invoice_fx_rate() -> None:
    # 14700 x 0.92 = 13524 EUR cents; 10.00 USD off x 0.92 = 920
    coupon = CouponTerms("TENOFF", amount_off_cents=1000)
    amounts = compute_invoice(inputs(currency="EUR", fx_rate=Fraction(92, 100), coupon=coupon))
    assert (amounts.subtotal_cents, amounts.discount_cents, amounts.total_cents) == (
        13524,
        920,
        12604,
    )


def test_a_fixed_coupon_never_discounts_more_than_the_subtotal() -> None:
    coupon = CouponTerms("HUGE", amount_off_cents=100_000)
    amounts = compute_invoice(inputs(coupon=coupon, tax_rate=Fraction(19, 100)))
    assert (amounts.discount_cents, amounts.tax_cents, amounts.total_cents) == (14700, 0, 0)


def test_a_coupon_on_an_empty_window_discounts_nothing() -> None:
    coupon = CouponTerms("TENOFF", amount_off_cents=1000)
    empty = inputs(coupon=coupon, proration_start=JAN[1])
    assert compute_invoice(empty).discount_cents == 0


def test_tax_exemption_removes_the_tax() -> None:
    amounts = compute_invoice(inputs(tax_rate=Fraction(19, 100), tax_exempt=True))
    assert (amounts.tax_cents, amounts.total_cents) == (0, 14700)


def test_fx_is_applied_and_rounded_per_line_not_on_the_subtotal() -> None:
    # 49.99 flat x 0.9213 = 4605.5787 -> 4606; 333 overage units x 1 cent x 0.9213 = 306.79 -> 307
    # per line: 4913; converting the USD subtotal 5332 at once would give 4912.37 -> 4912
    plan = PlanTerms("PLN-G", "Growth", 4999, per_seat=False, overage_unit_price_cents=1)
    amounts = compute_invoice(
        inputs(plan=plan, seats=1, usage_units=333, currency="EUR", fx_rate=Fraction(9213, 10000))
    )
    assert [line.amount_cents for line in amounts.lines] == [4606, 307]
    assert amounts.subtotal_cents == 4913


def test_tax_of_exactly_half_a_cent_rounds_up_not_to_even() -> None:
    # flat 10.50 at 5 % tax = 52.5 cents -> 53 (banker's rounding would give 52)
    plan = PlanTerms("PLN-X", "X", 1050, per_seat=False)
    amounts = compute_invoice(inputs(plan=plan, seats=1, tax_rate=Fraction(5, 100)))
    assert (amounts.tax_cents, amounts.total_cents) == (53, 1103)


def test_a_line_of_exactly_half_a_cent_rounds_up() -> None:
    # 1 cent flat for 15 of 30 days = 0.5 -> 1; 5 cents for 15/30 = 2.5 -> 3 (even would be 2)
    one = PlanTerms("PLN-Y", "Y", 1, per_seat=False)
    five = PlanTerms("PLN-Z", "Z", 5, per_seat=False)
    half = {"seats": 1, "proration_start": date(2025, 4, 16)}
    assert compute_invoice(inputs(APR, plan=one, **half)).total_cents == 1
    assert compute_invoice(inputs(APR, plan=five, **half)).total_cents == 3


def test_percent_discount_of_exactly_half_a_cent_rounds_up() -> None:
    # 10.50 x 5 % = 52.5 -> 53 off
    plan = PlanTerms("PLN-X", "X", 1050, per_seat=False)
    coupon = CouponTerms("FIVE", percent_off=Fraction(5, 100))
    assert compute_invoice(inputs(plan=plan, seats=1, coupon=coupon)).discount_cents == 53


def test_zero_seats_bill_zero_for_a_per_seat_plan() -> None:
    amounts = compute_invoice(inputs(seats=0))
    assert amounts.lines[0].description == "Team (PLN-TEAM) x 0 seats"
    assert amounts.total_cents == 0


@pytest.mark.parametrize(
    "changes",
    [
        {"period_end": JAN[0]},
        {"period_end": date(2024, 12, 1)},
        {"seats": -1},
        {"previous_seats": -2},
    ],
)
def test_the_engine_refuses_an_empty_period_and_negative_seats(changes: dict[str, Any]) -> None:
    with pytest.raises(BillingError):
        compute_invoice(inputs(**changes))


def test_the_hand_written_world_bills_the_hand_worked_totals() -> None:
    draft = hand_draft()
    assert {inv.id: inv.billed_amounts().total_cents for inv in draft.invoices} == TOTALS
    assert draft.overcharges() == {"INV-HAND01": 12875}


def test_a_plan_change_in_the_previous_period_is_prorated_on_this_invoice() -> None:
    # Feb invoice, Team -> Starter... upgrade Starter (29.00 flat) -> Team (49.00 x 3) on 21 Jan:
    # 11 of January's 31 days: credit 2900 x 11/31 = 1029.03 -> -1029,
    # charge 4900 x 3 x 11/31 = 5216.13 -> 5216; advance Feb: 14700
    amounts = compute_invoice(
        inputs(FEB, previous_plan=STARTER, previous_seats=3, plan_change_date=date(2025, 1, 21))
    )
    assert [line.amount_cents for line in amounts.lines] == [14700, -1029, 5216]
    assert amounts.lines[1].description.startswith("Unused time on Starter (PLN-STARTER) x 1")
    assert amounts.total_cents == 14700 - 1029 + 5216


def test_a_closing_invoice_bills_only_the_previous_periods_proration() -> None:
    # the same change, the subscription canceled at the end of January: the charge stops where
    # February starts (proration_end = period_start), so no Feb line: -1029 + 5216
    amounts = compute_invoice(
        inputs(
            FEB,
            previous_plan=STARTER,
            previous_seats=3,
            plan_change_date=date(2025, 1, 21),
            proration_end=FEB[0],
        )
    )
    assert [line.amount_cents for line in amounts.lines] == [-1029, 5216]
    assert amounts.total_cents == 5216 - 1029


def test_a_plan_change_before_the_previous_period_is_refused() -> None:
    with pytest.raises(BillingError, match="before the previous period"):
        compute_invoice(inputs(FEB, previous_plan=STARTER, plan_change_date=date(2024, 12, 31)))


def test_usage_is_labelled_with_the_previous_period() -> None:
    amounts = compute_invoice(inputs(FEB, plan=GROWTH, seats=1, usage_units=1500))
    assert amounts.lines[-1].description.startswith("Usage overage, 2025-01-01 to 2025-02-01")
    assert amounts.lines[-1].amount_cents == 1000  # 500 units x 2 cents


SCALE = PlanTerms(
    "PLN-SCALE", "Scale", 29900, per_seat=False, included_units=10000, overage_unit_price_cents=1
)


def test_usage_across_a_plan_change_bills_each_part_on_its_own_plan() -> None:
    # invoice for Feb carries January's usage; Growth -> Scale on Jan 11 (10 of 31 days before)
    # Growth part: 3000 units, 1000 * 10/31 = 322.58 -> 323 included, 2677 x 2c = 5354
    # Scale part: 9000 units, 10000 * 21/31 = 6774.19 -> 6774 included, 2226 x 1c = 2226
    billed = inputs(
        FEB,
        plan=SCALE,
        seats=1,
        previous_plan=GROWTH,
        plan_change_date=date(2025, 1, 11),
        usage_units=12000,
        usage_units_before_change=3000,
    )
    usage = [line for line in compute_invoice(billed).lines if line.description.startswith("Usage")]
    assert [line.amount_cents for line in usage] == [5354, 2226]
    assert usage[0].description.startswith("Usage overage, 2025-01-01 to 2025-01-11: 3000 units")
    assert usage[1].description.startswith("Usage overage, 2025-01-11 to 2025-02-01: 9000 units")


def test_usage_without_a_split_bills_on_the_invoice_plan_with_its_whole_allowance() -> None:
    # 12000 units on Scale, 10000 included: 2000 x 1c
    billed = inputs(FEB, plan=SCALE, seats=1, usage_units=12000)
    usage = [line for line in compute_invoice(billed).lines if line.description.startswith("Usage")]
    assert [line.amount_cents for line in usage] == [2000]


def test_the_usage_split_is_recorded_and_read_back() -> None:
    from env.engine.records import inputs_from_json, inputs_to_json

    billed = inputs(
        FEB,
        plan=SCALE,
        seats=1,
        previous_plan=GROWTH,
        plan_change_date=date(2025, 1, 11),
        usage_units=12000,
        usage_units_before_change=3000,
    )
    assert inputs_from_json(inputs_to_json(billed)) == billed


def _usage_lines(billed: BillingInputs) -> list[Any]:
    return [line for line in compute_invoice(billed).lines if line.description.startswith("Usage")]


def test_usage_from_a_trials_end_bills_only_those_days_with_a_prorated_allowance() -> None:
    # trial ended Jan 22: 10 of January's 31 days are billed; 1000 * 10/31 = 322.58 -> 323
    # included; the 700 units used since then: 377 x 2c (the trial's units are not billed)
    billed = inputs(FEB, plan=GROWTH, seats=1, usage_units=700, usage_start=date(2025, 1, 22))
    (usage,) = _usage_lines(billed)
    assert usage.amount_cents == 754
    assert usage.description.startswith(
        "Usage overage, 2025-01-22 to 2025-02-01: 700 units, 323 included"
    )


def test_usage_from_a_trials_end_is_split_again_at_a_later_plan_change() -> None:
    # trial to Jan 6, Growth -> Scale on Jan 11: Growth 5 days (161 included), Scale 21 days
    billed = inputs(
        FEB,
        plan=SCALE,
        seats=1,
        previous_plan=GROWTH,
        plan_change_date=date(2025, 1, 11),
        usage_units=9000,
        usage_units_before_change=1000,
        usage_start=date(2025, 1, 6),
    )
    lines = _usage_lines(billed)
    assert [line.amount_cents for line in lines] == [(1000 - 161) * 2, 8000 - 6774]
    assert lines[0].description.startswith("Usage overage, 2025-01-06 to 2025-01-11")


def test_a_period_wholly_inside_the_trial_bills_no_usage() -> None:
    billed = inputs(FEB, plan=GROWTH, seats=1, usage_units=700, usage_start=date(2025, 2, 1))
    assert _usage_lines(billed) == []


def test_usage_before_a_scheduled_change_bills_on_the_plan_it_was_used_on() -> None:
    # January on Growth, Scale from Feb 1 (scheduled): 1500 units on Growth's terms, 500 x 2c
    billed = inputs(FEB, plan=SCALE, seats=1, usage_units=1500, scheduled_from_plan=GROWTH)
    (usage,) = _usage_lines(billed)
    assert usage.amount_cents == 1000
    assert compute_invoice(billed).lines[0].amount_cents == SCALE.unit_price_cents


def test_the_trial_and_scheduled_usage_inputs_are_recorded_and_read_back() -> None:
    from env.engine.records import inputs_from_json, inputs_to_json

    billed = inputs(
        FEB,
        plan=SCALE,
        seats=1,
        usage_units=1500,
        usage_start=date(2025, 1, 22),
        scheduled_from_plan=GROWTH,
    )
    assert inputs_from_json(inputs_to_json(billed)) == billed
