"""no_error scenarios: the customer is mistaken, and the tools show why the charge stands.

Generic checks run on `env.generation.generator.generate` train seeds of every difficulty. Each
look-alike variant is also built directly (the generator's own decoy, reference and freeze steps) so
that its specific evidence can be read back through a second episode, as an agent would.
Run: pytest tests/env/test_faults_no_error.py
"""

from __future__ import annotations

import random
from datetime import date

import pytest

from env.engine.calendar import utc_date, utc_to_local_date
from env.engine.money import parse_amount
from env.generation.builder import WorldBuilder
from env.generation.decoys import add_decoys
from env.generation.faults.base import FaultOutcome
from env.generation.faults.no_error import VARIANTS
from env.generation.freeze import freeze
from env.generation.generator import generate, reference_solution
from env.ledger_env import LedgerEnv
from env.scenario import Scenario, Truth, reveal_truth
from tests.env.conftest import query
from tests.env.fault_support import LEVELS, Tools, replay, seeds_for

LABEL = "no_error"
PER_LEVEL = 8


def direct(variant: str, difficulty: str, seed: int) -> tuple[Scenario, FaultOutcome]:
    """One variant built the way `generate` builds a scenario, minus the complaint."""
    b = WorldBuilder(random.Random(seed), name_pool="train", difficulty=difficulty)
    b.make_customer()
    outcome = VARIANTS[variant](b)
    add_decoys(b, outcome)
    assert b.draft is not None
    overcharges = b.draft.overcharges()
    truth = Truth(LABEL, overcharges, dict(overcharges), reference_solution(b, outcome, {}), "")
    scenario = Scenario(
        scenario_id=f"direct-{variant}-{seed}",
        split="test",
        seed=seed,
        difficulty=difficulty,
        customer_id=b.customer.id,
        complaint="",
        opened_at="2027-01-01T09:00:00Z",
        database=freeze(b.draft),
        _truth=truth,
    )
    return scenario, outcome


def credit_note_count(episode: LedgerEnv) -> int:
    ((count,),) = query(
        episode.final_database(), "SELECT COUNT(*) FROM credit_notes WHERE episode_id IS NOT NULL"
    )
    return int(count)


@pytest.mark.parametrize("difficulty", LEVELS)
def test_generated_no_error_scenarios_have_no_overcharge_and_a_clean_reference(
    difficulty: str,
) -> None:
    for seed in seeds_for(LABEL, difficulty, PER_LEVEL):
        scenario = generate("train", seed)
        truth = reveal_truth(scenario)
        assert truth.label == LABEL and scenario.difficulty == difficulty
        assert truth.overcharges == {} and truth.expected_credits == {}
        assert not [c for c in truth.reference if c.name == "draft_credit_note"]
        episode = replay(scenario)
        assert credit_note_count(episode) == 0
        findings = episode.findings
        assert findings is not None
        assert findings.root_cause == LABEL and findings.affected_invoices == []


@pytest.mark.parametrize("difficulty", LEVELS)
def test_every_recompute_in_the_reference_shows_a_zero_difference(difficulty: str) -> None:
    for seed in seeds_for(LABEL, difficulty, PER_LEVEL):
        scenario = generate("train", seed)
        tools = Tools(scenario)
        for step in reveal_truth(scenario).reference:
            if step.name == "recompute_invoice":
                assert tools("recompute_invoice", **step.arguments)["difference"] == "0.00"


@pytest.mark.parametrize("difficulty", LEVELS)
@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_each_look_alike_builds_without_overcharge_and_replays_cleanly(
    variant: str, difficulty: str
) -> None:
    for seed in range(6):
        scenario, outcome = direct(variant, difficulty, seed)
        assert outcome.label == LABEL and outcome.variant == variant
        assert reveal_truth(scenario).overcharges == {}
        episode = replay(scenario)
        assert credit_note_count(episode) == 0
        assert episode.findings is not None and episode.findings.root_cause == LABEL


def test_the_price_rise_was_announced_before_the_invoice_and_is_billed() -> None:
    for seed in range(10):
        scenario, outcome = direct("price_change", "L1", seed)
        tools = Tools(scenario)
        invoice = tools.invoice(outcome.focus[0].id)
        history = tools.timeline_of(invoice)["plan"]["price_history"]
        rise = history[-1]
        assert rise["effective_from"] == invoice["period_start"]
        assert rise["announced_at"] < invoice["issued_at"]
        assert invoice["billing_inputs"]["plan"]["unit_price"] == rise["unit_price"]
        assert parse_amount(rise["unit_price"]) > parse_amount(history[-2]["unit_price"])
        previous = tools.invoice(outcome.focus[1].id)
        now, before = invoice["billing_inputs"], previous["billing_inputs"]
        alike = all(now[k] == before[k] for k in ("seats", "usage_units", "plan_change_date"))
        plain = now["proration_end"] is None and now["proration_start"] is None  # a whole period
        if alike and plain and now["currency"] == "USD":  # the price alone moved the charge
            assert parse_amount(invoice["subtotal"]) > parse_amount(previous["subtotal"])


def test_the_changed_tax_rate_is_the_rate_in_force_on_each_invoice() -> None:
    for seed in range(10):
        scenario, outcome = direct("tax_change", "L2", seed)
        tools = Tools(scenario)
        rates = []
        for focus in outcome.focus[:2]:
            invoice = tools.invoice(focus.id)
            tz = tools("get_customer", customer_id=scenario.customer_id)["timezone"]
            lookup = tools(  # the rate in force on the invoice's local issue day
                "get_tax_rate",
                jurisdiction=invoice["tax"]["jurisdiction"],
                date=utc_to_local_date(invoice["issued_at"], tz).isoformat(),
            )
            assert lookup["rate"] == invoice["tax"]["rate"]
            rates.append(invoice["tax"]["rate"])
        assert rates[0] != rates[1]


