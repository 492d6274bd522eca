"""95% intervals over seeds: Student-t on the mean of per-seed values, and on paired differences.

A seed is one whole run (its scenario order, samples, cold-start demonstrations and val
samples), so per-seed values are independent; arms that share a seed share the first scenarios
and the val sampling, which is why a difference between two arms is taken seed by seed.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

# Student-t 0.975 quantiles for 1..30 degrees of freedom; 1.96 past 30.
_T975 = (
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
    2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
    2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
)  # fmt: skip


def t975(df: int) -> float:
    if df < 1:
        raise ValueError("an interval needs at least two values")
    return _T975[df - 1] if df <= len(_T975) else 1.96


@dataclass(frozen=True)
class Interval:
    mean: float
    low: float
    high: float
    n: int

    def excludes_zero(self) -> bool:
        return self.n > 1 and (self.low > 0 or self.high < 0)

    def as_dict(self) -> dict[str, float | int]:
        return {"mean": self.mean, "low": self.low, "high": self.high, "n": self.n}


def interval(values: Sequence[float]) -> Interval:
    """Mean +- t(0.975, n-1) x s / sqrt(n); a single value is its own (degenerate) interval."""
    n = len(values)
    if n == 0:
        raise ValueError("no values")
    mean = sum(values) / n
    if n == 1:
        return Interval(mean, mean, mean, 1)
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    half = t975(n - 1) * sd / math.sqrt(n)
    return Interval(mean, mean - half, mean + half, n)


def paired(a: Sequence[float], b: Sequence[float]) -> Interval:
    """The interval of a - b, seed by seed."""
    if len(a) != len(b):
        raise ValueError("paired values need the same seeds")
    return interval([x - y for x, y in zip(a, b, strict=True)])
