"""Group-baseline advantage estimators for REINFORCE: pure functions of one group's rewards.

- RLOO: each sample against the mean of the *other* samples.
- GRPO: against the group mean, divided by the group's standard deviation (population std
  plus 1e-6, as ART 0.5.18 computes it, `art/preprocessing/tokenize.py`).
- Dr. GRPO: against the group mean, not divided (Liu et al., "Understanding R1-Zero-Like
  Training"): the step size keeps the reward's scale.
A group whose rewards all tie gets zero advantage from all three. GRPO's division is what
turns a tie broken only by tiny tool-cost differences into advantages of size ~1.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

Estimator = Callable[[Sequence[float]], list[float]]
GRPO_EPSILON = 1e-6


def _mean(rewards: Sequence[float]) -> float:
    return sum(rewards) / len(rewards)


def rloo(rewards: Sequence[float]) -> list[float]:
    n = len(rewards)
    if n < 2:
        return [0.0] * n
    total = sum(rewards)
    return [r - (total - r) / (n - 1) for r in rewards]


def grpo(rewards: Sequence[float]) -> list[float]:
    if not rewards:
        return []
    mean = _mean(rewards)
    std = math.sqrt(sum((r - mean) ** 2 for r in rewards) / len(rewards))
    return [(r - mean) / (std + GRPO_EPSILON) for r in rewards]


def dr_grpo(rewards: Sequence[float]) -> list[float]:
    if not rewards:
        return []
    mean = _mean(rewards)
    return [r - mean for r in rewards]


ESTIMATORS: dict[str, Estimator] = {"rloo": rloo, "grpo": grpo, "dr_grpo": dr_grpo}


def estimator(name: str) -> Estimator:
    if name not in ESTIMATORS:
        raise ValueError(f"unknown estimator {name!r}; choose one of {', '.join(ESTIMATORS)}")
    return ESTIMATORS[name]
