"""proration_error and downgrade_not_applied, generated end to end and checked through the tools.

Each scenario comes from `env.generation.generator.generate` on train seeds of the label; the
reference is replayed through `LedgerEnv` and must credit exactly the truth, and the fault's
evidence (the plan_changed event against the invoice) must be visible through the agent's own tools.
"""

from __future__ import annotations

from datetime import date

import pytest

from env.engine.billing import previous_period_start
from env.engine.money import format_cents
from env.generation.builder import WorldBuilder
from env.generation.faults.plan_changes import (
    DOWNGRADE_VARIANTS,
    PRORATION_VARIANTS,
    downgrade_not_applied,
    proration_error,
)
from env.generation.generator import scenario_rng
from env.scenario import reveal_truth
from tests.env.conftest import ok
from tests.env.fault_support import LEVELS, check_reference, investigate, local, scenarios

PER_LEVEL = 6


@pytest.mark.parametrize("difficulty", LEVELS)
def test_proration_error_reference_credits_exactly_the_truth(difficulty: str) -> None:
    for scenario in scenarios("proration_error", difficulty, PER_LEVEL):
        check_reference(scenario, "proration_error")


@pytest.mark.parametrize("difficulty", LEVELS)
def test_downgrade_not_applied_reference_credits_exactly_the_truth(difficulty: str) -> None:
    for scenario in scenarios("downgrade_not_applied", difficulty, PER_LEVEL):
        check_reference(scenario, "downgrade_not_applied")


@pytest.mark.parametrize("difficulty", LEVELS)
def test_proration_invoice_records_another_date_than_the_immediate_plan_change(
    difficulty: str,
) -> None:
    for scenario in scenarios("proration_error", difficulty, PER_LEVEL):
        env, timezone, timeline = investigate(scenario)
        changes = [
            local(e["occurred_at"], timezone).date()
            for e in timeline["events"]
            if e["type"] == "plan_changed" and e["details"]["effective"] == "immediately"
        ]
        (victim, cents) = next(iter(reveal_truth(scenario).overcharges.items()))
        invoice = ok(env, "get_invoice", invoice_id=victim)
        start = date.fromisoformat(invoice["period_start"])
        date.fromisoformat(invoice["period_end"])
        # prorated on the next invoice: the change lies in the period before this one
        change = next(day for day in changes if previous_period_start(start) < day < start)
        recorded = date.fromisoformat(invoice["billing_inputs"]["plan_change_date"])
        assert abs((recorded - change).days) >= 3  # never a one-day timezone slip
        fixed = ok(env, "recompute_invoice", invoice_id=victim, plan_change_date=str(change))
        assert fixed["difference"] == format_cents(cents)


@pytest.mark.parametrize("difficulty", ("L2", "L3"))
def test_proration_decoy_change_in_another_period_is_prorated_correctly(difficulty: str) -> None:
    decoys = 0  # the correct second change comes in a fifth of the worlds (DECOY_RATE)
    count = 3 * PER_LEVEL
    for scenario in scenarios("proration_error", difficulty, count):
        env, timezone, timeline = investigate(scenario)
        truth = reveal_truth(scenario)
        listed = ok(env, "list_invoices", customer_id=scenario.customer_id)["invoices"]
        mine = [i for i in listed if i["subscription_id"] == timeline["subscription_id"]]
        checked = 0
        for event in timeline["events"]:
            if event["type"] != "plan_changed" or event["details"]["effective"] != "immediately":
                continue
            day = local(event["occurred_at"], timezone).date().isoformat()
            later = [i for i in mine if i["period_start"] > day]  # the next invoice prorates it
            if not later:
                continue  # a change in the current period: no invoice carries it yet
            invoice = min(later, key=lambda i: i["period_start"])
            if invoice["invoice_id"] in truth.overcharges:
                continue
            result = ok(
                env, "recompute_invoice", invoice_id=invoice["invoice_id"], plan_change_date=day
            )
            assert result["difference"] == "0.00"
            checked += 1
        assert checked == ("correct_proration_decoy" in truth.traps)
        decoys += checked
    assert 0 < decoys < count


@pytest.mark.parametrize("difficulty", LEVELS)
def test_downgrade_scheduled_at_period_end_precedes_every_invoice_still_on_the_old_plan(
    difficulty: str,
) -> None:
    for scenario in scenarios("downgrade_not_applied", difficulty, PER_LEVEL):
        env, timezone, timeline = investigate(scenario)
        scheduled = [
            e
            for e in timeline["events"]
            if e["type"] == "plan_changed" and e["details"]["effective"] == "at_period_end"
        ]
        assert len(scheduled) == 1
        details = scheduled[0]["details"]
        requested = local(scheduled[0]["occurred_at"], timezone).date().isoformat()
        for victim, cents in reveal_truth(scenario).overcharges.items():
            invoice = ok(env, "get_invoice", invoice_id=victim)
            assert requested < invoice["period_start"]
            assert invoice["billing_inputs"]["plan"]["plan_id"] == details["from_plan_id"]
            fixed = ok(env, "recompute_invoice", invoice_id=victim, plan_id=details["to_plan_id"])
            assert fixed["difference"] == format_cents(cents)


def test_every_plan_change_variant_is_generated() -> None:
    seen: dict[str, set[str]] = {"proration_error": set(), "downgrade_not_applied": set()}
    for i in range(60):
        for build in (proration_error, downgrade_not_applied):
            b = WorldBuilder(scenario_rng("test", i), name_pool="train", difficulty=LEVELS[i % 3])
            outcome = build(b)
            seen[outcome.label].add(outcome.variant)
    assert seen == {
        "proration_error": set(PRORATION_VARIANTS),
        "downgrade_not_applied": set(DOWNGRADE_VARIANTS),
    }
