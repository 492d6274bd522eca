"""The service-site look-alike (`env.generation.lookalikes_supply`, design §1.2 "same shape"): at
L2/L3 in several classes the first one or two invoices after a move on record are taxed in the
jurisdiction the customer moved from, at its higher table rate, rightly, because the main
subscription's service stayed at the old site (`get_subscription_timeline`'s `place_of_supply`);
`wrong_tax_rate`'s victims look the same on `get_invoice` and `get_customer` and have no such
record. The rule itself (`env.engine.supply.taxed_in`) is tested here too."""

from __future__ import annotations

import sqlite3
from datetime import date
from functools import cache
from typing import Any

from checks.invariants import world_problems
from env.engine.calendar import utc_to_local_date
from env.engine.money import parse_rate
from env.engine.supply import taxed_in
from env.generation.generator import generate
from env.generation.splits import spec
from env.ledger_env import open_database
from env.scenario import Scenario, reveal_truth
from tests.env.fault_support import Tools, all_levels

SEEDS = range(spec("train").first_seed, spec("train").first_seed + 300)


@cache
def _sited() -> tuple[tuple[Scenario, str], ...]:
    """(scenario, subscription) of every service site on record among the seeds."""
    found = []
    for seed in SEEDS:
        scenario = generate("train", seed)
        db = open_database(scenario.database)
        rows = db.execute("SELECT subscription_id FROM supply_sites").fetchall()
        db.close()
        found += [(scenario, sub) for (sub,) in rows]
    return tuple(found)


def _issued(tools: Tools, invoice: dict[str, Any], timezone: str) -> str:
    return utc_to_local_date(invoice["issued_at"], timezone).isoformat()


def test_the_rule_a_site_then_the_move_then_the_customers_own() -> None:
    move = ("US-CA", "2025-06-01")
    site = ("US-CA", "2025-07-10")
    assert taxed_in(date(2025, 5, 1), "US-WA", move) == "US-CA"  # before the move
    assert taxed_in(date(2025, 6, 5), "US-WA", move) == "US-WA"
    assert taxed_in(date(2025, 6, 5), "US-WA", move, site) == "US-CA"  # the site still there
    assert taxed_in(date(2025, 7, 10), "US-WA", move, site) == "US-WA"  # until is exclusive
    assert taxed_in(date(2026, 1, 1), "US-WA", move, ("US-CA", None)) == "US-CA"  # open-ended
    assert taxed_in(date(2025, 5, 1), "US-WA", (None, None)) == "US-WA"


def test_a_site_occurs_at_l2_l3_in_several_classes_and_never_in_the_tax_classes() -> None:
    found = _sited()
    assert {s.difficulty for s, _ in found} == {"L2", "L3"}
    labels = {reveal_truth(s).label for s, _ in found}
    assert len(labels) >= 6
    assert not labels & {"wrong_tax_rate", "tax_exempt_charged"}


def test_its_invoices_look_like_the_faults_and_are_billed_right() -> None:
    """One or two invoices after the move taxed in the previous jurisdiction at its (higher)
    table rate, an invoice before the move, and recompute reproduces each; only the timeline
    shows the site."""
    checked = 0
    for scenario, sub in _sited()[:15]:
        tools = Tools(scenario)
        customer = tools.customer()
        previous, since = customer["previous_tax_jurisdiction"], customer["tax_jurisdiction_since"]
        site = tools.timeline(sub)["place_of_supply"]
        assert site["jurisdiction"] == previous and site["reason"]
        assert site["until"] is None or site["until"] > since
        own = customer["tax_jurisdiction"]
        invoices = [i for i in tools.invoices() if i["subscription_id"] == sub]
        odd, before = [], 0
        for summary in invoices:
            day = _issued(tools, summary, customer["timezone"])
            inputs = tools.invoice(summary["invoice_id"])["billing_inputs"]
            if day < since:
                before += 1
            elif inputs["tax_jurisdiction"] != own:
                odd.append(summary["invoice_id"])
                assert inputs["tax_jurisdiction"] == previous
                assert site["until"] is None or day < site["until"]
                there = tools("get_tax_rate", jurisdiction=previous, date=day)["rate"]
                here = tools("get_tax_rate", jurisdiction=own, date=day)["rate"]
                assert inputs["tax_rate"] == there and parse_rate(there) > parse_rate(here)
                recomputed = tools("recompute_invoice", invoice_id=summary["invoice_id"])
                assert recomputed["difference"] == "0.00"
        assert before >= 1 and 1 <= len(odd) <= 2, scenario.scenario_id
        truth = reveal_truth(scenario)
        assert not set(odd) & set(truth.overcharges) or truth.label != "wrong_tax_rate"
        checked += 1
    assert checked >= 5


def test_the_faults_victims_have_no_site() -> None:
    for scenario in all_levels("wrong_tax_rate"):
        tools = Tools(scenario)
        for sub in tools.customer()["subscription_ids"]:
            assert tools.timeline(sub)["place_of_supply"] is None


def test_other_subscriptions_and_scenarios_print_null() -> None:
    scenario, sub = _sited()[0]
    tools = Tools(scenario)
    others = [s for s in tools.customer()["subscription_ids"] if s != sub]
    assert all(tools.timeline(s)["place_of_supply"] is None for s in others)


def test_a_site_invoice_without_its_record_is_flagged() -> None:
    """The invariants know the rule: without the site, its invoices (where no other class's
    fault sits on them) are taxed under the wrong jurisdiction."""
    flagged = 0
    for scenario, sub in _sited()[:10]:
        db = open_database(scenario.database)
        db.row_factory = sqlite3.Row
        faulted = set(reveal_truth(scenario).overcharges)
        assert world_problems(db, faulted) == []
        db.execute("DELETE FROM supply_sites WHERE subscription_id = ?", (sub,))
        flagged += any("taxed under" in p for p in world_problems(db, faulted))
        db.close()
    assert flagged >= 5
