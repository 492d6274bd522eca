"""The payment and fx look-alikes (`env.generation.lookalikes_pay`, design §1.2): a second charge
that an earlier credit note made good occurs at L2/L3 in several classes, billed correctly and owed
nothing, told apart from a duplicate by the invoice's `amount_credited`; at L2/L3 no invoice
converts at a rate the table does not hold for its recorded date, nor counts included units
other than its plan's (those decisive comparisons stay at L1)."""

from __future__ import annotations

import json
import sqlite3
from collections import Counter

from checks.invariants import world_problems
from env.engine.money import format_cents, parse_amount
from env.generation.generator import generate
from env.generation.splits import spec
from env.ledger_env import open_database
from env.scenario import Scenario, reveal_truth
from tests.env.fault_support import Tools, all_levels

SEEDS = range(spec("train").first_seed, spec("train").first_seed + 300)


def _cents(text: str) -> int:
    return int(parse_amount(text))


def _excess(scenario: Scenario) -> dict[str, int]:
    """Per invoice: succeeded minus refunded payments beyond its total."""
    db = open_database(scenario.database)
    try:
        totals = dict(db.execute("SELECT id, total_cents FROM invoices").fetchall())
        net: Counter[str] = Counter()
        for invoice_id, cents, status in db.execute(
            "SELECT invoice_id, amount_cents, status FROM payments"
        ):
            net[invoice_id] += {"succeeded": cents, "refunded": -cents}.get(status, 0)
        return {i: net[i] - totals[i] for i in totals if net[i] > totals[i]}
    finally:
        db.close()


def _credited_excess() -> list[tuple[Scenario, str]]:
    """(scenario, invoice) where net payments exceed the total and an earlier credit returns it."""
    found = []
    for seed in SEEDS:
        scenario = generate("train", seed)
        over = reveal_truth(scenario).overcharges
        kept = _kept_invoice(scenario)  # world v5: an excess kept on account, no credit note
        found += [(scenario, i) for i in _excess(scenario) if i not in over and i != kept]
    return found


def _kept_invoice(scenario: Scenario) -> str | None:
    """The invoice whose second charge the customer keeps as account credit, if any."""
    db = open_database(scenario.database)
    try:
        row = db.execute(
            "SELECT p.invoice_id FROM customers c JOIN payments p "
            "ON p.id = c.account_credit_payment_id"
        ).fetchone()
        return None if row is None else str(row[0])
    finally:
        db.close()


def test_a_credited_second_charge_occurs_at_l2_l3_in_several_classes() -> None:
    found = _credited_excess()
    labels = {reveal_truth(s).label for s, _ in found}
    assert {s.difficulty for s, _ in found} == {"L2", "L3"}
    assert len(labels) >= 5 and "no_error" in labels


def test_its_invoice_is_billed_correctly_and_the_credit_note_shows_it_returned() -> None:
    for scenario, invoice_id in _credited_excess()[:12]:
        tools = Tools(scenario)
        invoice = tools.invoice(invoice_id)
        paid = [
            p
            for p in tools("list_payments", customer_id=scenario.customer_id)["payments"]
            if p["invoice_id"] == invoice_id and p["status"] == "succeeded"
        ]
        assert len(paid) >= 2
        assert tools("recompute_invoice", invoice_id=invoice_id)["difference"] == "0.00"
        excess = _excess(scenario)[invoice_id]
        assert _cents(invoice["amount_credited"]) == excess  # the separating record
        assert invoice_id not in reveal_truth(scenario).overcharges


def test_a_duplicate_payment_is_not_returned_by_any_earlier_credit() -> None:
    for scenario in all_levels("duplicate_payment"):
        tools = Tools(scenario)
        for invoice_id, cents in reveal_truth(scenario).overcharges.items():
            assert _excess(scenario)[invoice_id] == cents
            assert tools.invoice(invoice_id)["amount_credited"] == "0.00"


def test_fx_and_included_units_match_their_tables_at_l2_l3() -> None:
    for seed in SEEDS:
        scenario = generate("train", seed)
        if scenario.difficulty == "L1":
            continue
        db = open_database(scenario.database)
        fx = {(q, d): r for d, q, r in db.execute("SELECT date, quote, rate FROM fx_rates")}
        plans = dict(db.execute("SELECT id, included_units FROM plans").fetchall())
        for (text,) in db.execute("SELECT inputs FROM invoices"):
            inputs = json.loads(text)
            if inputs["currency"] != "USD":
                assert fx[(inputs["currency"], inputs["fx_rate_date"])] == inputs["fx_rate"]
            plan = inputs["plan"]
            assert plan["included_units"] == plans[plan["plan_id"]], scenario.scenario_id
        db.close()


def test_a_credit_note_before_its_invoice_or_beyond_its_total_is_flagged() -> None:
    scenario, invoice_id = _credited_excess()[0]
    faulted = set(reveal_truth(scenario).overcharges)
    db = open_database(scenario.database)
    db.row_factory = sqlite3.Row
    assert world_problems(db, faulted) == []
    db.execute(
        "UPDATE credit_notes SET created_at = '2000-01-01T00:00:00Z', amount_cents = "
        "amount_cents + 10000000 WHERE invoice_id = ?",
        (invoice_id,),
    )
    problems = world_problems(db, faulted)
    assert any("dated before invoice" in p for p in problems)
    assert any("beyond its total" in p for p in problems)


def test_a_partly_refunded_duplicate_is_owed_the_rest_derived_in_the_summary() -> None:
    found = 0
    for scenario in all_levels("duplicate_payment", 8):
        truth = reveal_truth(scenario)
        if "still owed" not in truth.explanation:
            continue
        found += 1
        ((invoice_id, cents),) = truth.overcharges.items()
        payments = Tools(scenario)("list_payments", customer_id=scenario.customer_id)["payments"]
        mine = [p for p in payments if p["invoice_id"] == invoice_id]
        (refund,) = [p for p in mine if p["status"] == "refunded"]
        second = mine[-2] if mine[-1] is refund else mine[-1]
        owed = _cents(second["amount"]) - _cents(refund["amount"])
        assert owed == cents
        calc = f"{second['amount']} − {refund['amount']} = {format_cents(cents)}"
        assert calc in truth.explanation  # rewards/README.md G10: a one-step calculation
    assert found


def test_validate_accepts_an_overcharge_derived_in_one_step_from_printed_amounts() -> None:
    from checks.validate import derived_amounts

    shown = '{"amount": "120.00"}, {"amount": "45.50"}'
    assert derived_amounts("took 120.00 − 45.50 = 74.50 EUR", shown) == {"74.50"}
    assert derived_amounts("took 120.00 − 45.50 = 70.00 EUR", shown) == set()  # wrong
    assert derived_amounts("took 120.00 − 40.00 = 80.00 EUR", shown) == set()  # unprinted
