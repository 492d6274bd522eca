"""coupon_not_applied, usage_overage_miscalculated, currency_conversion_error, via the tools.

Same method as tests/env/test_faults_tax.py, with the helpers of tests/env/fault_support.py:
generated train scenarios per difficulty, the reference replayed through `LedgerEnv`, then the
evidence read back through a second episode. Run: pytest tests/env/test_faults_pricing.py
"""

from __future__ import annotations

from datetime import date
from decimal import Decimal
from typing import Any

import pytest

from env.engine.billing import previous_period_start
from env.engine.calendar import fx_day, utc_to_local_date
from env.engine.money import parse_amount
from env.generation.builder import data
from env.scenario import reveal_truth
from tests.env.fault_support import LEVELS, Tools, all_levels, check_reference, scenarios

# coupon_not_applied -----------------------------------------------------------------------


@pytest.mark.parametrize("level", LEVELS)
def test_coupon_not_applied_reference_credits_exactly_each_overcharge(level: str) -> None:
    for scenario in scenarios("coupon_not_applied", level):
        check_reference(scenario, "coupon_not_applied")


def _coupon_periods(tools: Tools, timeline: dict[str, Any], timezone: str) -> list[str]:
    """Period starts the coupon's terms cover, by the timeline's event, window and duration.

    `timezone` "UTC" reads the event's UTC date, the mistake a careless agent makes.
    """
    coupon = timeline["coupon"]
    applied = [
        utc_to_local_date(e["occurred_at"], timezone).isoformat()
        for e in timeline["events"]
        if e["type"] == "coupon_applied" and e["details"]["coupon_code"] == coupon["code"]
    ]
    assert len(applied) == 1
    starts = sorted(  # a trial's 0.00 invoice starts with the first paid period: one period
        {
            inv["period_start"]
            for inv in tools.invoices()
            if inv["subscription_id"] == timeline["subscription_id"]
        }
    )
    eligible = [
        s for s in starts if applied[0] <= s and coupon["valid_from"] <= s <= coupon["valid_until"]
    ]
    if coupon["duration"] == "once":
        return eligible[:1]
    if coupon["duration"] == "repeating":
        return eligible[: coupon["duration_periods"]]
    return eligible


def _applied_at_signup(timeline: dict[str, Any]) -> bool:
    stamps = {e["type"]: e["occurred_at"] for e in timeline["events"]}
    return stamps["coupon_applied"] == stamps["created"]


def test_each_uncouponed_invoice_falls_inside_the_coupons_periods() -> None:
    for scenario in all_levels("coupon_not_applied"):
        tools = Tools(scenario)
        timezone = tools.customer()["timezone"]
        for invoice_id, cents in reveal_truth(scenario).overcharges.items():
            invoice = tools.invoice(invoice_id)
            timeline = tools.timeline(invoice["subscription_id"])
            assert invoice["billing_inputs"]["coupon"] is None
            assert invoice["discount"] == "0.00"
            covered = _coupon_periods(tools, timeline, timezone)
            assert invoice["period_start"] in covered
            if not _applied_at_signup(timeline):  # then it shares the `created` timestamp
                assert _coupon_periods(tools, timeline, "UTC") == covered  # no timezone trap
            again = tools(
                "recompute_invoice", invoice_id=invoice_id, coupon_code=timeline["coupon"]["code"]
            )
            assert parse_amount(again["difference"]) == cents


def test_invoices_of_the_coupons_subscription_carry_it_exactly_in_its_periods() -> None:
    for scenario in all_levels("coupon_not_applied"):
        tools = Tools(scenario)
        truth = reveal_truth(scenario)
        timezone = tools.customer()["timezone"]
        first = tools.invoice(next(iter(truth.overcharges)))
        timeline = tools.timeline(first["subscription_id"])
        covered = _coupon_periods(tools, timeline, timezone)
        for summary in tools.invoices():
            if (
                summary["subscription_id"] != timeline["subscription_id"]
                or summary["invoice_id"] in truth.overcharges
            ):
                continue
            inputs = tools.invoice(summary["invoice_id"])["billing_inputs"]
            if inputs["proration_start"] == inputs["period_end"]:
                continue  # a trial's zero invoice
            assert (inputs["coupon"] is not None) is (summary["period_start"] in covered)


def test_coupon_not_applied_l3_inspects_a_rightly_undiscounted_invoice() -> None:
    for scenario in scenarios("coupon_not_applied", "L3"):
        tools = Tools(scenario)
        truth = reveal_truth(scenario)
        timezone = tools.customer()["timezone"]
        sub = tools.invoice(next(iter(truth.overcharges)))["subscription_id"]
        covered = _coupon_periods(tools, tools.timeline(sub), timezone)
        looked = [c.arguments["invoice_id"] for c in truth.reference if c.name == "get_invoice"]
        near = [
            tools.invoice(i)
            for i in looked
            if i not in truth.overcharges and tools.invoice(i)["subscription_id"] == sub
        ]
        assert near
        for invoice in near:
            assert invoice["discount"] == "0.00" and invoice["period_start"] not in covered


