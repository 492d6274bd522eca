"""The plan and seat look-alikes (`env.generation.lookalikes_plans`, issue 19): each occurs at L2/L3
in several classes, its invoice is billed correctly (recompute difference 0.00, no overcharge in
the truth), the separating record is visible through the tools, and the fault differs.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from datetime import date
from functools import cache

from checks.probe_comparisons import (
    plan_change_date_vs_event,
    plan_vs_timeline,
    seats_vs_subscription_row,
    seats_vs_timeline,
)
from checks.probe_ledger import ledger_of
from env.generation.generator import generate
from env.generation.splits import spec
from env.ledger_env import LedgerEnv, open_database
from env.scenario import Scenario, reveal_truth
from tests.env.conftest import ok

SEEDS = range(spec("train").first_seed, spec("train").first_seed + 400)


@cache
def _scenario(seed: int) -> Scenario:
    return generate("train", seed)


def _fired(seed: int, check: object) -> list[str]:
    """Invoice ids the check flags on this scenario."""
    db = open_database(_scenario(seed).database)
    try:
        led = ledger_of(db)
    finally:
        db.close()
    if check in (seats_vs_subscription_row,):
        return sorted(check(led))  # type: ignore[operator]
    return sorted(inv.id for inv in led.invoices if check(led, inv))  # type: ignore[operator]


def _events(seed: int) -> list[tuple[str, str, dict[str, object]]]:
    db = open_database(_scenario(seed).database)
    try:
        rows = db.execute("SELECT subscription_id, type, details FROM subscription_events")
        return [(s, t, json.loads(d)) for s, t, d in rows]
    finally:
        db.close()


def _lookalike_firings(check: object, label: str) -> Iterator[tuple[int, str]]:
    """(seed, invoice) where `check` fires at L2/L3 outside `label`'s class, on an invoice
    the scenario's own fault (another rule) left alone."""
    for seed in SEEDS:
        scenario = _scenario(seed)
        truth = reveal_truth(scenario)
        if scenario.difficulty == "L1" or truth.label == label:
            continue
        for invoice in _fired(seed, check):
            if invoice not in truth.overcharges:
                yield seed, invoice


def _billed_right(seed: int, invoice: str) -> LedgerEnv:
    scenario = _scenario(seed)
    assert invoice not in reveal_truth(scenario).overcharges
    episode = LedgerEnv(scenario, episode_id="ep-plans")
    assert ok(episode, "recompute_invoice", invoice_id=invoice)["difference"] == "0.00"
    return episode


def _classes(check: object, label: str) -> Counter[str]:
    found: Counter[str] = Counter()
    for seed, _ in _lookalike_firings(check, label):
        found[reveal_truth(_scenario(seed)).label] += 1
    return found


def test_a_withdrawn_scheduled_change_fires_plan_vs_timeline_in_several_classes() -> None:
    assert len(_classes(plan_vs_timeline, "downgrade_not_applied")) >= 3
    withdrawn = 0
    for seed, invoice in _lookalike_firings(plan_vs_timeline, "downgrade_not_applied"):
        episode = _billed_right(seed, invoice)
        sub = ok(episode, "get_invoice", invoice_id=invoice)["subscription_id"]
        kinds = [
            e["type"]
            for e in ok(episode, "get_subscription_timeline", subscription_id=sub)["events"]
        ]
        withdrawn += "plan_change_withdrawn" in kinds
        episode.close()
    assert withdrawn


def test_a_seat_change_for_a_later_period_fires_seats_vs_timeline_billed_right() -> None:
    assert len(_classes(seats_vs_timeline, "seat_count_mismatch")) >= 3
    named = 0
    for seed, invoice in _lookalike_firings(seats_vs_timeline, "seat_count_mismatch"):
        episode = _billed_right(seed, invoice)
        named += any(
            t == "seats_changed" and str(d.get("effective", ""))[:1].isdigit()
            for _, t, d in _events(seed)
        )
        episode.close()
    assert named


def test_a_pending_seat_order_on_the_row_fires_seats_vs_subscription_row() -> None:
    assert len(_classes(seats_vs_subscription_row, "seat_count_mismatch")) >= 3
    for seed, invoice in list(_lookalike_firings(seats_vs_subscription_row, "x"))[:40]:
        if reveal_truth(_scenario(seed)).label == "seat_count_mismatch":
            continue
        _billed_right(seed, invoice).close()


def test_a_backdated_change_is_prorated_from_its_named_date() -> None:
    assert len(_classes(plan_change_date_vs_event, "proration_error")) >= 3
    backdated = 0
    for seed, invoice in _lookalike_firings(plan_change_date_vs_event, "proration_error"):
        if reveal_truth(_scenario(seed)).label == "timezone_period_boundary":
            continue  # its own UTC-date proration
        episode = _billed_right(seed, invoice)
        recorded = ok(episode, "get_invoice", invoice_id=invoice)["billing_inputs"][
            "plan_change_date"
        ]
        named = {  # world v5: the agreed date is its own event's (`plan_change_start_moved`)
            str(d.get("starts")) for _, t, d in _events(seed) if t == "plan_change_start_moved"
        }
        backdated += recorded in named
        episode.close()
    assert backdated


def test_backdated_changes_are_logged_later_with_their_agreed_start() -> None:
    for seed in list(SEEDS)[:200]:
        db = open_database(_scenario(seed).database)
        try:
            led = ledger_of(db)
        finally:
            db.close()
        for events in led.events.values():
            for n, e in enumerate(events):
                if e.type != "plan_change_start_moved" or e.details["requested_by"] != "sales":
                    continue
                change = events[n - 1]  # logged right after the change, the same local day
                assert change.type == "plan_changed" and change.day == e.day
                assert change.details["effective"] == "immediately"
                assert (change.day - date.fromisoformat(e.details["starts"])).days >= 2


def test_the_faults_still_differ_from_their_lookalikes() -> None:
    """In the fault classes the checks fire on an overcharged invoice the truth names."""
    pairs = {
        "downgrade_not_applied": plan_vs_timeline,
        "seat_count_mismatch": seats_vs_timeline,
        "proration_error": plan_change_date_vs_event,
    }
    hit: Counter[str] = Counter()
    for seed in SEEDS:
        truth = reveal_truth(_scenario(seed))
        check = pairs.get(truth.label)
        if check is not None and set(_fired(seed, check)) & set(truth.overcharges):
            hit[truth.label] += 1
    assert set(hit) == set(pairs)
