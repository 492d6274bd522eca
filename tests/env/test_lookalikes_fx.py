"""The rate lock look-alike (`env.generation.lookalikes_fx`, issue 29 item 4): at L2/L3 in several
classes a documented contract rate (`get_customer`'s `fx_rate_lock`) bills invoices at the rate of
a day several days before their issue day, as `currency_conversion_error`'s wrong date does; those
invoices are billed correctly (recompute difference 0.00, no overcharge in the truth) and only the
lock record separates them from the fault's victims.
"""

from __future__ import annotations

from collections import Counter
from datetime import date
from functools import cache

from env.engine.calendar import fx_day, fx_rate_day, utc_to_local_date
from env.generation.generator import generate
from env.generation.splits import spec
from env.ledger_env import LedgerEnv
from env.scenario import Scenario, reveal_truth
from tests.env.conftest import ok

SEEDS = range(spec("train").first_seed, spec("train").first_seed + 300)


@cache
def _scenario(seed: int) -> Scenario:
    return generate("train", seed)


def _locked(seed: int) -> tuple[dict[str, object], list[dict[str, object]]]:
    """The customer record's lock and the invoices (with details) converted under it."""
    scenario = _scenario(seed)
    episode = LedgerEnv(scenario, episode_id="ep-fx-lock")
    customer = ok(episode, "get_customer", customer_id=scenario.customer_id)
    lock = customer["fx_rate_lock"]
    if lock is None:
        return {}, []
    listed = ok(episode, "list_invoices", customer_id=scenario.customer_id)["invoices"]
    covered = []
    for summary in listed:
        issued = utc_to_local_date(summary["issued_at"], customer["timezone"]).isoformat()
        if summary["subscription_id"] == lock["subscription_id"] and (
            lock["issued_from"] <= issued < lock["issued_until"]
        ):
            covered.append(ok(episode, "get_invoice", invoice_id=summary["invoice_id"]) | {
                "issue_day": issued
            })  # fmt: skip
    return lock, covered


def test_the_engine_rule_takes_the_locked_date_only_inside_the_window_and_subscription() -> None:
    lock = ("SUB-A", "2025-03-03", "2025-03-10", "2025-03-20")
    assert fx_rate_day(date(2025, 3, 14), "SUB-A", lock) == date(2025, 3, 3)
    assert fx_rate_day(date(2025, 3, 14), "SUB-B", lock) == date(2025, 3, 14)
    assert fx_rate_day(date(2025, 3, 20), "SUB-A", lock) == date(2025, 3, 20)  # end exclusive
    assert fx_rate_day(date(2025, 3, 9), "SUB-A", lock) == date(2025, 3, 7)  # a Sunday: Friday
    assert fx_rate_day(date(2025, 3, 9), "SUB-A", None) == fx_day(date(2025, 3, 9))


def test_locks_occur_at_l2_l3_in_several_classes_and_never_at_l1() -> None:
    classes: Counter[str] = Counter()
    for seed in SEEDS:
        lock, _ = _locked(seed)
        if lock:
            assert _scenario(seed).difficulty != "L1"
            classes[reveal_truth(_scenario(seed)).label] += 1
    assert len(classes) >= 5, classes


def test_locked_invoices_convert_at_the_stale_rate_and_are_otherwise_billed_correctly() -> None:
    seen = 0
    for seed in SEEDS:
        lock, covered = _locked(seed)
        if not lock:
            continue
        assert covered, f"seed {seed}: the lock covers no invoice"
        truth = reveal_truth(_scenario(seed))
        episode = LedgerEnv(_scenario(seed), episode_id="ep-fx-lock-2")
        for invoice in covered:
            inputs = invoice["billing_inputs"]
            assert inputs["fx_rate_date"] == lock["rate_date"]
            gap = date.fromisoformat(lock["rate_date"]) - date.fromisoformat(invoice["issue_day"])
            assert gap.days <= -2  # the fault's shape: two days or more before the issue day
            if invoice["invoice_id"] in truth.overcharges:  # another fault's victim (its tax)
                assert truth.label != "currency_conversion_error"
                continue
            done = ok(episode, "recompute_invoice", invoice_id=invoice["invoice_id"])
            assert done["difference"] == "0.00"
            seen += 1
    assert seen >= 10


def test_a_fault_victim_is_never_under_the_lock() -> None:
    for seed in SEEDS:
        if reveal_truth(_scenario(seed)).label != "currency_conversion_error":
            continue
        _, covered = _locked(seed)
        victims = reveal_truth(_scenario(seed)).overcharges
        assert not {str(i["invoice_id"]) for i in covered} & victims.keys()
