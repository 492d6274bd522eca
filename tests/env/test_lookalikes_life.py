"""Lifecycle look-alikes (issue 19): the cancellation, trial and UTC-date checks fire in other
classes on correctly billed invoices, and a second record, visible through the tools, tells
the look-alike from the fault.

Measured over generated L2/L3 train worlds with the probe's own one-comparison checks.
"""

from __future__ import annotations

import sqlite3
from collections import defaultdict
from collections.abc import Callable
from typing import Any

import pytest

from checks.probe_comparisons import (
    cancel_date_not_prorated,
    charged_inside_trial,
    each_invoice,
    input_date_is_utc_date,
    invoice_after_cancellation,
    trial_end_vs_proration_start,
)
from checks.probe_ledger import Ledger, ledger_of
from env.generation.generator import generate
from env.generation.splits import spec
from env.ledger_env import LedgerEnv, open_database
from env.scenario import Scenario, reveal_truth
from tests.env.conftest import ok

SEEDS = range(spec("train").first_seed, spec("train").first_seed + 400)
CHECKS: dict[str, tuple[Callable[..., bool], str]] = {
    "invoice_after_cancellation": (invoice_after_cancellation, "billed_after_cancellation"),
    "cancel_date_not_prorated": (cancel_date_not_prorated, "billed_after_cancellation"),
    "charged_inside_trial": (charged_inside_trial, "trial_period_charged"),
    "trial_end_vs_proration_start": (trial_end_vs_proration_start, "trial_period_charged"),
}


@pytest.fixture(scope="module")
def worlds() -> list[tuple[Scenario, str, Ledger]]:
    out = []
    for seed in SEEDS:
        scenario = generate("train", seed)
        if scenario.difficulty == "L1":
            continue
        db = open_database(scenario.database)
        db.row_factory = sqlite3.Row
        try:
            out.append((scenario, reveal_truth(scenario).label, ledger_of(db)))
        finally:
            db.close()
    return out


def _firings(
    worlds: list[tuple[Scenario, str, Ledger]], test: Callable[..., bool]
) -> dict[str, list[tuple[Scenario, str]]]:
    """label -> (scenario, invoice id) where the check fires."""
    found: dict[str, list[tuple[Scenario, str]]] = defaultdict(list)
    for scenario, label, led in worlds:
        for invoice_id in sorted(each_invoice(test)(led)):
            found[label].append((scenario, invoice_id))
    return found


@pytest.mark.parametrize("name", sorted(CHECKS))
def test_the_check_fires_in_several_classes_on_correct_invoices(
    worlds: list[tuple[Scenario, str, Ledger]], name: str
) -> None:
    test, fault = CHECKS[name]
    found = _firings(worlds, test)
    others = {  # on an invoice billed correctly (another fault may overcharge one)
        label
        for label, hits in found.items()
        if label != fault
        and any(inv not in reveal_truth(scenario).overcharges for scenario, inv in hits)
    }
    assert len(others) >= 3, f"{name} fires only in {sorted(found)}"
    assert "no_error" in others


def test_the_utc_date_check_fires_outside_the_heldout_class(
    worlds: list[tuple[Scenario, str, Ledger]],
) -> None:
    found = _firings(worlds, input_date_is_utc_date)
    assert len(set(found) - {"timezone_period_boundary"}) >= 3
    for scenario, invoice_id in found.get("no_error", []):
        assert invoice_id not in reveal_truth(scenario).overcharges


def _episode(scenario: Scenario) -> LedgerEnv:
    return LedgerEnv(scenario, tool_budget=10_000)


def _timeline(env: LedgerEnv, invoice_id: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    invoice = ok(env, "get_invoice", invoice_id=invoice_id)
    sub = invoice["subscription_id"]
    events = ok(env, "get_subscription_timeline", subscription_id=sub)["events"]
    return invoice, events


def test_a_reversed_cancellation_shows_its_renewal(
    worlds: list[tuple[Scenario, str, Ledger]],
) -> None:
    """Outside the fault, an invoice after a canceled event's end follows a `renewed` event
    logged after that `canceled` one; the recompute of that invoice differs by 0.00."""
    seen = 0
    found = _firings(worlds, invoice_after_cancellation)
    for label, hits in found.items():
        if label in ("billed_after_cancellation", "timezone_period_boundary"):
            continue
        for scenario, invoice_id in hits[:2]:
            env = _episode(scenario)
            _, events = _timeline(env, invoice_id)
            kinds = [e["type"] for e in events]
            first_cancel = kinds.index("canceled")  # the one the invoice starts after
            assert "renewed" in kinds[first_cancel:], kinds
            again = ok(env, "recompute_invoice", invoice_id=invoice_id)
            assert again["difference"] == "0.00"
            seen += 1
    assert seen >= 3


def test_a_charge_before_a_later_trial_end_was_credited(
    worlds: list[tuple[Scenario, str, Ledger]],
) -> None:
    """Outside the fault, a charge the last trial_ended event puts inside the trial sits on an
    invoice an earlier credit note already reduced (the trial was extended after it)."""
    seen = 0
    for check in (charged_inside_trial, trial_end_vs_proration_start):
        for label, hits in _firings(worlds, check).items():
            if label in ("trial_period_charged", "timezone_period_boundary"):
                continue
            for scenario, invoice_id in hits[:2]:
                env = _episode(scenario)
                invoice, events = _timeline(env, invoice_id)
                assert [e["type"] for e in events].count("trial_ended") >= 2
                assert invoice["amount_credited"] != "0.00"
                seen += 1
    assert seen >= 3


def test_the_trial_fault_has_no_credit_on_its_victim() -> None:
    for seed in SEEDS:
        scenario = generate("train", seed)
        truth = reveal_truth(scenario)
        if truth.label != "trial_period_charged" or scenario.difficulty == "L1":
            continue
        env = _episode(scenario)
        for invoice_id in truth.overcharges:
            assert ok(env, "get_invoice", invoice_id=invoice_id)["amount_credited"] == "0.00"
