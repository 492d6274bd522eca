"""Every tool's happy path and error paths, called the way the agent calls them.

The hand-written world is in conftest.py; recompute expectations are worked out by hand in the
comments (cents). Error results are exactly `{"error": "..."}` and the episode goes on.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from env.ledger_env import LedgerEnv, open_database
from env.tool_specs import dispatch
from env.tools import BillingTools
from tests.env.conftest import (
    APRIL,
    CUSTOMER,
    GROWTH_SUB,
    MARCH,
    MAY,
    OPENED_AT,
    TEAM_SUB,
    build_hand_scenario,
    call,
    error,
    generated,
    ok,
    query,
    table_dump,
)

# get_customer -------------------------------------------------------------------------------


def test_get_customer_returns_timezone_currency_jurisdiction_and_certificate(
    env: LedgerEnv,
) -> None:
    result = ok(env, "get_customer", customer_id=CUSTOMER)
    assert result["customer_id"] == CUSTOMER
    assert (result["country"], result["region"], result["tax_jurisdiction"]) == ("DE", None, "DE")
    assert (result["timezone"], result["currency"]) == ("Europe/Berlin", "EUR")
    assert result["exemption_certificate"] == {
        "certificate_id": "EXC-DE-0042",
        "valid_from": "2025-05-01",
        "valid_until": "2025-08-01",
        "jurisdiction": "DE",  # no jurisdiction drawn: the customer's own
    }
    assert (result["previous_tax_jurisdiction"], result["tax_jurisdiction_since"]) == (None, None)
    assert result["subscription_ids"] == [TEAM_SUB, GROWTH_SUB]


def test_get_customer_with_an_unknown_id_says_what_ids_look_like(env: LedgerEnv) -> None:
    assert "CUS-" in error(env, "get_customer", customer_id="CUS-NOPE00")


def test_get_customer_without_its_argument_names_the_accepted_arguments(env: LedgerEnv) -> None:
    assert "customer_id" in error(env, "get_customer")


# list_invoices ------------------------------------------------------------------------------


def _ids(result: dict[str, Any], key: str = "invoices", field: str = "invoice_id") -> list[str]:
    return [item[field] for item in result[key]]


def test_list_invoices_lists_summaries_in_period_order(env: LedgerEnv) -> None:
    result = ok(env, "list_invoices", customer_id=CUSTOMER)
    assert _ids(result) == [MARCH, APRIL, MAY]
    assert result["invoices"][0] == {
        "invoice_id": MARCH,
        "subscription_id": TEAM_SUB,
        "period_start": "2025-03-01",
        "period_end": "2025-04-01",
        "issued_at": "2025-03-01T03:00:00Z",
        "currency": "EUR",
        "total": "128.75",
        "status": "paid",
    }
    assert [item["total"] for item in result["invoices"]] == ["128.75", "192.04", "146.48"]


@pytest.mark.parametrize(
    ("status", "expected"), [("paid", [MARCH, APRIL]), ("open", [MAY]), ("void", [])]
)
def test_list_invoices_filters_by_status(env: LedgerEnv, status: str, expected: list[str]) -> None:
    assert _ids(ok(env, "list_invoices", customer_id=CUSTOMER, status=status)) == expected


def test_list_invoices_filters_by_period_start_range(env: LedgerEnv) -> None:
    later = ok(env, "list_invoices", customer_id=CUSTOMER, period_from="2025-04-01")
    assert _ids(later) == [APRIL, MAY]
    earlier = ok(env, "list_invoices", customer_id=CUSTOMER, period_to="2025-03-31")
    assert _ids(earlier) == [MARCH]
    both = ok(
        env, "list_invoices", customer_id=CUSTOMER, period_from="2025-04-01", period_to="2025-04-01"
    )
    assert _ids(both) == [APRIL]


def test_list_invoices_refuses_an_unknown_status_and_lists_the_accepted_ones(
    env: LedgerEnv,
) -> None:
    message = error(env, "list_invoices", customer_id=CUSTOMER, status="refunded")
    assert "'paid'" in message and "'open'" in message and "'void'" in message


@pytest.mark.parametrize("bad", ["2025-13-01", "2025-02-30", "03/01/2025", "2025-3-1", "yesterday"])
def test_list_invoices_refuses_bad_dates(env: LedgerEnv, bad: str) -> None:
    assert "period_from" in error(env, "list_invoices", customer_id=CUSTOMER, period_from=bad)
    assert "period_to" in error(env, "list_invoices", customer_id=CUSTOMER, period_to=bad)


def test_list_invoices_for_an_unknown_customer_is_an_error(env: LedgerEnv) -> None:
    assert "CUS-" in error(env, "list_invoices", customer_id="CUS-NOPE00")


# get_invoice --------------------------------------------------------------------------------


def test_get_invoice_shows_inputs_lines_tax_and_what_was_paid(env: LedgerEnv) -> None:
    result = ok(env, "get_invoice", invoice_id=APRIL)
    assert (result["customer_id"], result["subscription_id"]) == (CUSTOMER, TEAM_SUB)
    inputs = result["billing_inputs"]
    assert (inputs["seats"], inputs["previous_seats"], inputs["plan_change_date"]) == (
        5,
        3,
        "2025-04-11",
    )
    assert inputs["coupon"] == {"coupon_code": "SAVE20", "percent_off": "0.2", "amount_off": None}
    assert (inputs["fx_rate"], inputs["fx_rate_date"]) == ("0.95", "2025-04-01")
    assert [line["amount"] for line in result["lines"]] == ["46.55", "155.17"]
    assert (result["subtotal"], result["discount"], result["total"]) == (
        "201.72",
        "40.34",
        "192.04",
    )
    assert result["tax"] == {
        "jurisdiction": "DE",
        "rate": "0.19",
        "exempt": False,
        "amount": "30.66",
    }
    assert result["amount_paid"] == "192.04"  # the failed attempt does not count
    assert (result["amount_credited"], result["credit_notes"]) == ("0.00", [])


def test_get_invoice_counts_both_succeeded_payments_of_a_duplicate(env: LedgerEnv) -> None:
    assert ok(env, "get_invoice", invoice_id=MARCH)["amount_paid"] == "257.50"


def test_get_invoice_of_an_exempt_metered_invoice(env: LedgerEnv) -> None:
    result = ok(env, "get_invoice", invoice_id=MAY)
    assert result["status"] == "open"
    assert result["tax"] == {"jurisdiction": "DE", "rate": "0.19", "exempt": True, "amount": "0.00"}
    assert [(line["quantity"], line["amount"]) for line in result["lines"]] == [
        (1, "137.27"),
        (500, "9.21"),
    ]
    assert result["billing_inputs"]["usage_units"] == 1500
    assert result["amount_paid"] == "0.00"


def test_get_invoice_with_an_unknown_id_is_an_error(env: LedgerEnv) -> None:
    assert "INV-" in error(env, "get_invoice", invoice_id="INV-NOPE00")


# list_payments ------------------------------------------------------------------------------


def test_list_payments_lists_every_payment_in_time_order_with_its_status(env: LedgerEnv) -> None:
    payments = ok(env, "list_payments", customer_id=CUSTOMER)["payments"]
    assert [p["payment_id"] for p in payments] == [
        "PAY-HAND01",
        "PAY-HAND02",
        "PAY-HAND03",
        "PAY-HAND04",
    ]
    assert payments[2] == {
        "payment_id": "PAY-HAND03",
        "invoice_id": APRIL,
        "amount": "192.04",
        "currency": "EUR",
        "paid_at": "2025-04-02T10:00:00Z",
        "method": "card",
        "status": "failed",
        "applied_from": None,
    }


def test_list_payments_filtered_by_invoice_shows_the_duplicate(env: LedgerEnv) -> None:
    payments = ok(env, "list_payments", customer_id=CUSTOMER, invoice_id=MARCH)["payments"]
    assert [(p["amount"], p["status"]) for p in payments] == [
        ("128.75", "succeeded"),
        ("128.75", "succeeded"),
    ]
    assert ok(env, "list_payments", customer_id=CUSTOMER, invoice_id=MAY)["payments"] == []


def test_list_payments_with_unknown_ids_is_an_error(env: LedgerEnv) -> None:
    assert "CUS-" in error(env, "list_payments", customer_id="CUS-NOPE00")
    assert "INV-" in error(env, "list_payments", customer_id=CUSTOMER, invoice_id="INV-NOPE00")


# get_subscription_timeline ------------------------------------------------------------------


def test_timeline_shows_plan_prices_coupon_terms_and_ordered_events(env: LedgerEnv) -> None:
    result = ok(env, "get_subscription_timeline", subscription_id=TEAM_SUB)
    assert (result["customer_id"], result["seats"], result["status"]) == (CUSTOMER, 5, "active")
    plan = result["plan"]
    assert (plan["plan_id"], plan["pricing"], plan["trial_days"]) == ("PLN-TEAM", "per_seat", 14)
    assert plan["price_history"] == [
        {"unit_price": "49.00", "effective_from": "2023-01-01", "announced_at": None},
        {
            "unit_price": "54.00",
            "effective_from": "2025-05-01",
            "announced_at": "2025-04-01T07:00:00Z",
        },
    ]
    assert result["coupon"] == {
        "code": "SAVE20",
        "percent_off": "0.2",
        "amount_off": None,
        "valid_from": "2025-01-01",
        "valid_until": "2025-12-31",
        "duration": "repeating",
        "duration_periods": 3,
    }
    assert [(e["occurred_at"], e["type"]) for e in result["events"]] == [
        ("2025-02-28T23:00:00Z", "created"),
        ("2025-02-28T23:00:00Z", "coupon_applied"),
        ("2025-04-10T22:30:00Z", "seats_changed"),
    ]
    assert result["events"][2]["details"] == {"from": 3, "to": 5}
    assert result["usage"] == []


def test_timeline_of_a_metered_plan_shows_usage_per_period(env: LedgerEnv) -> None:
    result = ok(env, "get_subscription_timeline", subscription_id=GROWTH_SUB)
    assert result["usage"] == [
        {"period_start": "2025-05-01", "period_end": "2025-06-01", "units": 1500}
    ]
    plan = result["plan"]
    assert (plan["included_units"], plan["overage_unit_price"], plan["unit_name"]) == (
        1000,
        "0.02",
        "API call",
    )
    assert result["coupon"] is None


def test_timeline_with_an_unknown_id_is_an_error(env: LedgerEnv) -> None:
    assert "SUB-" in error(env, "get_subscription_timeline", subscription_id="SUB-NOPE00")


# get_tax_rate -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("day", "rate", "window"),
    [
        ("2025-03-01", "0.19", ("2025-01-01", None)),
        ("2025-01-01", "0.19", ("2025-01-01", None)),  # effective_to is exclusive
        ("2024-12-31", "0.16", ("2023-01-01", "2025-01-01")),
    ],
)
def test_get_tax_rate_returns_the_rate_in_force_and_its_window(
    env: LedgerEnv, day: str, rate: str, window: tuple[str, str | None]
) -> None:
    result = ok(env, "get_tax_rate", jurisdiction="DE", date=day)
    assert result == {
        "jurisdiction": "DE",
        "date": day,
        "rate": rate,
        "effective_from": window[0],
        "effective_to": window[1],
    }


def test_get_tax_rate_for_an_unknown_jurisdiction_lists_the_known_ones(env: LedgerEnv) -> None:
    message = error(env, "get_tax_rate", jurisdiction="XX", date="2025-03-01")
    assert "unknown jurisdiction" in message and "DE, FR" in message


def test_get_tax_rate_before_any_recorded_rate_is_an_error(env: LedgerEnv) -> None:
    message = error(env, "get_tax_rate", jurisdiction="DE", date="2022-06-01")
    assert "no DE tax rate recorded for 2022-06-01" in message


@pytest.mark.parametrize("bad", ["2025/03/01", "2025-02-29", "", "01-03-2025"])
def test_get_tax_rate_refuses_bad_dates(env: LedgerEnv, bad: str) -> None:
    assert "date" in error(env, "get_tax_rate", jurisdiction="DE", date=bad)


# recompute_invoice --------------------------------------------------------------------------


def _recompute(env: LedgerEnv, invoice_id: str, **overrides: Any) -> dict[str, Any]:
    return ok(env, "recompute_invoice", invoice_id=invoice_id, **overrides)


@pytest.mark.parametrize("invoice_id", [MARCH, APRIL, MAY])
def test_recompute_without_overrides_reproduces_the_billed_invoice(
    env: LedgerEnv, invoice_id: str
) -> None:
    billed = ok(env, "get_invoice", invoice_id=invoice_id)
    result = _recompute(env, invoice_id)
    assert (result["difference"], result["overrides_applied"]) == ("0.00", [])
    assert result["total"] == result["billed_total"] == billed["total"]
    assert result["lines"] == billed["lines"]
    assert result["tax"] == billed["tax"]
    assert result["assumptions"] == billed["billing_inputs"]


@pytest.mark.parametrize(
    ("invoice_id", "overrides", "total", "difference"),
    [
        # 9800 x 0.92 = 9016; 20 % = 1803.2 -> 1803; 7213 x 19 % = 1370.47 -> 1370; 8583
        (MARCH, {"seats": 2}, "85.83", "42.92"),
        # 10819 x 16 % = 1731.04 -> 1731; 12550
        (MARCH, {"tax_rate": "0.16"}, "125.50", "3.25"),
        (MARCH, {"tax_rate": "16%"}, "125.50", "3.25"),
        (MARCH, {"tax_exempt": True}, "108.19", "20.56"),
        # 10.00 USD x 0.92 = 920 off; 12604 x 19 % = 2394.76 -> 2395; 14999
        (MARCH, {"coupon_code": "TENOFF"}, "149.99", "-21.24"),
        # 14700 x 0.9 = 13230; 20 % = 2646; 10584 x 19 % = 2010.96 -> 2011; 12595
        (MARCH, {"fx_rate": "0.9"}, "125.95", "2.80"),
        (MARCH, {"fx_rate_date": "2025-03-15"}, "125.95", "2.80"),
        # Growth 149.00 x 0.92 = 13708; 20 % = 2741.6 -> 2742; 10966 x 19 % = 2083.54 -> 2084
        (MARCH, {"plan_id": "PLN-GROWTH"}, "130.50", "-1.75"),
        # Team is 54.00 from 2025-05-01: 16200 x 0.92 = 14904; 2981 off; 11923 + 2265 = 14188
        (
            MARCH,
            {"plan_id": "PLN-TEAM", "period_start": "2025-05-01", "period_end": "2025-06-01"},
            "141.88",
            "-13.13",
        ),
        # 17/31 days: 229908 / 31 = 7416.39 -> 7416; 1483 off; 5933 + 1127 = 7060
        (MARCH, {"proration_start": "2025-03-15"}, "70.60", "58.15"),
        # 10/31 days: 135240 / 31 = 4362.58 -> 4363; 873 off; 3490 + 663 = 4153
        (MARCH, {"proration_end": "2025-03-11"}, "41.53", "87.22"),
        # 3 seats 20/30 days = 9310; 5 seats 10/30 days = 7758.33 -> 7758; 3414 off; 13654 + 2594
        (APRIL, {"plan_change_date": "2025-04-21"}, "162.48", "29.56"),
        # 200 overage units x 0.02 x 0.9213 = 368.52 -> 369; 13727 + 369 = 14096
        (MAY, {"usage_units": 1200}, "140.96", "5.52"),
        # 1000 overage units: 2000 x 0.9213 = 1842.6 -> 1843; 13727 + 1843 = 15570
        (MAY, {"included_units": 500}, "155.70", "-9.22"),
        # 14648 x 19 % = 2783.12 -> 2783
        (MAY, {"tax_exempt": False}, "174.31", "-27.83"),
    ],
)
def test_recompute_substitutes_each_override(
    env: LedgerEnv, invoice_id: str, overrides: dict[str, Any], total: str, difference: str
) -> None:
    result = _recompute(env, invoice_id, **overrides)
    assert (result["total"], result["difference"]) == (total, difference)
    assert result["overrides_applied"] == sorted(overrides)
    assert result["billed_total"] == {MARCH: "128.75", APRIL: "192.04", MAY: "146.48"}[invoice_id]


def test_recompute_with_an_fx_rate_date_echoes_the_rate_it_looked_up(env: LedgerEnv) -> None:
    assumptions = _recompute(env, MARCH, fx_rate_date="2025-03-15")["assumptions"]
    assert (assumptions["fx_rate"], assumptions["fx_rate_date"]) == ("0.9", "2025-03-15")


def test_recompute_with_a_plan_echoes_the_plan_terms_it_used(env: LedgerEnv) -> None:
    plan = _recompute(env, MARCH, plan_id="PLN-GROWTH")["assumptions"]["plan"]
    assert plan == {
        "plan_id": "PLN-GROWTH",
        "plan_name": "Growth",
        "unit_price": "149.00",
        "pricing": "flat",
        "included_units": 1000,
        "overage_unit_price": "0.02",
    }


def test_recompute_with_an_fx_date_without_a_rate_lists_the_dates_that_have_one(
    env: LedgerEnv,
) -> None:
    message = error(env, "recompute_invoice", invoice_id=MARCH, fx_rate_date="2025-03-20")
    assert "2025-03-01" in message and "2025-03-15" in message and "2025-05-01" in message


@pytest.mark.parametrize(
    ("overrides", "hint"),
    [
        ({"seats": -1}, "seats must be 0 or more"),
        ({"usage_units": -5}, "usage_units must be 0 or more"),
        ({"included_units": -1}, "included_units must be 0 or more"),
        ({"seats": 2.5}, "seats"),
        ({"seats": "many"}, "seats"),
        ({"tax_rate": "abc"}, "tax_rate"),
        ({"tax_rate": "1.5"}, "tax_rate must be a fraction"),
        ({"tax_rate": "-0.1"}, "tax_rate must be a fraction"),
        ({"tax_rate": "0.19e0"}, "tax_rate"),
        ({"fx_rate": "1_000"}, "fx_rate"),
        ({"fx_rate": "١.٠"}, "fx_rate"),
        ({"tax_rate": "%"}, "tax_rate"),
        ({"tax_rate": "NaN"}, "tax_rate"),
        ({"fx_rate": "0"}, "fx_rate must be a positive decimal"),
        ({"fx_rate": "abc"}, "fx_rate"),
        ({"fx_rate": "0.9", "fx_rate_date": "2025-03-15"}, "not both"),
        ({"fx_rate_date": "15.03.2025"}, "fx_rate_date"),
        ({"plan_id": "PLN-NOPE"}, "PLN-"),
        ({"coupon_code": "NOPE"}, "coupon"),
        ({"period_start": "2025-02-30"}, "calendar date"),
        ({"period_end": "2025-02-01"}, "cannot bill"),
        ({"proration_start": "March 15"}, "proration_start"),
        (
            {"plan_id": "PLN-TEAM", "period_start": "2022-01-01", "period_end": "2022-02-01"},
            "no price in force on 2022-01-01",
        ),
        ({"discount": "5.00"}, "discount"),
    ],
)
def test_recompute_refuses_bad_overrides_with_a_hint(
    env: LedgerEnv, overrides: dict[str, Any], hint: str
) -> None:
    assert hint in error(env, "recompute_invoice", invoice_id=MARCH, **overrides)


def test_recompute_of_an_unknown_invoice_is_an_error(env: LedgerEnv) -> None:
    assert "INV-" in error(env, "recompute_invoice", invoice_id="INV-NOPE00")


@pytest.mark.timeout(10)
@pytest.mark.parametrize("rate", ["1e-1000000", "1E+1000000", "0.9e-999999"])
def test_recompute_refuses_rates_in_exponent_notation_quickly(env: LedgerEnv, rate: str) -> None:
    # A rate with a huge exponent used to make the exact arithmetic run for minutes.
    assert "error" in call(env, "recompute_invoice", invoice_id=MARCH, fx_rate=rate)
    assert "error" in call(env, "recompute_invoice", invoice_id=MARCH, tax_rate=rate)


def test_recompute_reproduces_every_invoice_of_generated_scenarios() -> None:
    scenarios = generated("train", range(1_000_000, 1_000_400), 30) + generated(
        "eval", range(100_000, 100_100), 10
    )
    assert scenarios, "no fault builder is importable yet"
    checked = 0
    for scenario in scenarios:
        episode = LedgerEnv(scenario, tool_budget=1000)
        for summary in ok(episode, "list_invoices", customer_id=scenario.customer_id)["invoices"]:
            billed = ok(episode, "get_invoice", invoice_id=summary["invoice_id"])
            result = ok(episode, "recompute_invoice", invoice_id=summary["invoice_id"])
            assert result["difference"] == "0.00", (scenario.scenario_id, summary["invoice_id"])
            assert result["total"] == result["billed_total"] == summary["total"]
            assert result["lines"] == billed["lines"]
            checked += 1
        episode.close()
    assert checked >= len(scenarios)


# draft_credit_note --------------------------------------------------------------------------


def test_draft_credit_note_writes_a_draft_row_stamped_with_episode_and_dispute_time(
    env: LedgerEnv,
) -> None:
    result = ok(
        env, "draft_credit_note", invoice_id=MARCH, amount="128.75", reason="  duplicate payment "
    )
    assert result == {
        "credit_note": {
            "credit_note_id": "CN-0001",
            "invoice_id": MARCH,
            "amount": "128.75",
            "currency": "EUR",
            "reason": "duplicate payment",
            "status": "draft",
        },
        "invoice_uncredited_total": "0.00",
    }
    rows = query(env.final_database(), "SELECT * FROM credit_notes")
    assert rows == [
        ("CN-0001", MARCH, 12875, "EUR", "duplicate payment", "draft", "ep-test", OPENED_AT)
    ]


def test_get_invoice_shows_the_credit_notes_drafted_in_the_episode(env: LedgerEnv) -> None:
    ok(env, "draft_credit_note", invoice_id=APRIL, amount="10.00", reason="seat proration")
    ok(env, "draft_credit_note", invoice_id=APRIL, amount="0.05", reason="rounding")
    result = ok(env, "get_invoice", invoice_id=APRIL)
    assert result["amount_credited"] == "10.05"
    assert [(n["credit_note_id"], n["amount"], n["status"]) for n in result["credit_notes"]] == [
        ("CN-0001", "10.00", "draft"),
        ("CN-0002", "0.05", "draft"),
    ]


@pytest.mark.parametrize(
    ("amount", "hint"),
    [
        ("0", "greater than 0.00"),
        ("0.00", "greater than 0.00"),
        ("-1", "148.20"),
        ("-0.01", "148.20"),
        ("1.234", "at most two decimals"),
        ("12,50", "148.20"),
        ("€12.50", "148.20"),
        ("", "148.20"),
        ("128.76", "exceeds the uncredited total 128.75 EUR"),
    ],
)
def test_draft_credit_note_refuses_bad_amounts(env: LedgerEnv, amount: str, hint: str) -> None:
    assert hint in error(env, "draft_credit_note", invoice_id=MARCH, amount=amount, reason="x")
    assert query(env.final_database(), "SELECT * FROM credit_notes") == []


def test_draft_credit_note_takes_an_exact_json_number_and_refuses_an_inexact_one(
    env: LedgerEnv,
) -> None:
    """The same amount rules as the findings: a JSON number that is exactly a two-decimal value
    is read exactly; 5.4899999999999999999 is not rounded to 5.49 on the way in."""
    raw = '{"invoice_id": "%s", "amount": %s, "reason": "x"}'
    refused = json.loads(env.call("draft_credit_note", raw % (MARCH, "5.4899999999999999999")))
    assert "5.4899999999999999999" in refused["error"] and "two decimals" in refused["error"]
    assert "error" in json.loads(env.call("draft_credit_note", raw % (MARCH, "true")))
    made = json.loads(env.call("draft_credit_note", raw % (MARCH, "5.490")))
    assert made["credit_note"]["amount"] == "5.49"
    assert (
        ok(env, "draft_credit_note", invoice_id=MARCH, amount=5, reason="x")["credit_note"][
            "amount"
        ]
        == "5.00"
    )


def test_two_notes_together_may_not_exceed_the_invoice_total(env: LedgerEnv) -> None:
    ok(env, "draft_credit_note", invoice_id=MARCH, amount="100.00", reason="part one")
    message = error(env, "draft_credit_note", invoice_id=MARCH, amount="28.76", reason="part two")
    assert "exceeds the uncredited total 28.75 EUR" in message
    last = ok(env, "draft_credit_note", invoice_id=MARCH, amount="28.75", reason="part two")
    assert last["invoice_uncredited_total"] == "0.00"
    assert "0.00" in error(env, "draft_credit_note", invoice_id=MARCH, amount="0.01", reason="x")
    assert len(query(env.final_database(), "SELECT * FROM credit_notes")) == 2


def test_draft_credit_note_on_an_unknown_invoice_is_an_error(env: LedgerEnv) -> None:
    assert "INV-" in error(
        env, "draft_credit_note", invoice_id="INV-NOPE00", amount="1.00", reason="x"
    )


@pytest.mark.parametrize("reason", ["", "   ", "\n\t", "x" * 501])
def test_draft_credit_note_needs_a_short_non_empty_reason(env: LedgerEnv, reason: str) -> None:
    message = error(env, "draft_credit_note", invoice_id=MARCH, amount="1.00", reason=reason)
    assert "reason must be non-empty" in message


# submit_findings ----------------------------------------------------------------------------

GOOD_ITEMS = [{"invoice_id": MARCH, "overcharge_amount": "128.75"}]


def test_submit_findings_ends_the_episode_and_keeps_the_findings(env: LedgerEnv) -> None:
    result = ok(
        env,
        "submit_findings",
        root_cause="duplicate_payment",
        affected_invoices=GOOD_ITEMS,
        summary="PAY-HAND02 repeated PAY-HAND01.",
    )
    assert result == {
        "status": "submitted",
        "root_cause": "duplicate_payment",
        "affected_invoices": 1,
    }
    assert env.submitted and env.done and not env.truncated
    assert env.findings is not None
    assert env.findings.affected_invoices[0].overcharge_cents == 12875


def test_submit_findings_reads_a_number_amount_as_two_decimals(env: LedgerEnv) -> None:
    items = [{"invoice_id": MARCH, "overcharge_amount": 12.5}]
    ok(env, "submit_findings", root_cause="duplicate_payment", affected_invoices=items, summary="")
    assert env.findings is not None
    assert env.findings.affected_invoices[0].overcharge_amount == "12.50"


def test_submit_findings_with_an_unknown_label_is_refused_and_the_episode_goes_on(
    env: LedgerEnv,
) -> None:
    message = error(
        env, "submit_findings", root_cause="overcharged", affected_invoices=[], summary="x"
    )
    assert "root_cause" in message and "no_error" in message
    assert not env.done and env.findings is None
    assert ok(env, "get_customer", customer_id=CUSTOMER)["customer_id"] == CUSTOMER
    ok(env, "submit_findings", root_cause="no_error", affected_invoices=[], summary="fine")
    assert env.submitted


@pytest.mark.parametrize(
    "items",
    [
        [{"invoice_id": MARCH}],
        [{"overcharge_amount": "1.00"}],
        [{"invoice_id": "12345", "overcharge_amount": "1.00"}],
        [{"invoice_id": MARCH, "overcharge_amount": "-5.00"}],
        [{"invoice_id": MARCH, "overcharge_amount": "0.00"}],
        [{"invoice_id": MARCH, "overcharge_amount": "1.234"}],
        [{"invoice_id": MARCH, "overcharge_amount": "1,000.00"}],
        [{"invoice_id": MARCH, "overcharge_amount": True}],
        [{"invoice_id": MARCH, "overcharge_amount": "1.00", "note": "extra"}],
        [GOOD_ITEMS[0], GOOD_ITEMS[0]],
        [MARCH],
        "INV-HAND01: 128.75",
        {"invoice_id": MARCH, "overcharge_amount": "128.75"},
    ],
)
def test_submit_findings_refuses_malformed_items_and_the_episode_goes_on(
    env: LedgerEnv, items: Any
) -> None:
    error(
        env, "submit_findings", root_cause="duplicate_payment", affected_invoices=items, summary=""
    )
    assert not env.done
    ok(
        env,
        "submit_findings",
        root_cause="duplicate_payment",
        affected_invoices=GOOD_ITEMS,
        summary="",
    )


def test_submit_findings_needs_every_argument(env: LedgerEnv) -> None:
    assert "summary" in error(env, "submit_findings", root_cause="no_error", affected_invoices=[])
    assert not env.done


def test_a_second_submit_findings_is_refused(env: LedgerEnv) -> None:
    args = {"root_cause": "no_error", "affected_invoices": [], "summary": "nothing wrong"}
    ok(env, "submit_findings", **args)
    assert "over" in error(env, "submit_findings", **args)


def test_the_tool_itself_refuses_a_second_submission() -> None:
    scenario = build_hand_scenario()
    tools = BillingTools(open_database(scenario.database), episode_id="e", now=OPENED_AT)
    raw = '{"root_cause": "no_error", "affected_invoices": [], "summary": ""}'
    assert dispatch(tools, "submit_findings", raw)["status"] == "submitted"
    assert "already submitted" in dispatch(tools, "submit_findings", raw)["error"]


def test_submit_findings_does_not_touch_the_database(env: LedgerEnv) -> None:
    before = table_dump(env.final_database())
    ok(
        env,
        "submit_findings",
        root_cause="duplicate_payment",
        affected_invoices=GOOD_ITEMS,
        summary="",
    )
    assert table_dump(env.final_database()) == before
