"""Trials extended after signup (issue 19, round 2): the zero invoice issued at signup covers
the days granted then, shorter than the trial the timeline logs. It happens in every class,
billed correctly; trial_period_charged's ignored extension leaves the same zero invoice, and
the first paid invoice against the last `trial_ended` tells them apart.
"""

from __future__ import annotations

from datetime import date
from typing import Any

import pytest

from env.engine.calendar import utc_to_local_date
from env.generation.generator import generate
from env.generation.splits import spec
from env.ledger_env import LedgerEnv
from env.scenario import Scenario, reveal_truth
from tests.env.conftest import ok

SEEDS = range(spec("train").first_seed, spec("train").first_seed + 500)


def _trials(scenario: Scenario) -> list[dict[str, Any]]:
    """Per subscription with a trial: the timeline's trial, its zero invoice and first charge,
    read through the tools."""
    env = LedgerEnv(scenario, tool_budget=10_000)
    customer = ok(env, "get_customer", customer_id=scenario.customer_id)
    listed = ok(env, "list_invoices", customer_id=scenario.customer_id)["invoices"]
    out = []
    for sub in sorted({i["subscription_id"] for i in listed}):
        events = ok(env, "get_subscription_timeline", subscription_id=sub)["events"]
        started = [e for e in events if e["type"] == "trial_started"]
        ended = [e for e in events if e["type"] == "trial_ended"]
        mine = sorted(
            (i for i in listed if i["subscription_id"] == sub),
            key=lambda i: (i["period_start"], i["issued_at"]),
        )
        last = mine[-1]["period_end"]
        zero = [i for i in mine if i["total"] == "0.00" and i["period_end"] < last]
        if not started or len(ended) != 1 or not zero:
            continue
        paid = [i for i in mine if i is not zero[0]]
        first = ok(env, "get_invoice", invoice_id=paid[0]["invoice_id"])
        out.append(
            {
                "env": env,
                "details": started[0]["details"],
                "start": date.fromisoformat(zero[0]["period_start"]),
                "zero_end": date.fromisoformat(zero[0]["period_end"]),
                "ended": utc_to_local_date(ended[0]["occurred_at"], customer["timezone"]),
                "first": first,
            }
        )
    return out


def _victims(env: LedgerEnv, truth: Any) -> list[dict[str, Any]]:
    return [ok(env, "get_invoice", invoice_id=i) for i in sorted(truth.overcharges)]


@pytest.fixture(scope="module")
def found() -> list[tuple[Scenario, str, dict[str, Any]]]:
    out = []
    for seed in SEEDS:
        scenario = generate("train", seed)
        for trial in _trials(scenario):
            if (trial["zero_end"] - trial["start"]).days < trial["details"]["trial_days"]:
                out.append((scenario, reveal_truth(scenario).label, trial))
    return out


def test_a_zero_invoice_shorter_than_the_logged_trial_occurs_in_many_classes(
    found: list[tuple[Scenario, str, dict[str, Any]]],
) -> None:
    late = {label for scenario, label, _ in found if scenario.difficulty != "L1"}
    assert len(late - {"trial_period_charged"}) >= 5, sorted(late)
    assert "no_error" in late and "trial_period_charged" in late


def test_outside_the_fault_the_first_charge_starts_at_the_trial_end(
    found: list[tuple[Scenario, str, dict[str, Any]]],
) -> None:
    """The look-alike: billed from the last trial_ended (the separating record), correctly."""
    seen = 0
    for scenario, label, trial in found:
        if label in ("trial_period_charged", "timezone_period_boundary"):
            continue
        first = trial["first"]
        if first["invoice_id"] in reveal_truth(scenario).overcharges:
            continue  # another fault's victim
        inputs = first["billing_inputs"]
        charged = inputs["proration_start"] or inputs["period_start"]  # maybe a period start
        assert charged == trial["ended"].isoformat()
        again = ok(trial["env"], "recompute_invoice", invoice_id=first["invoice_id"])
        assert again["difference"] == "0.00"
        seen += 1
    assert seen >= 20


def test_the_fault_charges_from_before_the_trial_end(
    found: list[tuple[Scenario, str, dict[str, Any]]],
) -> None:
    """The fault: the same zero invoice, but the overcharged first charge starts before the
    last trial_ended; its earlier end is not always the plan's standard days."""
    offsets = set()
    seen = 0
    for scenario, label, trial in found:
        if label != "trial_period_charged":
            continue
        first, truth = trial["first"], reveal_truth(scenario)
        sub = first["subscription_id"]
        if not any(i["subscription_id"] == sub for i in _victims(trial["env"], truth)):
            continue  # the look-alike on another subscription of the scenario
        assert first["invoice_id"] in truth.overcharges
        charged = first["billing_inputs"]["proration_start"]
        assert charged is None or charged < trial["ended"].isoformat()
        if charged is not None:
            offsets.add((date.fromisoformat(charged) - trial["start"]).days)
        seen += 1
    assert seen >= 5
    assert offsets - {7, 14}, offsets  # a trial granted longer at signup, like any other
