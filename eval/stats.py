"""Evaluation statistics: the pass^k estimator and the intervals we report around it.

Small pure functions on plain Python lists (no numpy), each naming its method and source, so a
number in a results table can be traced to one formula. The bootstrap is seeded and therefore
reproducible. Tests: `pytest tests/eval/test_stats.py`.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist


@dataclass(frozen=True)
class Interval:
    """A point estimate with its confidence bounds; `format()` is the one way tables print it."""

    low: float
    high: float
    estimate: float

    def __post_init__(self) -> None:
        if not self.low <= self.high:  # also rejects NaN bounds
            raise ValueError(f"interval low {self.low} exceeds high {self.high}")

    def format(self, digits: int = 2) -> str:
        """E.g. "0.62 [0.53, 0.71]"."""
        return f"{self.estimate:.{digits}f} [{self.low:.{digits}f}, {self.high:.{digits}f}]"


def pass_hat_k(num_trials: int, num_successes: int, k: int) -> float:
    """τ-bench's pass^k for one scenario: C(c, k) / C(n, k).

    The chance that k trials drawn without replacement from the n run all succeed, i.e. an
    unbiased estimate of "succeeds k times in a row" (Yao et al. 2024, "τ-bench",
    arXiv:2406.12045). pass^1 is the success rate; pass^k falls as k grows unless the agent is
    reliable. k must be at least 1: pass^0 would be 1 for every agent and says nothing.
    """
    n, c = num_trials, num_successes
    if n < 0 or c < 0:
        raise ValueError(f"trials ({n}) and successes ({c}) must be non-negative")
    if c > n:
        raise ValueError(f"successes ({c}) exceed trials ({n})")
    if not 1 <= k <= n:
        raise ValueError(f"k ({k}) must be between 1 and the number of trials ({n})")
    # math.comb is exact; int / int is correctly rounded even for large binomials.
    return math.comb(c, k) / math.comb(n, k)


def _scenario_values(outcomes: Sequence[Sequence[bool]], k: int) -> list[float]:
    if not outcomes:
        raise ValueError("need at least one scenario")
    return [pass_hat_k(len(trials), sum(map(bool, trials)), k) for trials in outcomes]


def mean_pass_hat_k(outcomes: Sequence[Sequence[bool]], k: int) -> float:
    """pass^k of a benchmark: the mean over scenarios of each scenario's pass^k (τ-bench).

    `outcomes[i]` holds scenario i's trial successes; scenarios may have different trial
    counts as long as each has at least k.
    """
    values = _scenario_values(outcomes, k)
    return sum(values) / len(values)


def _check_level(level: float) -> float:
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level}")
    return level


def _z(level: float) -> float:
    """Two-sided normal critical value: 1.959964 for 0.95."""
    return NormalDist().inv_cdf(0.5 + _check_level(level) / 2.0)


def _quantile(sorted_values: Sequence[float], q: float) -> float:
    """Linear interpolation between order statistics (Hyndman & Fan type 7, numpy's default)."""
    pos = q * (len(sorted_values) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (pos - lo) * (sorted_values[hi] - sorted_values[lo])


def mean_ci(
    values: Sequence[float], *, resamples: int = 2000, seed: int = 0, level: float = 0.95
) -> Interval:
    """Percentile bootstrap CI for a mean of per-scenario values (Efron & Tibshirani 1993, ch. 13).

    Scenarios are the unit of resampling because they are the independent draws; trials within
    a scenario are not. Useful for reward means and cost per episode as well as pass^k. With one
    value, or all values equal, the interval collapses to that value: the bootstrap cannot see
    variation the sample does not have.
    """
    if not values:
        raise ValueError("need at least one value")
    if resamples < 1:
        raise ValueError(f"resamples must be positive, got {resamples}")
    alpha = 1.0 - _check_level(level)
    rng = random.Random(seed)
    n = len(values)
    means = sorted(sum(rng.choices(values, k=n)) / n for _ in range(resamples))
    estimate = sum(values) / n
    low, high = _quantile(means, alpha / 2.0), _quantile(means, 1.0 - alpha / 2.0)
    return Interval(low=low, high=high, estimate=estimate)


def bootstrap_ci(
    outcomes: Sequence[Sequence[bool]],
    k: int,
    *,
    resamples: int = 2000,
    seed: int = 0,
    level: float = 0.95,
) -> Interval:
    """Percentile bootstrap CI for mean pass^k, resampling scenarios with replacement.

    Each scenario's pass^k is computed once and the bootstrap resamples those numbers, which
    is the same as recomputing pass^k on each resampled benchmark but much cheaper.
    """
    return mean_ci(_scenario_values(outcomes, k), resamples=resamples, seed=seed, level=level)


def wilson_interval(successes: int, total: int, level: float = 0.95) -> Interval:
    """Wilson score interval for a binomial proportion (Wilson 1927, JASA 22:209).

    Preferred over the normal (Wald) interval because it stays inside [0, 1] and does not
    collapse to zero width at 0/n or n/n. With total == 0 there is no evidence: we return
    Interval(0.0, 1.0, estimate=0.5), which is also the limit of the Wilson formula in count
    form, so callers never see NaN.
    """
    if total < 0 or not 0 <= successes <= total:
        raise ValueError(f"need 0 <= successes ({successes}) <= total ({total})")
    z = _z(level)
    if total == 0:
        return Interval(low=0.0, high=1.0, estimate=0.5)
    p = successes / total
    z2n = z * z / total
    centre = (p + z2n / 2.0) / (1.0 + z2n)
    half = z / (1.0 + z2n) * math.sqrt(p * (1.0 - p) / total + z * z / (4.0 * total * total))
    # At 0/n and n/n the bound is exactly 0 or 1 in exact arithmetic; floats miss by ~1e-17.
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == total else min(1.0, centre + half)
    return Interval(low=low, high=high, estimate=p)


def intervals_overlap(a: Interval, b: Interval) -> bool:
    """Whether two closed intervals share a point (touching counts).

    A screening check, not a significance test: two 95% intervals that do not overlap imply a
    real difference, but overlapping ones do not prove there is none.
    """
    return a.low <= b.high and b.low <= a.high


def paired_bootstrap_ci(
    first: Sequence[float],
    second: Sequence[float],
    *,
    resamples: int = 2000,
    seed: int = 0,
    level: float = 0.95,
) -> Interval:
    """Paired percentile bootstrap CI for mean(second - first) over the same scenarios.

    `first[i]` and `second[i]` are one scenario's values under two models (e.g. its pass^1).
    Resampling the per-scenario differences keeps each scenario's pair together, so the
    scenario-to-scenario spread in difficulty, which both models share, cancels out: the right
    interval when both models saw the same scenarios (Efron & Tibshirani 1993, ch. 13).
    """
    if len(first) != len(second):
        raise ValueError(f"paired samples differ in length: {len(first)} vs {len(second)}")
    differences = [b - a for a, b in zip(first, second, strict=True)]
    return mean_ci(differences, resamples=resamples, seed=seed, level=level)


def mcnemar_exact(only_first: int, only_second: int) -> float:
    """Two-sided exact McNemar p-value from the discordant pair counts (McNemar 1947).

    `only_first`: pairs where the first model succeeded and the second failed; `only_second`
    the reverse. Concordant pairs carry no information about a difference. Under no difference
    each discordant pair goes either way with probability 1/2, so the p-value is the two-sided
    binomial tail: min(1, 2 * P(X <= min(b, c))) with X ~ Binomial(b + c, 1/2). With no
    discordant pair there is no evidence either way: 1.0.
    """
    if only_first < 0 or only_second < 0:
        raise ValueError(f"counts must be non-negative: {only_first}, {only_second}")
    n = only_first + only_second
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(min(only_first, only_second) + 1))
    return min(1.0, 2.0 * tail / 2**n)
