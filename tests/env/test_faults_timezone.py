"""timezone_period_boundary, the held-out class, checked through the agent's own tools.

All 50 `heldout` seeds are generated; each reference is replayed through `LedgerEnv`, and a
second episode reads the evidence back: the event near local midnight has a local date that
differs from its UTC date, and the bill used the UTC one.
Run: pytest tests/env/test_faults_timezone.py
"""

from __future__ import annotations

import random
import re
from datetime import date, timedelta
from functools import cache, partial

import pytest

from env.engine.calendar import utc_date, utc_to_local_date
from env.engine.money import parse_amount
from env.generation.builder import WorldBuilder
from env.generation.faults.timezone import is_west, timezone_period_boundary
from env.generation.freeze import freeze
from env.generation.generator import generate
from env.generation.splits import split_assignment, split_seeds
from env.labels import HELDOUT_LABEL
from env.ledger_env import open_database
from env.scenario import Scenario, reveal_truth
from tests.env.fault_support import LEVELS, Tools, check_reference, unwarranted_overcharge

LABEL = "timezone_period_boundary"


@cache
def heldout() -> tuple[Scenario, ...]:
    return tuple(generate("heldout", seed) for seed in split_seeds("heldout"))


def at_level(difficulty: str) -> list[Scenario]:
    return [s for s in heldout() if s.difficulty == difficulty]


def test_all_fifty_heldout_seeds_generate_the_held_out_class_with_positive_overcharges() -> None:
    scenarios = heldout()
    assert len(scenarios) == 50
    for scenario in scenarios:
        truth = reveal_truth(scenario)
        assert truth.label == LABEL == HELDOUT_LABEL
        assert truth.overcharges and all(c > 0 for c in truth.overcharges.values())
    assert {s.difficulty for s in scenarios} == set(LEVELS)


def test_the_eval_split_timezone_seeds_generate_too() -> None:
    seeds = [s for s in split_seeds("eval") if split_assignment("eval", s).label == LABEL]
    assert seeds
    for seed in seeds:
        assert reveal_truth(generate("eval", seed)).label == LABEL


def test_the_held_out_class_never_appears_in_train() -> None:
    labels = {split_assignment("train", seed).label for seed in split_seeds("train", 3000)}
    assert LABEL not in labels


@pytest.mark.parametrize("difficulty", LEVELS)
def test_the_reference_credits_exactly_the_truth_and_submits_it(difficulty: str) -> None:
    for scenario in at_level(difficulty):
        check_reference(scenario, LABEL)


def test_l1_complaints_name_the_affected_invoice_and_l2_complaints_do_not() -> None:
    """An L1 complaint names the affected invoice, or, where that invoice should never have
    been issued (its twin has none), the last one the customer owed before it."""
    for scenario in heldout():
        affected = next(iter(reveal_truth(scenario).overcharges))
        if scenario.difficulty == "L1":
            named = set(re.findall(r"INV-[0-9A-Z]+", scenario.complaint))
            db = open_database(scenario.database)
            rows = db.execute(
                "SELECT id, subscription_id, period_start FROM invoices ORDER BY period_start"
            ).fetchall()
            db.close()
            sub, start = next((r[1], r[2]) for r in rows if r[0] == affected)
            earlier = [r[0] for r in rows if r[1] == sub and r[2] < start]
            assert affected in named or (named and named <= set(earlier[-2:])), scenario.scenario_id
        elif scenario.difficulty == "L2":
            assert "INV-" not in scenario.complaint.split("\n\n")[1]


def shifted_event(tools: Tools, invoice_id: str, cents: int) -> str:
    """Reads the evidence of one overcharged invoice and returns which variant it shows."""
    zone = tools("get_customer", customer_id=tools.customer_id)["timezone"]
    invoice = tools("get_invoice", invoice_id=invoice_id)
    inputs = invoice["billing_inputs"]
    events = tools("get_subscription_timeline", subscription_id=invoice["subscription_id"])[
        "events"
    ]
    # the main story's background may add a correct plan change or trial to the same invoice:
    # the shifted event is the one whose UTC date the bill used and whose local date differs
    candidates = [
        ("plan_changed", inputs["plan_change_date"], "plan_change_date"),
        ("trial_ended", inputs["proration_start"], "proration_start"),
        ("cancel_requested", invoice["period_start"], ""),
    ]
    kind, billed, override, stamp = next(
        (kind, date.fromisoformat(day), override, s)
        for kind, day, override in candidates
        if day is not None
        for s in (e["occurred_at"] for e in events if e["type"] == kind)
        if utc_date(s) == date.fromisoformat(day) and utc_to_local_date(s, zone) != utc_date(s)
    )
    local = utc_to_local_date(stamp, zone)
    assert abs((local - billed).days) == 1
    if kind == "cancel_requested":
        # the request was on the last local day of the previous period: this one was left
        assert local == billed - timedelta(days=1)
        again = partial(tools, "recompute_invoice", invoice_id=invoice_id)
        assert unwarranted_overcharge(invoice, again) == cents
        assert is_west(zone)
        return "cancellation"
    difference = tools("recompute_invoice", invoice_id=invoice_id, **{override: local.isoformat()})
    assert parse_amount(difference["difference"]) == cents
    if kind == "trial_ended":
        assert local == billed + timedelta(days=1) and not is_west(zone)
        return "trial_end"
    assert (local < billed) == is_west(zone)  # west: the UTC date is the next day
    return "downgrade" if is_west(zone) else "upgrade"


def test_the_event_local_date_differs_from_its_utc_date_and_the_bill_used_the_utc_date() -> None:
    seen = set()
    for scenario in heldout():
        tools = Tools(scenario)
        for invoice_id, cents in reveal_truth(scenario).overcharges.items():
            seen.add(shifted_event(tools, invoice_id, cents))
    assert seen == {"downgrade", "upgrade", "cancellation", "trial_end"}


def test_look_alike_decoys_in_the_reference_recompute_to_a_zero_difference() -> None:
    checked = 0
    for scenario in heldout():
        truth = reveal_truth(scenario)
        tools = Tools(scenario)
        for step in truth.reference:
            if step.name == "recompute_invoice" and step.arguments["invoice_id"] not in (
                truth.overcharges
            ):
                assert tools("recompute_invoice", **step.arguments)["difference"] == "0.00"
                checked += 1
    assert checked > 0


def test_l3_scenarios_carry_a_timezone_near_miss() -> None:
    near_misses = {"midnight_seat_change_same_period", "midnight_coupon_same_period"}
    for scenario in at_level("L3"):
        assert near_misses & set(reveal_truth(scenario).traps)


def test_the_builder_is_a_pure_function_of_its_seed() -> None:
    def build(seed: int) -> bytes:
        b = WorldBuilder(random.Random(seed), name_pool="eval", difficulty="L3")
        timezone_period_boundary(b)
        assert b.draft is not None
        return freeze(b.draft)

    assert build(7) == build(7)
