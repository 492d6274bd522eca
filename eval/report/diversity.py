"""Exploration within GRPO groups: distinct tool-call sequences / group size, per training step.

A group is the rollouts of one scenario in one step; two rollouts share a sequence when they
called the same tools in the same order (names only, arguments ignored: a strategy, not its ids).
Training writes it (training/tool_sequences.py): TRL rows carry `group_tool_sequences` (one digest
per episode, grouped), ART rows `data/tool_sequence_diversity` (the step's mean). A step's value
is the mean over its groups of two or more rollouts. Exploration has collapsed when that mean
stays below COLLAPSE_BELOW for COLLAPSE_STEPS logged steps in a row: the groups then mostly repeat
one path, and GRPO has little left to compare. Rows without either key give None (older logs).
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Any

COLLAPSE_BELOW = 0.3
COLLAPSE_STEPS = 3
TRL_KEY = "group_tool_sequences"
ART_KEY = "data/tool_sequence_diversity"


def group_diversity(sequences: Sequence[str]) -> float:
    """Distinct sequences / group size: 1.0 when every rollout differs, 1/n when all agree."""
    return len(set(sequences)) / len(sequences)


def row_diversity(row: dict[str, Any]) -> float | None:
    """The step's mean group diversity from a TRL or ART metrics row; None where not logged."""
    groups = row.get(TRL_KEY)
    if isinstance(groups, list):
        values = [
            group_diversity([str(s) for s in group])
            for group in groups
            if isinstance(group, list) and len(group) > 1
        ]
        return statistics.fmean(values) if values else None
    value = row.get(ART_KEY)
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def collapses(points: Sequence[tuple[int, float | None]]) -> list[tuple[int, int]]:
    """(first step, last step) of every run of COLLAPSE_STEPS or more logged steps in a row
    below COLLAPSE_BELOW; a step that logged no value neither breaks nor extends a run."""
    found: list[tuple[int, int]] = []
    streak: list[int] = []
    for step, value in [(s, v) for s, v in points if v is not None]:
        if value < COLLAPSE_BELOW:
            streak.append(step)
            continue
        if len(streak) >= COLLAPSE_STEPS:
            found.append((streak[0], streak[-1]))
        streak = []
    if len(streak) >= COLLAPSE_STEPS:
        found.append((streak[0], streak[-1]))
    return found


def collapse_warning(name: str, spans: Sequence[tuple[int, int]]) -> str | None:
    if not spans:
        return None
    where = ", ".join(f"steps {a}–{b}" for a, b in spans)
    return (
        f"{name}: tool-call diversity within groups collapsed (mean distinct sequences / group "
        f"size below {COLLAPSE_BELOW} for {COLLAPSE_STEPS}+ steps in a row: {where}); the "
        "groups repeat one path, so GRPO has little to compare"
    )
