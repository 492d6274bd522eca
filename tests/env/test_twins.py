"""Counterfactual twins (`env.generation.twins`): the same world with the fault set right.

Cases are found by property among the eval seeds (a rebilled invoice, an invoice that should not
exist, a second charge), never by fixed seed ids.
"""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from checks.validate import check_scenario
from env.generation.generator import build, generate
from env.generation.splits import split_seeds
from env.generation.twins import moved_twin, twin
from env.ledger_env import LedgerEnv, open_database
from env.scenario import Scenario, reveal_truth

SEEDS = split_seeds("eval")
# rows are compared by table; the fault's records are those of the invoices it overcharged
INVOICE_TABLES = {"invoices": 0, "invoice_lines": 0, "payments": 1, "credit_notes": 1}


def _rows(database: bytes) -> dict[str, list[tuple[object, ...]]]:
    connection = open_database(database)
    try:
        names = [
            r[0] for r in connection.execute("SELECT name FROM sqlite_master WHERE type='table'")
        ]
        return {n: [tuple(r) for r in connection.execute(f'SELECT * FROM "{n}"')] for n in names}
    finally:
        connection.close()


def _find(predicate: Callable[[Scenario], bool]) -> Scenario:
    for seed in SEEDS:
        scenario = generate("eval", seed)
        if reveal_truth(scenario).label != "no_error" and predicate(scenario):
            return scenario
    pytest.skip("no eval scenario of this kind")


def _kinds(scenario: Scenario) -> set[str]:
    """How the fault wrote: 'rebilled', 'unwarranted' (an invoice twin drops), 'payment'."""
    ids = set(reveal_truth(scenario).overcharges)
    before = {r[0] for r in _rows(scenario.database)["invoices"]}
    after = _rows(twin(scenario.split, scenario.seed).database)
    kinds = set()
    for row in after["invoices"]:
        if row[0] in ids:
            kinds.add("rebilled")
    if ids & before - {r[0] for r in after["invoices"]}:
        kinds.add("unwarranted")
    if reveal_truth(scenario).label == "duplicate_payment":
        kinds.add("payment")
    return kinds


@pytest.mark.parametrize("kind", ["rebilled", "unwarranted", "payment"])
def test_a_twin_differs_from_its_original_only_in_the_faults_records(kind: str) -> None:
    original = _find(lambda s: kind in _kinds(s))
    faulted = set(reveal_truth(original).overcharges)
    old, new = _rows(original.database), _rows(twin(original.split, original.seed).database)
    assert old != new
    for table in old:
        if table in INVOICE_TABLES:
            column = INVOICE_TABLES[table]
            keep = [r for r in old[table] if r[column] not in faulted]
            assert keep == [r for r in new[table] if r[column] not in faulted], table
        elif table == "subscriptions":  # only the status of a cancellation never processed
            assert [r[:4] + r[5:] for r in old[table]] == [r[:4] + r[5:] for r in new[table]]
        else:
            assert old[table] == new[table], table


def _recompute_differences(scenario: Scenario) -> dict[str, str]:
    env = LedgerEnv(scenario, episode_id="twin-test")
    try:
        ids = [r[0] for r in _rows(scenario.database)["invoices"]]
        out = {}
        for invoice_id in ids:
            result = json.loads(
                env.call("recompute_invoice", json.dumps({"invoice_id": invoice_id}))
            )
            out[invoice_id] = result["difference"]
        return out
    finally:
        env.close()


def test_every_invoice_of_a_twin_recomputes_to_what_it_was_billed() -> None:
    for seed in SEEDS:
        scenario = twin("eval", seed)
        assert set(_recompute_differences(scenario).values()) == {"0.00"}, scenario.scenario_id


def test_a_twin_keeps_the_complaint_customer_and_dispute_and_says_no_error() -> None:
    original = _find(lambda s: True)
    copy = twin(original.split, original.seed)
    assert copy.scenario_id == f"eval-twin-{original.seed}"
    assert (copy.complaint, copy.customer_id, copy.opened_at, copy.difficulty) == (
        original.complaint,
        original.customer_id,
        original.opened_at,
        original.difficulty,
    )
    truth = reveal_truth(copy)
    assert (truth.label, truth.overcharges, truth.expected_credits) == ("no_error", {}, {})


def test_the_twin_of_a_no_error_scenario_is_itself() -> None:
    seed = next(s for s in SEEDS if reveal_truth(generate("eval", s)).label == "no_error")
    assert twin("eval", seed) is generate("eval", seed)


def test_twins_are_deterministic_and_the_frozen_split_holds_them() -> None:
    original = _find(lambda s: True)
    first = build("eval", original.seed, twin=True)
    again = build("eval", original.seed, twin=True)
    assert first is not None and again is not None
    assert first.database == again.database and first.complaint == again.complaint
    assert generate("eval-twins", original.seed).database == first.database
    assert reveal_truth(first) == reveal_truth(again)


def test_twins_replay_their_reference_and_hold_the_worlds_invariants() -> None:
    for seed in SEEDS[:12]:
        scenario = generate("eval-twins", seed)
        assert check_scenario(scenario) == [], scenario.scenario_id


def test_a_moved_twin_has_the_same_fault_on_another_invoice() -> None:
    for seed in SEEDS:
        moved = moved_twin("eval", seed)
        if moved is None:
            continue
        original = reveal_truth(generate("eval", seed))
        truth = reveal_truth(moved)
        assert truth.label == original.label
        assert len(truth.overcharges) == 1 and not set(truth.overcharges) & set(
            original.overcharges
        )
        assert moved.complaint == generate("eval", seed).complaint
        assert check_scenario(moved) == []
        return
    pytest.fail("no eval scenario has a moved twin")


def test_classes_without_a_single_movable_input_have_no_moved_twin() -> None:
    seed = next(
        s for s in SEEDS if reveal_truth(generate("eval", s)).label == "billed_after_cancellation"
    )
    assert moved_twin("eval", seed) is None
