"""A small hand-written BillSleuth world, and the helpers the env tests share.

The world is written row by row with `env.generation.world.WorldDraft` and billed by the one engine,
so every number the tests expect is worked out by hand in the comments below. Tests reach it the
way the agent does: `LedgerEnv.call(name, json_args)`, then inspect `final_database()`.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from datetime import date
from fractions import Fraction
from typing import Any

import pytest

from env.engine.billing import BillingInputs, CouponTerms, PlanTerms
from env.generation.freeze import freeze
from env.generation.generator import generate
from env.generation.splits import split_assignment
from env.generation.world import (
    Coupon,
    Customer,
    Event,
    Invoice,
    Payment,
    Plan,
    Subscription,
    WorldDraft,
)
from env.ledger_env import LedgerEnv
from env.scenario import Scenario, ToolCall, Truth

CUSTOMER = "CUS-HAND01"
TEAM_SUB, GROWTH_SUB = "SUB-HAND01", "SUB-HAND02"
MARCH, APRIL, MAY = "INV-HAND01", "INV-HAND02", "INV-HAND03"
OPENED_AT = "2025-06-10T09:00:00Z"
COMPLAINT = (
    "Hello, our March invoice INV-HAND01 seems to have been paid twice.\n\n"
    "Regards,\nGreta Lindqvist, Nordlicht Labs (customer CUS-HAND01)"
)
# Strings that must never reach the agent: they exist only in the hand-written truth.
SECRET_EXPLANATION = "HAND-TRUTH: PAY-HAND02 repeated PAY-HAND01 for INV-HAND01."
SECRET_SUMMARY = "HAND-REFERENCE: duplicate of 128.75 EUR refunded on INV-HAND01."

TEAM = PlanTerms("PLN-TEAM", "Team", 4900, per_seat=True)
GROWTH = PlanTerms(
    "PLN-GROWTH", "Growth", 14900, per_seat=False, included_units=1000, overage_unit_price_cents=2
)
SAVE20 = CouponTerms("SAVE20", percent_off=Fraction(1, 5))

# Hand-worked totals (cents) of the three invoices; see `_invoices` for the arithmetic.
TOTALS = {MARCH: 12875, APRIL: 19204, MAY: 14648}


def _inputs(start: date, end: date, **changes: Any) -> BillingInputs:
    base = BillingInputs(
        period_start=start,
        period_end=end,
        plan=TEAM,
        seats=3,
        currency="EUR",
        fx_rate=Fraction(92, 100),
        fx_rate_date=start,
        tax_jurisdiction="DE",
        tax_rate=Fraction(19, 100),
    )
    return base.with_overrides(**changes)


def _invoices() -> list[Invoice]:
    # March, 31 days, 3 seats x 49.00 USD at 0.92: 14700 * 0.92 = 13524; SAVE20 20 % = 2704.8
    # -> 2705; taxable 10819; DE 19 % = 2055.61 -> 2056; total 12875 (128.75 EUR).
    march = _inputs(date(2025, 3, 1), date(2025, 4, 1), coupon=SAVE20)
    # April, 30 days, seats 3 -> 5 on 2025-04-11, fx 0.95: 14700 * 10/30 * 0.95 = 4655 and
    # 24500 * 20/30 * 0.95 = 15516.67 -> 15517; subtotal 20172; 20 % = 4034.4 -> 4034;
    # taxable 16138; 19 % = 3066.22 -> 3066; total 19204 (192.04 EUR).
    april = _inputs(
        date(2025, 4, 1),
        date(2025, 5, 1),
        seats=5,
        previous_plan=TEAM,
        previous_seats=3,
        plan_change_date=date(2025, 4, 11),
        coupon=SAVE20,
        fx_rate=Fraction(95, 100),
    )
    # May, Growth flat 149.00 at 0.9213: 13727.37 -> 13727; usage 1500 - 1000 included = 500
    # x 0.02 USD x 0.9213 = 921.3 -> 921; subtotal 14648; exempt (certificate from 05-01).
    may = _inputs(
        date(2025, 5, 1),
        date(2025, 6, 1),
        plan=GROWTH,
        seats=1,
        usage_units=1500,
        fx_rate=Fraction(9213, 10000),
        tax_exempt=True,
    )
    rows = [
        (MARCH, TEAM_SUB, "2025-03-01T03:00:00Z", march, "paid"),
        (APRIL, TEAM_SUB, "2025-04-01T02:00:00Z", april, "paid"),
        (MAY, GROWTH_SUB, "2025-05-01T02:00:00Z", may, "open"),
    ]
    return [
        Invoice(id=i, customer_id=CUSTOMER, subscription_id=s, issued_at=at, correct=x, billed=x,
                status=status)
        for i, s, at, x, status in rows
    ]  # fmt: skip


def _subscriptions() -> list[Subscription]:
    team = Subscription(
        id=TEAM_SUB,
        customer_id=CUSTOMER,
        plan_id="PLN-TEAM",
        seats=5,
        status="active",
        started_at="2025-02-28T23:00:00Z",
        coupon_code="SAVE20",
        anchor_day=1,
        events=[
            Event("2025-02-28T23:00:00Z", "created", {"plan_id": "PLN-TEAM", "seats": 3}),
            Event("2025-02-28T23:00:00Z", "coupon_applied", {"coupon_code": "SAVE20"}),
            Event("2025-04-10T22:30:00Z", "seats_changed", {"from": 3, "to": 5}),
        ],
    )
    growth = Subscription(
        id=GROWTH_SUB,
        customer_id=CUSTOMER,
        plan_id="PLN-GROWTH",
        seats=1,
        status="active",
        started_at="2025-04-30T22:00:00Z",
        anchor_day=1,
        events=[Event("2025-04-30T22:00:00Z", "created", {"plan_id": "PLN-GROWTH", "seats": 1})],
        usage=[("2025-05-01", "2025-06-01", 1500)],
    )
    return [team, growth]


def hand_draft() -> WorldDraft:
    """A German customer (EUR, exemption certificate for May-July 2025) with two subscriptions."""
    customer = Customer(
        id=CUSTOMER,
        name="Greta Lindqvist",
        email="greta.lindqvist@nordlichtlabs.example",
        company="Nordlicht Labs",
        country="DE",
        region=None,
        tax_jurisdiction="DE",
        timezone="Europe/Berlin",
        currency="EUR",
        created_at="2025-02-28T22:00:00Z",
        exemption=("EXC-DE-0042", "2025-05-01", "2025-08-01"),
    )
    plans = [
        Plan("PLN-TEAM", "Team", True, 14, 0, 0, None,
             [(4900, "2023-01-01", None), (5400, "2025-05-01", "2025-04-01T07:00:00Z")]),
        Plan("PLN-GROWTH", "Growth", False, 7, 1000, 2, "API call", [(14900, "2023-01-01", None)]),
    ]  # fmt: skip
    coupons = [
        Coupon("SAVE20", "0.2", None, "2025-01-01", "2025-12-31", "repeating", 3),
        Coupon("TENOFF", None, 1000, "2025-01-01", "2025-12-31", "once", None),
    ]
    payments = [
        Payment("PAY-HAND01", MARCH, CUSTOMER, 12875, "EUR", "2025-03-02T10:00:00Z", "sepa_debit"),
        Payment("PAY-HAND02", MARCH, CUSTOMER, 12875, "EUR", "2025-03-03T10:00:00Z", "card"),
        Payment("PAY-HAND03", APRIL, CUSTOMER, 19204, "EUR", "2025-04-02T10:00:00Z", "card",
                status="failed"),
        Payment("PAY-HAND04", APRIL, CUSTOMER, 19204, "EUR", "2025-04-03T10:00:00Z", "sepa_debit"),
    ]  # fmt: skip
    return WorldDraft(
        customer=customer,
        plans=plans,
        coupons=coupons,
        subscriptions=_subscriptions(),
        tax_rates=[
            ("DE", "0.16", "2023-01-01", "2025-01-01"),
            ("DE", "0.19", "2025-01-01", None),
            ("FR", "0.2", "2023-01-01", None),
        ],
        fx_rates=[
            ("2025-03-01", "USD", "EUR", "0.92"),
            ("2025-03-15", "USD", "EUR", "0.9"),
            ("2025-04-01", "USD", "EUR", "0.95"),
            ("2025-05-01", "USD", "EUR", "0.9213"),
        ],
        invoices=_invoices(),
        payments=payments,
        dispute=("DSP-HAND01", OPENED_AT, COMPLAINT),
    )


def hand_truth() -> Truth:
    reference = (
        ToolCall("get_customer", {"customer_id": CUSTOMER}),
        ToolCall("list_invoices", {"customer_id": CUSTOMER}),  # the id as data, not an echo
        ToolCall("list_payments", {"customer_id": CUSTOMER, "invoice_id": MARCH}),
        ToolCall(
            "draft_credit_note",
            {"invoice_id": MARCH, "amount": "128.75", "reason": "Verified duplicate payment"},
        ),
        ToolCall(
            "submit_findings",
            {
                "root_cause": "duplicate_payment",
                "affected_invoices": [{"invoice_id": MARCH, "overcharge_amount": "128.75"}],
                "summary": SECRET_SUMMARY,
            },
        ),
    )
    return Truth(
        label="duplicate_payment",
        overcharges={MARCH: 12875},
        expected_credits={MARCH: 12875},
        reference=reference,
        explanation=SECRET_EXPLANATION,
    )


def build_hand_scenario() -> Scenario:
    return Scenario(
        scenario_id="hand-1",
        split="test",
        seed=0,
        difficulty="L1",
        customer_id=CUSTOMER,
        complaint=COMPLAINT,
        opened_at=OPENED_AT,
        database=freeze(hand_draft()),
        _truth=hand_truth(),
    )


@pytest.fixture(scope="session")
def hand_scenario() -> Scenario:
    return build_hand_scenario()


@pytest.fixture
def env(hand_scenario: Scenario) -> Iterator[LedgerEnv]:
    episode = LedgerEnv(hand_scenario, episode_id="ep-test")
    yield episode
    episode.close()


# helpers ------------------------------------------------------------------------------------


def call(episode: LedgerEnv, name: str, **arguments: Any) -> dict[str, Any]:
    """One tool call the way the agent makes it: JSON text in, JSON object text out."""
    result = json.loads(episode.call(name, json.dumps(arguments)))
    assert isinstance(result, dict)
    return result


def ok(episode: LedgerEnv, name: str, **arguments: Any) -> dict[str, Any]:
    result = call(episode, name, **arguments)
    assert "error" not in result, result
    return result


def error(episode: LedgerEnv, name: str, **arguments: Any) -> str:
    result = call(episode, name, **arguments)
    assert set(result) == {"error"}, result
    assert isinstance(result["error"], str) and result["error"]
    return result["error"]


def table_dump(image: bytes) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every table of a database image, in a stable order."""
    db = sqlite3.connect(":memory:")
    db.deserialize(image)
    tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    dump = {t: sorted(db.execute(f'SELECT * FROM "{t}"').fetchall(), key=repr) for t in tables}
    db.close()
    return dump


def query(image: bytes, sql: str, *args: Any) -> list[tuple[Any, ...]]:
    db = sqlite3.connect(":memory:")
    db.deserialize(image)
    rows = db.execute(sql, args).fetchall()
    db.close()
    return rows


def builder_available(label: str) -> bool:
    """False only when the builder's module or function does not exist yet."""
    from env.generation.faults import builder_for

    try:
        builder_for(label)
    except ModuleNotFoundError as exc:
        if not (exc.name or "").startswith("env.generation.faults"):
            raise
        return False
    except (KeyError, AttributeError):
        return False
    return True


def available_seeds(split: str, seeds: range, limit: int) -> list[int]:
    """Up to `limit` seeds of `split` whose label already has a builder."""
    chosen = []
    for seed in seeds:
        if builder_available(split_assignment(split, seed).label):
            chosen.append(seed)
        if len(chosen) == limit:
            break
    return chosen


def generated(split: str, seeds: range, limit: int) -> list[Scenario]:
    return [generate(split, seed) for seed in available_seeds(split, seeds, limit)]