# usage_overage_miscalculated ----------------------------------------------------------------


@pytest.mark.parametrize("level", LEVELS)
def test_usage_overage_reference_credits_exactly_each_overcharge(level: str) -> None:
    for scenario in scenarios("usage_overage_miscalculated", level):
        check_reference(scenario, "usage_overage_miscalculated")


def _recorded_units(
    timeline: dict[str, Any], period_start: str, usage_start: str | None = None
) -> int:
    """Usage is billed in arrears: the records of the period that ends where this one starts
    (two parts when the plan changed inside it), from `usage_start` (a trial's end: usage
    during the trial is not billed)."""
    before = previous_period_start(date.fromisoformat(period_start)).isoformat()
    before = max(before, usage_start or before)
    units = [
        u["units"]
        for u in timeline["usage"]
        if before <= u["period_start"] and u["period_end"] <= period_start
    ]
    assert 1 <= len(units) <= 2
    late = [c["units"] for c in timeline["usage_corrections"] if c["period_end"] == period_start]
    return int(sum(units) + sum(late))  # a usage correction adds a late batch


def _allowance(tools: Tools, invoice_id: str, plan_id: str) -> int:
    """The included units of `plan_id` as the catalog has them (a plan change between Growth
    and Scale bills usage on the plan in force when the invoice's period starts)."""
    recomputed = tools("recompute_invoice", invoice_id=invoice_id, plan_id=plan_id)
    return int(recomputed["assumptions"]["plan"]["included_units"])


def test_overcharged_usage_counts_a_batch_twice_or_ignores_the_included_units() -> None:
    kinds = set()
    for scenario in all_levels("usage_overage_miscalculated", count=5) + scenarios(
        "usage_overage_miscalculated", "L1", count=30
    ):
        tools = Tools(scenario)
        for invoice_id, cents in reveal_truth(scenario).overcharges.items():
            invoice = tools.invoice(invoice_id)
            timeline = tools.timeline(invoice["subscription_id"])
            billed = invoice["billing_inputs"]
            recorded = _recorded_units(timeline, invoice["period_start"], billed["usage_start"])
            included = _allowance(tools, invoice_id, billed["plan"]["plan_id"])
            if billed["usage_units"] > recorded:  # a batch of at most the whole first count
                assert billed["usage_units"] <= 2 * recorded
                assert billed["plan"]["included_units"] == included
                again = tools("recompute_invoice", invoice_id=invoice_id, usage_units=recorded)
                kinds.add("double_counted")
            else:
                assert billed["usage_units"] == recorded
                assert billed["plan"]["included_units"] == 0 < included
                again = tools("recompute_invoice", invoice_id=invoice_id, included_units=included)
                kinds.add("included_not_subtracted")
            assert parse_amount(again["difference"]) == cents
    assert kinds == {"double_counted", "included_not_subtracted"}


def test_usage_near_misses_are_the_storys_own_periods_billed_correctly() -> None:
    """L3's near misses (world v4: usage drawn as in every class): a period over its allowance
    (a real overage) and one under it, each billed from its usage records."""
    shapes_seen: set[str] = set()
    for scenario in scenarios("usage_overage_miscalculated", "L3"):
        tools = Tools(scenario)
        truth = reveal_truth(scenario)
        sub = tools.invoice(next(iter(truth.overcharges)))["subscription_id"]
        timeline = tools.timeline(sub)
        over = under = 0
        for summary in tools.invoices():
            if summary["subscription_id"] != sub or summary["invoice_id"] in truth.overcharges:
                continue
            billed = tools.invoice(summary["invoice_id"])["billing_inputs"]
            if billed["usage_units"] is None:  # the first invoice: no usage period behind it
                continue
            recorded = _recorded_units(timeline, summary["period_start"], billed["usage_start"])
            assert billed["usage_units"] == recorded
            included = billed["plan"]["included_units"]
            assert included == _allowance(tools, summary["invoice_id"], billed["plan"]["plan_id"])
            over += recorded > included
            under += recorded <= included
        traps = set(truth.traps)
        assert over or "usage_spike_decoy" not in traps
        assert under or "usage_under_decoy" not in traps
        shapes_seen |= {t for t in traps if t.startswith("usage_")}
    assert shapes_seen == {"usage_spike_decoy", "usage_under_decoy"}


# currency_conversion_error ------------------------------------------------------------------


@pytest.mark.parametrize("level", LEVELS)
def test_currency_conversion_reference_credits_exactly_each_overcharge(level: str) -> None:
    for scenario in scenarios("currency_conversion_error", level):
        check_reference(scenario, "currency_conversion_error")


