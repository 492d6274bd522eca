"""The committed seat minimum (`env.generation.lookalikes_seats`, issue 29 item 4): at L2/L3 in
several classes a seat commitment (`get_customer`'s `seat_commitment`) bills a run of invoices
at more seats than the timeline's `seats_changed` events leave in force, by the step of a cut,
as `seat_count_mismatch`'s ignored or reverted cut does; those invoices are billed correctly
(recompute difference 0.00, no overcharge in the truth) and only the customer record separates
them from the fault's victims.
"""

from __future__ import annotations

from collections import Counter
from datetime import date
from functools import cache
from typing import Any

from env.generation.generator import generate
from env.generation.splits import spec
from env.ledger_env import LedgerEnv
from env.scenario import Scenario, reveal_truth
from tests.env.conftest import ok

SEEDS = range(spec("train").first_seed, spec("train").first_seed + 300)


@cache
def _scenario(seed: int) -> Scenario:
    return generate("train", seed)


def _in_force(events: list[dict[str, Any]], start: str, tz: str) -> int:
    """Seats the timeline leaves in force for a period starting on `start`: the created count,
    then each `seats_changed` logged before it (the one billing rule, next period start or the
    date it names)."""
    from env.engine.calendar import utc_to_local_date

    seats = next(e["details"]["seats"] for e in events if e["type"] == "created")
    for e in events:
        if e["type"] != "seats_changed":
            continue
        named = str(e["details"].get("effective"))
        local = utc_to_local_date(e["occurred_at"], tz).isoformat()
        if (named <= start) if named[:1].isdigit() else local < start:
            seats = e["details"]["to_seats"]
    return int(seats)


def _committed(seed: int) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The commitment and, for each invoice of its window, (details, seats in force)."""
    scenario = _scenario(seed)
    episode = LedgerEnv(scenario, episode_id="ep-seats")
    customer = ok(episode, "get_customer", customer_id=scenario.customer_id)
    commitment = customer["seat_commitment"]
    if commitment is None:
        return {}, []
    timeline = ok(
        episode, "get_subscription_timeline", subscription_id=commitment["subscription_id"]
    )
    listed = ok(episode, "list_invoices", customer_id=scenario.customer_id)["invoices"]
    covered = []
    for summary in listed:
        start = summary["period_start"]
        if summary["subscription_id"] != commitment["subscription_id"]:
            continue
        if not commitment["periods_from"] <= start < commitment["periods_until"]:
            continue
        invoice = ok(episode, "get_invoice", invoice_id=summary["invoice_id"])
        if invoice["billing_inputs"]["proration_start"] == summary["period_end"]:
            continue  # a trial's zero invoice
        force = _in_force(timeline["events"], start, customer["timezone"])
        covered.append(invoice | {"in_force": force})
    return commitment, covered


def test_binding_commitments_occur_at_l2_l3_in_several_classes_not_in_the_seat_class() -> None:
    classes: Counter[str] = Counter()
    for seed in SEEDS:
        commitment, covered = _committed(seed)
        if not commitment:
            continue
        assert _scenario(seed).difficulty != "L1"
        truth = reveal_truth(_scenario(seed))
        label = truth.label
        right = [i for i in covered if i["invoice_id"] not in truth.overcharges]
        if any(i["billing_inputs"]["seats"] > i["in_force"] for i in right):
            assert label != "seat_count_mismatch"  # there it binds no invoice (its victims do)
            classes[label] += 1
    assert len(classes) >= 5, classes


def test_committed_invoices_bill_the_fault_shape_and_recompute_to_zero() -> None:
    """More seats than in force, by a cut's step, the count the customer had before it; every
    invoice of the window bills at least the committed seats and is billed correctly."""
    binding = 0
    for seed in SEEDS:
        commitment, covered = _committed(seed)
        if not covered:
            continue
        truth = reveal_truth(_scenario(seed))
        episode = LedgerEnv(_scenario(seed), episode_id="ep-seats-2")
        for invoice in covered:
            billed = invoice["billing_inputs"]["seats"]
            if invoice["invoice_id"] in truth.overcharges:  # a fault's victim
                continue
            assert billed == max(invoice["in_force"], commitment["seats"])
            if billed > invoice["in_force"]:
                assert billed - invoice["in_force"] in (1, 2, 3, 5)  # the fault's cut steps
                binding += 1
            done = ok(episode, "recompute_invoice", invoice_id=invoice["invoice_id"])
            assert done["difference"] == "0.00"
    assert binding >= 10


def test_the_window_is_a_run_of_period_starts() -> None:
    for seed in SEEDS:
        commitment, covered = _committed(seed)
        if not commitment:
            continue
        since = date.fromisoformat(commitment["periods_from"])
        until = date.fromisoformat(commitment["periods_until"])
        assert since < until and (until - since).days <= 3 * 31 + 1
        assert len(covered) <= 3
