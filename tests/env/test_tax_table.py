"""The tax table as it stands on the dispute day: one row in force per jurisdiction and day, also
when a rate comes back after a temporary one. Hypothesis found train-1005907 (now in
`test_rare_worlds.py`), where merging "a change to the same rate" joined 0.08 before and after a
month of 0.08375 into one open row."""

from __future__ import annotations

import random
from datetime import date
from types import SimpleNamespace
from typing import Any, cast

from env.generation.builder import WorldBuilder


def _closed(rows: list[tuple[str, str, str, str | None]], today: date) -> list[tuple]:
    builder = WorldBuilder(random.Random(0), name_pool="us", difficulty="L1")
    builder.draft = cast(Any, SimpleNamespace(tax_rates=rows))  # close_rates reads only this
    builder.close_rates(today)
    return builder.draft.tax_rates


def test_a_rate_that_comes_back_keeps_its_own_row() -> None:
    history = [
        ("US-NY", "0.08", "2023-01-01", "2025-08-01"),
        ("US-NY", "0.08375", "2025-08-01", "2025-09-01"),
        ("US-NY", "0.08", "2025-09-01", None),
    ]
    assert sorted(_closed(history, date(2025, 11, 10)), key=lambda r: r[2]) == history


def test_a_change_to_the_same_rate_is_one_row_and_a_later_rate_is_not_in_force_yet() -> None:
    history = [
        ("GB", "0.2", "2023-01-01", "2025-03-01"),
        ("GB", "0.20", "2025-03-01", None),
        ("US-TX", "0.07", "2023-01-01", "2026-01-01"),
        ("US-TX", "0.0725", "2026-01-01", None),
    ]
    assert _closed(history, date(2025, 11, 10)) == [
        ("GB", "0.2", "2023-01-01", None),
        ("US-TX", "0.07", "2023-01-01", None),
    ]
