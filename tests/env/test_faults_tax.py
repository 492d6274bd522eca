"""wrong_tax_rate and tax_exempt_charged scenarios, checked through the agent's own tools.

Scenarios come from `env.generation.generator.generate` on train seeds of each label and difficulty;
the reference is replayed through `LedgerEnv`, and the evidence is read back with a second episode
on the same scenario, exactly as an agent would see it (helpers in tests/env/fault_support.py).
Run: pytest tests/env/test_faults_tax.py
"""

from __future__ import annotations

from datetime import date, timedelta

import pytest

from env.engine.calendar import utc_to_local_date
from env.engine.money import parse_amount
from env.scenario import reveal_truth
from tests.env.fault_support import LEVELS, Tools, all_levels, check_reference, scenarios


def day(text: str) -> date:
    return date.fromisoformat(text)


# wrong_tax_rate ---------------------------------------------------------------------------


@pytest.mark.parametrize("level", LEVELS)
def test_wrong_tax_rate_reference_credits_exactly_each_overcharge(level: str) -> None:
    for scenario in scenarios("wrong_tax_rate", level):
        check_reference(scenario, "wrong_tax_rate")


def in_force(customer: dict, issued: str) -> str:
    """The customer's jurisdiction on a local issue day: the previous one before a move."""
    since = customer.get("tax_jurisdiction_since")
    if since and issued < since:
        return str(customer["previous_tax_jurisdiction"])
    return str(customer["tax_jurisdiction"])


def test_wrong_tax_rate_invoices_carry_a_higher_rate_than_the_one_in_force() -> None:
    for scenario in all_levels("wrong_tax_rate"):
        tools = Tools(scenario)
        customer = tools.customer()
        for invoice_id, cents in reveal_truth(scenario).overcharges.items():
            invoice = tools.invoice(invoice_id)
            issued = utc_to_local_date(invoice["issued_at"], customer["timezone"]).isoformat()
            home = in_force(customer, issued)
            right = tools("get_tax_rate", jurisdiction=home, date=issued)
            assert float(invoice["tax"]["rate"]) > float(right["rate"])
            again = tools("recompute_invoice", invoice_id=invoice_id, tax_rate=right["rate"])
            assert parse_amount(again["difference"]) == cents


def test_wrong_tax_rate_comes_as_an_outdated_rate_or_another_jurisdictions_rate() -> None:
    kinds = set()
    for scenario in all_levels("wrong_tax_rate", count=6):
        tools = Tools(scenario)
        customer = tools.customer()
        home = customer["tax_jurisdiction"]
        for invoice_id in reveal_truth(scenario).overcharges:
            invoice = tools.invoice(invoice_id)
            billed = invoice["tax"]
            # the rates in force on the issue day (design §1.1): a trial's first paid invoice
            # is issued when the trial ends, after its period start
            issued = utc_to_local_date(invoice["issued_at"], customer["timezone"]).isoformat()
            if billed["jurisdiction"] == home:  # outdated: the rate before the change
                now = tools("get_tax_rate", jurisdiction=home, date=issued)
                assert day(now["effective_from"]) <= day(issued)
                eve = day(now["effective_from"]) - timedelta(days=1)
                before = tools("get_tax_rate", jurisdiction=home, date=eve.isoformat())
                assert before["rate"] == billed["rate"]
                kinds.add("outdated")
            else:  # the billed rate is that other jurisdiction's rate on the day
                theirs = tools(
                    "get_tax_rate",
                    jurisdiction=billed["jurisdiction"],
                    date=issued,
                )
                assert theirs["rate"] == billed["rate"]
                kinds.add("wrong_jurisdiction")
    assert kinds == {"outdated", "wrong_jurisdiction"}


def test_wrong_tax_rate_l2_l3_records_only_the_jurisdictions_a_move_leaves() -> None:
    """Design §1.2: at L2/L3 the wrong jurisdiction is the one the customer moved from, and an
    invoice before the move rightly carries it and its rate: no value a correct world lacks."""
    for level in LEVELS[1:]:
        for scenario in scenarios("wrong_tax_rate", level, 6):
            tools = Tools(scenario)
            customer = tools.customer()
            home, previous = customer["tax_jurisdiction"], customer["previous_tax_jurisdiction"]
            victims = set(reveal_truth(scenario).overcharges)
            mine = [tools.invoice(i["invoice_id"]) for i in tools.invoices()]
            seen = {inv["tax"]["jurisdiction"] for inv in mine}
            assert seen <= {home, previous}
            wrong = {tools.invoice(v)["tax"]["jurisdiction"] for v in victims}
            if wrong != {home}:  # not the outdated form (no neighbour taxes higher)
                assert wrong == {previous}
                rightly = [i for i in mine if i["invoice_id"] not in victims]
                assert any(i["tax"]["jurisdiction"] == previous for i in rightly)


