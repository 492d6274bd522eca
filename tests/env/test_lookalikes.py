"""Values a fault writes are values the correct world writes too (design §1.2, no
fingerprints), measured over generated worlds: a cancellation on a date, `at_period_end` in the
held-out class, an allowance of 0, every `ordered_by` shape, and no change on a period's first day.
"""

from __future__ import annotations

import json
import re
from collections import Counter

from env.generation.generator import generate
from env.generation.splits import spec
from env.ledger_env import open_database
from env.scenario import reveal_truth

SEEDS = range(spec("train").first_seed, spec("train").first_seed + 300)


def _rows(split: str, seed: int, sql: str) -> list[tuple]:
    scenario = generate(split, seed)
    db = open_database(scenario.database)
    try:
        return [tuple(r) for r in db.execute(sql)]
    finally:
        db.close()


def _label(split: str, seed: int) -> str:
    return reveal_truth(generate(split, seed)).label


def test_a_cancellation_on_a_date_also_occurs_billed_correctly() -> None:
    labels = Counter()
    for seed in SEEDS:
        details = _rows(
            "train", seed, "SELECT details FROM subscription_events WHERE type = 'canceled'"
        )
        if any(re.match(r'\{"effective": "\d{4}-', d[0]) for d in details):
            labels[_label("train", seed)] += 1
    assert set(labels) - {"billed_after_cancellation"}


def test_the_heldout_cancellation_uses_the_worlds_own_vocabulary() -> None:
    for seed in range(spec("heldout").first_seed, spec("heldout").first_seed + 50):
        for (details,) in _rows("heldout", seed, "SELECT details FROM subscription_events"):
            assert "end_of_period" not in details


def test_a_plan_with_no_included_units_occurs_outside_the_usage_fault() -> None:
    labels = Counter()
    for seed in SEEDS:
        lines = _rows("train", seed, "SELECT description FROM invoice_lines")
        if any(re.search(r": \d+ units, 0 included", d[0]) for d in lines):
            labels[_label("train", seed)] += 1
    assert set(labels) - {"usage_overage_miscalculated"}


def test_every_ordered_by_shape_occurs_in_more_than_one_class() -> None:
    shapes: dict[str, set[str]] = {}
    for seed in SEEDS:
        for (details,) in _rows("train", seed, "SELECT details FROM subscription_events"):
            who = json.loads(details).get("ordered_by")
            if who:
                shape = "admin" if ".admin@" in who else "colleague"
                shapes.setdefault(shape, set()).add(_label("train", seed))
    assert shapes and all(len(labels) > 1 for labels in shapes.values())


def test_no_invoice_prorates_a_change_on_its_previous_periods_first_day() -> None:
    for seed in SEEDS:
        for (description,) in _rows("train", seed, "SELECT description FROM invoice_lines"):
            found = re.search(r"(\d+)/(\d+) days of the previous period", description)
            assert not (found and found.group(1) == found.group(2)), (seed, description)