def test_the_coupon_ran_out_before_the_undiscounted_invoice() -> None:
    for seed in range(12):
        scenario, outcome = direct("coupon_expired", "L1", seed)
        tools = Tools(scenario)
        after, before = (tools.invoice(inv.id) for inv in outcome.focus[:2])
        coupon = tools.timeline_of(after)["coupon"]
        assert after["billing_inputs"]["coupon"] is None
        assert before["billing_inputs"]["coupon"]["coupon_code"] == coupon["code"]
        discounted = [
            i
            for i in tools("list_invoices", customer_id=scenario.customer_id)["invoices"]
            if i["subscription_id"] == after["subscription_id"]
            and tools.invoice(i["invoice_id"])["billing_inputs"]["coupon"] is not None
        ]
        if coupon["duration"] == "once":
            assert len(discounted) == 1
        elif coupon["duration"] == "repeating":
            assert len(discounted) == coupon["duration_periods"]
        else:
            assert coupon["valid_until"] < after["period_start"]


def test_the_upgrade_is_prorated_from_the_local_date_of_its_event() -> None:
    for seed in range(10):
        scenario, outcome = direct("correct_proration", "L1", seed)
        tools = Tools(scenario)
        zone = tools("get_customer", customer_id=scenario.customer_id)["timezone"]
        invoice = tools.invoice(outcome.focus[0].id)
        events = tools.timeline_of(invoice)["events"]
        (event,) = [  # a withdrawn scheduled change may sit beside it (lookalikes_plans)
            e
            for e in events
            if e["type"] == "plan_changed" and e["details"]["effective"] == "immediately"
        ]
        local = utc_to_local_date(event["occurred_at"], zone)
        assert local.isoformat() == invoice["billing_inputs"]["plan_change_date"]
        assert len(invoice["lines"]) >= 2
        check = tools("recompute_invoice", invoice_id=invoice["invoice_id"])
        assert check["difference"] == "0.00"


def test_the_unrecognised_invoice_belongs_to_a_second_subscription_someone_ordered() -> None:
    for seed in range(10):
        scenario, outcome = direct("other_subscription", "L1", seed)
        tools = Tools(scenario)
        customer = tools("get_customer", customer_id=scenario.customer_id)
        invoice = tools.invoice(outcome.focus[0].id)
        assert len(customer["subscription_ids"]) == 2
        assert invoice["subscription_id"] == customer["subscription_ids"][1]
        created = tools.timeline_of(invoice)["events"][0]
        assert created["type"] == "created" and "@" in created["details"]["ordered_by"]


def test_the_customer_added_the_seats_before_the_period_they_are_billed_in() -> None:
    for seed in range(10):
        scenario, outcome = direct("seat_increase", "L2", seed)
        tools = Tools(scenario)
        customer = tools("get_customer", customer_id=scenario.customer_id)
        invoice = tools.invoice(outcome.focus[0].id)
        (event,) = [
            e
            for e in tools.timeline_of(invoice)["events"]
            if e["type"] == "seats_changed" and e["details"].get("changed_by")
        ]
        assert event["details"]["changed_by"] == customer["email"]
        day = utc_to_local_date(event["occurred_at"], customer["timezone"])
        assert day < date.fromisoformat(invoice["period_start"])
        assert event["details"]["to_seats"] == invoice["billing_inputs"]["seats"]
        assert event["details"]["from_seats"] < invoice["billing_inputs"]["seats"]


def test_the_billed_usage_matches_the_usage_record_and_exceeds_the_included_units() -> None:
    for seed in range(10):
        scenario, outcome = direct("usage_overage", "L1", seed)
        tools = Tools(scenario)
        invoice = tools.invoice(outcome.focus[0].id)
        timeline = tools.timeline_of(invoice)
        # usage is billed in arrears: the record of the period that ended as this one began
        (record,) = [u for u in timeline["usage"] if u["period_end"] == invoice["period_start"]]
        units = invoice["billing_inputs"]["usage_units"]
        included = timeline["plan"]["included_units"]
        if invoice["billing_inputs"]["usage_start"] is not None:  # from a trial's end: prorated
            assert record["period_start"] == invoice["billing_inputs"]["usage_start"]
            (line,) = [x for x in invoice["lines"] if x["description"].startswith("Usage")]
            included = int(line["description"].split(" units, ")[1].split(" ")[0])
        assert record["units"] == units > included
        assert any(line["quantity"] == units - included for line in invoice["lines"])


def test_look_alike_events_fall_at_any_hour_and_bill_by_their_local_date() -> None:
    crossed = 0
    for seed in range(16):
        scenario, outcome = direct("correct_proration", "L1", seed)
        tools = Tools(scenario)
        zone = tools("get_customer", customer_id=scenario.customer_id)["timezone"]
        invoice = tools.invoice(outcome.focus[0].id)
        (event,) = [
            e
            for e in tools.timeline_of(invoice)["events"]
            if e["type"] == "plan_changed" and e["details"]["effective"] == "immediately"
        ]
        local = utc_to_local_date(event["occurred_at"], zone)
        crossed += local != utc_date(event["occurred_at"])
        assert invoice["billing_inputs"]["plan_change_date"] == local.isoformat()
    assert crossed > 0  # near-midnight events occur outside the timezone class, harmlessly