def test_wrong_tax_rate_l3_inspects_an_invoice_taxed_correctly_after_a_rate_change() -> None:
    for scenario in scenarios("wrong_tax_rate", "L3"):
        tools = Tools(scenario)
        home, timezone = tools.customer()["tax_jurisdiction"], tools.customer()["timezone"]
        truth = reveal_truth(scenario)
        looked = [c.arguments["invoice_id"] for c in truth.reference if c.name == "get_invoice"]
        changed_and_right = []
        for invoice_id in looked:
            invoice = tools.invoice(invoice_id)
            if invoice_id in truth.overcharges or invoice["tax"]["jurisdiction"] != home:
                continue
            # the rate of the local issue day (a trial's first paid invoice: the trial end)
            issued = utc_to_local_date(invoice["issued_at"], timezone).isoformat()
            right = tools("get_tax_rate", jurisdiction=home, date=issued)
            assert invoice["tax"]["rate"] == right["rate"]
            if right["effective_from"] > "2023-01-01":  # a change, and it was applied
                changed_and_right.append(invoice_id)
        assert changed_and_right


def test_reading_the_utc_issue_date_instead_of_the_local_one_finds_the_same_rate() -> None:
    for scenario in all_levels("wrong_tax_rate"):
        tools = Tools(scenario)
        home, timezone = tools.customer()["tax_jurisdiction"], tools.customer()["timezone"]
        truth = reveal_truth(scenario)
        for step in truth.reference:
            if step.name != "get_invoice":
                continue
            invoice = tools.invoice(step.arguments["invoice_id"])
            issued = utc_to_local_date(invoice["issued_at"], timezone).isoformat()
            local = tools("get_tax_rate", jurisdiction=home, date=issued)
            utc = tools("get_tax_rate", jurisdiction=home, date=invoice["issued_at"][:10])
            assert local["rate"] == utc["rate"]


# tax_exempt_charged -----------------------------------------------------------------------


@pytest.mark.parametrize("level", LEVELS)
def test_tax_exempt_charged_reference_credits_exactly_each_overcharge(level: str) -> None:
    for scenario in scenarios("tax_exempt_charged", level):
        check_reference(scenario, "tax_exempt_charged")


def test_the_exemption_window_covers_each_overcharged_invoice_and_the_tax_is_the_overcharge() -> (
    None
):
    for scenario in all_levels("tax_exempt_charged"):
        tools = Tools(scenario)
        certificate = tools.customer()["exemption_certificate"]
        assert certificate is not None
        timezone = tools.customer()["timezone"]
        for invoice_id, cents in reveal_truth(scenario).overcharges.items():
            invoice = tools.invoice(invoice_id)
            issued = utc_to_local_date(invoice["issued_at"], timezone).isoformat()
            assert certificate["valid_from"] <= issued < certificate["valid_until"]
            assert invoice["tax"]["exempt"] is False
            tax = parse_amount(invoice["tax"]["amount"])
            assert tax - parse_amount(invoice["amount_credited"]) == cents  # earlier credit
            again = tools("recompute_invoice", invoice_id=invoice_id, tax_exempt=True)
            assert parse_amount(again["difference"]) == tax


def _withheld(tools: Tools, subscription_id: str) -> list[tuple[str, str]]:
    """The windows of the subscription's `exemption_withheld` events (contract v6)."""
    events = tools("get_subscription_timeline", subscription_id=subscription_id)["events"]
    return [
        (e["details"]["issued_from"], e["details"]["issued_until"])
        for e in events
        if e["type"] == "exemption_withheld"
    ]


def test_invoices_inside_the_window_are_exempt_and_those_outside_are_rightly_taxed() -> None:
    outside_seen = 0
    for scenario in all_levels("tax_exempt_charged"):
        tools = Tools(scenario)
        certificate = tools.customer()["exemption_certificate"]
        timezone = tools.customer()["timezone"]
        truth = reveal_truth(scenario)
        for summary in tools.invoices():
            if summary["invoice_id"] in truth.overcharges:
                continue
            invoice = tools.invoice(summary["invoice_id"])
            # the issue day decides (a trial's first paid invoice: its end), where it applies
            local = utc_to_local_date(invoice["issued_at"], timezone).isoformat()
            inside = certificate["valid_from"] <= local < certificate["valid_until"]
            inside = inside and invoice["tax"]["jurisdiction"] == certificate["jurisdiction"]
            withheld = _withheld(tools, summary["subscription_id"])  # the timeline's exception
            inside = inside and not any(a <= local < b for a, b in withheld)
            assert invoice["tax"]["exempt"] is inside
            outside_seen += not inside
            issued = invoice["issued_at"][:10]  # a UTC reading must not change the answer
            utc_inside = certificate["valid_from"] <= issued < certificate["valid_until"]
            utc_inside = utc_inside and not any(a <= issued < b for a, b in withheld)
            assert inside is (
                utc_inside and invoice["tax"]["jurisdiction"] == certificate["jurisdiction"]
            )
    assert outside_seen > 0


def test_tax_exempt_charged_l3_looks_at_an_invoice_taxed_before_the_certificate() -> None:
    for scenario in scenarios("tax_exempt_charged", "L3"):
        tools = Tools(scenario)
        truth = reveal_truth(scenario)
        certificate = tools.customer()["exemption_certificate"]
        looked = [c.arguments["invoice_id"] for c in truth.reference if c.name == "get_invoice"]
        before = [
            tools.invoice(i)
            for i in looked
            if i not in truth.overcharges
            and tools.invoice(i)["period_start"] < certificate["valid_from"]
        ]
        assert before and all(inv["tax"]["exempt"] is False for inv in before)