def test_overcharged_conversions_used_another_days_rate() -> None:
    kinds = set()
    for scenario in all_levels("currency_conversion_error", count=8):
        tools = Tools(scenario)
        assert tools.customer()["currency"] != "USD"
        for invoice_id, cents in reveal_truth(scenario).overcharges.items():
            invoice = tools.invoice(invoice_id)
            billed = invoice["billing_inputs"]
            # the rate of the local issue day: the period start, or a trial's end
            # (the last business day before it when it falls on a weekend)
            issued = fx_day(utc_to_local_date(invoice["issued_at"], tools.customer()["timezone"]))
            right = tools(
                "recompute_invoice", invoice_id=invoice_id, fx_rate_date=issued.isoformat()
            )
            assert parse_amount(right["difference"]) == cents
            correct_rate = Decimal(right["assumptions"]["fx_rate"])
            assert Decimal(billed["fx_rate"]) > correct_rate
            if billed["fx_rate_date"] != issued.isoformat():  # the rate really is that day's
                gap = issued - date.fromisoformat(billed["fx_rate_date"])
                assert gap.days >= 2  # never the UTC date of a local-midnight issue
                same = tools(
                    "recompute_invoice", invoice_id=invoice_id, fx_rate_date=billed["fx_rate_date"]
                )
                assert same["difference"] == "0.00"
                kinds.add("wrong_date")
    assert kinds == {"wrong_date"}


def test_invoices_not_credited_use_the_rate_of_their_issue_day() -> None:
    for scenario in all_levels("currency_conversion_error"):
        tools = Tools(scenario)
        truth = reveal_truth(scenario)
        customer = tools.customer()
        timezone, lock = customer["timezone"], customer.get("fx_rate_lock")
        for summary in tools.invoices():
            if summary["invoice_id"] in truth.overcharges:
                continue
            invoice = tools.invoice(summary["invoice_id"])
            day = utc_to_local_date(invoice["issued_at"], timezone).isoformat()
            issued = fx_day(utc_to_local_date(invoice["issued_at"], timezone)).isoformat()
            locked = lock and lock["subscription_id"] == summary.get("subscription_id")
            if locked and lock["issued_from"] <= day < lock["issued_until"]:
                issued = lock["rate_date"]  # a rate lock's own date (env/README.md look-alikes)
            assert invoice["billing_inputs"]["fx_rate_date"] == issued


def test_an_invoice_issued_on_a_weekend_converts_at_the_fridays_rate() -> None:
    seen = 0
    for scenario in all_levels("currency_conversion_error", count=8):
        tools = Tools(scenario)
        truth = reveal_truth(scenario)
        customer = tools.customer()
        timezone, lock = customer["timezone"], customer.get("fx_rate_lock")
        for summary in tools.invoices():
            invoice = tools.invoice(summary["invoice_id"])
            issued = utc_to_local_date(invoice["issued_at"], timezone)
            if issued.weekday() < 5 or summary["invoice_id"] in truth.overcharges:
                continue
            locked = lock and lock["subscription_id"] == summary.get("subscription_id")
            if locked and lock["issued_from"] <= issued.isoformat() < lock["issued_until"]:
                continue  # a rate lock's own date, the test above
            recorded = date.fromisoformat(invoice["billing_inputs"]["fx_rate_date"])
            assert recorded.weekday() == 4 and 1 <= (issued - recorded).days <= 2
            seen += 1
    assert seen


def test_currency_l3_inspects_an_invoice_whose_high_rate_is_its_own_days_rate() -> None:
    for scenario in scenarios("currency_conversion_error", "L3"):
        tools = Tools(scenario)
        truth = reveal_truth(scenario)
        sub = tools.invoice(next(iter(truth.overcharges)))["subscription_id"]
        rates = {
            s["invoice_id"]: Decimal(tools.invoice(s["invoice_id"])["billing_inputs"]["fx_rate"])
            for s in tools.invoices()
            if s["subscription_id"] == sub and s["invoice_id"] not in truth.overcharges
        }
        looked = [c.arguments["invoice_id"] for c in truth.reference if c.name == "get_invoice"]
        jump = [i for i in looked if i in rates]
        # at the top of the table's usual band (`lookalikes_pay.fx_high_rate`), not beyond it
        base = Decimal(data("catalog.json")["fx_base"][tools.customer()["currency"]])
        low, high = base * Decimal("1.03"), base * Decimal("1.04")  # 4 decimals: +-0.00005
        assert len(jump) == 1 and low - Decimal("0.0001") <= rates[jump[0]] <= high + Decimal(
            "0.0001"
        )
        again = tools(
            "recompute_invoice",
            invoice_id=jump[0],
            fx_rate_date=tools.invoice(jump[0])["billing_inputs"]["fx_rate_date"],
        )
        assert again["difference"] == "0.00"
