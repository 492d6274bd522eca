"""The probe's samples: surface features, complaint text, label and difficulty per scenario.

Features come from the public database only (`env.probe_features`); the label is read from the
truth solely as the target a shortcut model is fitted to and scored against.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from env.cli import map_seeds
from env.generator import generate
from env.labels import ROOT_CAUSES
from env.probe_features import features_of_database
from env.scenario import reveal_truth
from env.splits import split_assignment, split_seeds


@dataclass(frozen=True)
class Row:
    scenario_id: str
    label: str
    difficulty: str
    complaint: str
    features: dict[str, float]


def row_of(split: str, seed: int) -> Row:
    scenario = generate.__wrapped__(split, seed)
    return Row(
        scenario.scenario_id,
        reveal_truth(scenario).label,
        scenario.difficulty,
        scenario.complaint,
        features_of_database(scenario.database),
    )


@dataclass
class Sample:
    """Rows of one or more splits as arrays; `names` orders the feature columns."""

    name: str
    rows: list[Row]
    names: list[str] = field(default_factory=list)

    @cached_property
    def X(self) -> np.ndarray:
        return np.array([[r.features.get(n, 0.0) for n in self.names] for r in self.rows])

    @cached_property
    def y(self) -> np.ndarray:
        return np.array([r.label for r in self.rows])

    @cached_property
    def difficulty(self) -> np.ndarray:
        return np.array([r.difficulty for r in self.rows])

    @cached_property
    def texts(self) -> list[str]:
        return [r.complaint for r in self.rows]

    def __len__(self) -> int:
        return len(self.rows)


def load(split: str, seeds: Sequence[int], workers: int | None = None) -> list[Row]:
    return map_seeds(row_of, split, seeds, workers)


def train_seeds(offset: int, count: int) -> list[int]:
    return split_seeds("train", offset + count)[offset:]


def feature_names(rows: Sequence[Row]) -> list[str]:
    """Every feature any fitting row has, sorted: a fixed column order for a run."""
    return sorted({name for r in rows for name in r.features})


def eval_priors() -> dict[str, float]:
    """Each label's share of the eval split: the rate at which an evaluation meets it."""
    labels = [split_assignment("eval", s).label for s in split_seeds("eval")]
    return {label: labels.count(label) / len(labels) for label in ROOT_CAUSES}
