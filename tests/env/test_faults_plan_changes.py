"""proration_error and downgrade_not_applied, generated end to end and checked through the tools.

Each scenario comes from `env.generator.generate` on train seeds of the label; the reference is
replayed through `LedgerEnv` and must credit exactly the truth, and the fault's evidence (the
plan_changed event against the invoice) must be visible through the agent's own tools.
"""

from __future__ import annotations

import json
import sqlite3
from datetime import UTC, date, datetime
from functools import cache
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from env.builder import WorldBuilder
from env.faults.plan_changes import (
    DOWNGRADE_VARIANTS,
    PRORATION_VARIANTS,
    downgrade_not_applied,
    proration_error,
)
from env.generator import generate, scenario_rng
from env.ledger_env import LedgerEnv
from env.money import format_cents
from env.scenario import Scenario, reveal_truth
from env.splits import split_assignment

LEVELS = ("L1", "L2", "L3")
PER_LEVEL = 6


@cache
def seeds_for(label: str, difficulty: str, count: int = PER_LEVEL) -> tuple[int, ...]:
    found: list[int] = []
    seed = 1_000_000
    while len(found) < count:
        assignment = split_assignment("train", seed)
        if (assignment.label, assignment.difficulty) == (label, difficulty):
            found.append(seed)
        seed += 1
    return tuple(found)


def scenarios(label: str, difficulty: str) -> list[Scenario]:
    return [generate("train", seed) for seed in seeds_for(label, difficulty)]


def ask(env: LedgerEnv, name: str, **arguments: Any) -> dict[str, Any]:
    result: dict[str, Any] = json.loads(env.call(name, json.dumps(arguments)))
    assert "error" not in result, result
    return result


def local(stamp: str, timezone: str) -> datetime:
    moment = datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    return moment.astimezone(ZoneInfo(timezone))


def check_reference(scenario: Scenario, label: str) -> None:
    """The reference replays without errors and credits exactly the truth, literally shown."""
    truth = reveal_truth(scenario)
    assert truth.label == label
    assert truth.overcharges and all(cents > 0 for cents in truth.overcharges.values())
    env = LedgerEnv(scenario)
    for step in truth.reference:
        out = env.call(step.name, json.dumps(step.arguments))
        assert '"error"' not in out[:12], (step, out)
    db = sqlite3.connect(":memory:")
    db.deserialize(env.final_database())
    credits = dict(db.execute("SELECT invoice_id, amount_cents FROM credit_notes").fetchall())
    assert credits == truth.overcharges
    findings = env.findings
    assert findings is not None and findings.root_cause == label
    assert {i.invoice_id: i.overcharge_cents for i in findings.affected_invoices} == credits
    shown = " ".join(env.tool_outputs)
    for cents in truth.overcharges.values():
        assert f'"{format_cents(cents)}"' in shown


def investigate(scenario: Scenario) -> tuple[LedgerEnv, str, dict[str, Any]]:
    """A fresh episode, the customer's timezone and the affected subscription's timeline."""
    env = LedgerEnv(scenario)
    timezone = ask(env, "get_customer", customer_id=scenario.customer_id)["timezone"]
    first = next(iter(reveal_truth(scenario).overcharges))
    sub = ask(env, "get_invoice", invoice_id=first)["subscription_id"]
    return env, timezone, ask(env, "get_subscription_timeline", subscription_id=sub)


def assert_events_far_from_midnight(timeline: dict[str, Any], timezone: str) -> None:
    for event in timeline["events"]:
        at = local(event["occurred_at"], timezone)
        minutes = at.hour * 60 + at.minute
        assert 120 <= minutes <= 22 * 60, event


@pytest.mark.parametrize("difficulty", LEVELS)
def test_proration_error_reference_credits_exactly_the_truth(difficulty: str) -> None:
    for scenario in scenarios("proration_error", difficulty):
        check_reference(scenario, "proration_error")


@pytest.mark.parametrize("difficulty", LEVELS)
def test_downgrade_not_applied_reference_credits_exactly_the_truth(difficulty: str) -> None:
    for scenario in scenarios("downgrade_not_applied", difficulty):
        check_reference(scenario, "downgrade_not_applied")


@pytest.mark.parametrize("difficulty", LEVELS)
def test_proration_invoice_records_another_date_than_the_immediate_plan_change(
    difficulty: str,
) -> None:
    for scenario in scenarios("proration_error", difficulty):
        env, timezone, timeline = investigate(scenario)
        assert_events_far_from_midnight(timeline, timezone)
        changes = [
            local(e["occurred_at"], timezone).date()
            for e in timeline["events"]
            if e["type"] == "plan_changed" and e["details"]["effective"] == "immediately"
        ]
        (victim, cents) = next(iter(reveal_truth(scenario).overcharges.items()))
        invoice = ask(env, "get_invoice", invoice_id=victim)
        start = date.fromisoformat(invoice["period_start"])
        end = date.fromisoformat(invoice["period_end"])
        change = next(day for day in changes if start < day < end)
        recorded = date.fromisoformat(invoice["billing_inputs"]["plan_change_date"])
        assert abs((recorded - change).days) >= 3  # never a one-day timezone slip
        fixed = ask(env, "recompute_invoice", invoice_id=victim, plan_change_date=str(change))
        assert fixed["difference"] == format_cents(cents)


@pytest.mark.parametrize("difficulty", ("L2", "L3"))
def test_proration_decoy_change_in_another_period_is_prorated_correctly(difficulty: str) -> None:
    for scenario in scenarios("proration_error", difficulty):
        env, timezone, timeline = investigate(scenario)
        truth = reveal_truth(scenario)
        listed = ask(env, "list_invoices", customer_id=scenario.customer_id)["invoices"]
        mine = [i for i in listed if i["subscription_id"] == timeline["subscription_id"]]
        checked = 0
        for event in timeline["events"]:
            if event["type"] != "plan_changed":
                continue
            day = local(event["occurred_at"], timezone).date().isoformat()
            invoice = next(i for i in mine if i["period_start"] < day < i["period_end"])
            if invoice["invoice_id"] in truth.overcharges:
                continue
            result = ask(
                env, "recompute_invoice", invoice_id=invoice["invoice_id"], plan_change_date=day
            )
            assert result["difference"] == "0.00"
            checked += 1
        assert checked == 1


@pytest.mark.parametrize("difficulty", LEVELS)
def test_downgrade_scheduled_at_period_end_precedes_every_invoice_still_on_the_old_plan(
    difficulty: str,
) -> None:
    for scenario in scenarios("downgrade_not_applied", difficulty):
        env, timezone, timeline = investigate(scenario)
        assert_events_far_from_midnight(timeline, timezone)
        scheduled = [
            e
            for e in timeline["events"]
            if e["type"] == "plan_changed" and e["details"]["effective"] == "at_period_end"
        ]
        assert len(scheduled) == 1
        details = scheduled[0]["details"]
        requested = local(scheduled[0]["occurred_at"], timezone).date().isoformat()
        assert timeline["plan"]["plan_id"] == details["to_plan_id"]
        for victim, cents in reveal_truth(scenario).overcharges.items():
            invoice = ask(env, "get_invoice", invoice_id=victim)
            assert requested < invoice["period_start"]
            assert invoice["billing_inputs"]["plan"]["plan_id"] == details["from_plan_id"]
            fixed = ask(env, "recompute_invoice", invoice_id=victim, plan_id=details["to_plan_id"])
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
