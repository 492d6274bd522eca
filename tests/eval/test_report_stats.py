"""The paired statistics of the report and compare.py (eval/stats.py), against worked values."""

from __future__ import annotations

import pytest

from eval.stats import mcnemar_exact, paired_bootstrap_ci


def test_exact_mcnemar_is_the_two_sided_binomial_tail_of_the_discordant_pairs():
    assert mcnemar_exact(0, 5) == pytest.approx(2 / 32)  # 2 * P(X <= 0), X ~ Bin(5, 1/2)
    assert mcnemar_exact(1, 9) == pytest.approx(2 * (1 + 10) / 1024)
    assert mcnemar_exact(9, 1) == mcnemar_exact(1, 9)
    assert mcnemar_exact(3, 3) == 1.0  # the tail past the middle is capped at 1


def test_mcnemar_without_discordant_pairs_has_no_evidence():
    assert mcnemar_exact(0, 0) == 1.0
    with pytest.raises(ValueError):
        mcnemar_exact(-1, 2)


def test_paired_bootstrap_resamples_per_scenario_differences():
    first = [0.0, 0.5, 1.0, 0.25]
    interval = paired_bootstrap_ci(first, [x + 0.25 for x in first], seed=3)
    # every difference is 0.25: the interval cannot be wider than the sample
    assert (interval.low, interval.estimate, interval.high) == pytest.approx((0.25, 0.25, 0.25))
    mixed = paired_bootstrap_ci([0.0, 0.0, 1.0, 1.0], [1.0, 0.0, 1.0, 0.0], seed=3)
    assert mixed.estimate == 0.0 and mixed.low < 0.0 < mixed.high


def test_paired_bootstrap_refuses_unpaired_samples():
    with pytest.raises(ValueError, match="differ in length"):
        paired_bootstrap_ci([1.0], [1.0, 0.0])
