"""Splits: which (label, difficulty, name pool) each seed of each split gets.

Seed ranges never overlap between splits, except a twin split's, which are its source's
(`eval-twins`: eval's seeds, each world with its fault set right). `eval` (100), `heldout`
(50) and `eval-twins` (100) are fixed tables frozen by `env/data/manifest.json`; `train` is
open-ended and never holds the held-out class.
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass

from env.labels import DIFFICULTIES, FAULT_LABELS, HELDOUT_LABEL, TRAIN_FAULT_LABELS


@dataclass(frozen=True)
class SplitSpec:
    first_seed: int
    size: int | None  # None: as many as asked for
    name_pool: str


SPLITS: dict[str, SplitSpec] = {
    "train": SplitSpec(1_000_000, None, "train"),
    "val": SplitSpec(200_000, 100, "val"),
    "eval": SplitSpec(100_000, 100, "eval"),
    "heldout": SplitSpec(300_000, 50, "eval"),
    # the fixed counterfactual twin of each eval seed (`env.generation.twins`): eval's seeds
    "eval-twins": SplitSpec(100_000, 100, "eval"),
}
TWIN_SPLITS = {"eval-twins": "eval"}  # a twin split -> the split whose worlds it sets right
NO_ERROR_SHARE = 0.2
TRAIN_DIFFICULTY_WEIGHTS = (0.4, 0.35, 0.25)


@dataclass(frozen=True)
class Assignment:
    label: str
    difficulty: str
    name_pool: str


class UnknownSplit(ValueError):
    pass


def spec(split: str) -> SplitSpec:
    if split not in SPLITS:
        raise UnknownSplit(f"unknown split {split!r}; choose one of {', '.join(SPLITS)}")
    return SPLITS[split]


def split_seeds(split: str, limit: int | None = None) -> list[int]:
    s = spec(split)
    count = s.size if limit is None else (limit if s.size is None else min(limit, s.size))
    if count is None:
        raise ValueError(f"split {split!r} is open-ended: pass a limit")
    return list(range(s.first_seed, s.first_seed + count))


def _eval_table() -> list[tuple[str, str]]:
    """80 faulted (every class 6 or 7 times), 20 no_error, difficulties in equal thirds."""
    labels: list[str] = []
    for i, label in enumerate(FAULT_LABELS):
        labels += [label] * (7 if i < 8 else 6)
    labels += ["no_error"] * 20
    rng = random.Random(20261129)
    rng.shuffle(labels)
    return [(label, DIFFICULTIES[i % 3]) for i, label in enumerate(labels)]


_EVAL = _eval_table()


def split_assignment(split: str, seed: int) -> Assignment:
    s = spec(split)
    index = seed - s.first_seed
    if index < 0 or (s.size is not None and index >= s.size):
        raise ValueError(f"seed {seed} is outside split {split!r}")
    if split in TWIN_SPLITS:
        source = split_assignment(TWIN_SPLITS[split], seed)
        return Assignment("no_error", source.difficulty, source.name_pool)
    if split == "eval":
        label, difficulty = _EVAL[index]
        return Assignment(label, difficulty, s.name_pool)
    if split == "heldout":
        return Assignment(HELDOUT_LABEL, DIFFICULTIES[index % 3], s.name_pool)
    digest = hashlib.sha256(f"assign:{split}:{seed}".encode()).digest()
    rng = random.Random(int.from_bytes(digest[:8], "big"))
    label = "no_error" if rng.random() < NO_ERROR_SHARE else rng.choice(TRAIN_FAULT_LABELS)
    difficulty = rng.choices(DIFFICULTIES, weights=TRAIN_DIFFICULTY_WEIGHTS)[0]
    return Assignment(label, difficulty, s.name_pool)
