"""Tests for eval/stats.py against values computed by hand (the arithmetic is in the comments)."""

from __future__ import annotations

import dataclasses
import itertools
import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from eval.stats import (
    Interval,
    bootstrap_ci,
    intervals_overlap,
    mean_ci,
    mean_pass_hat_k,
    pass_hat_k,
    wilson_interval,
)

T, F = True, False

# pass^k for one scenario


def test_pass_hat_k_of_two_successes_in_four_trials_at_k2_is_one_sixth() -> None:
    # C(2,2) / C(4,2) = 1 / 6
    assert pass_hat_k(4, 2, 2) == pytest.approx(1 / 6)


def test_pass_hat_k_of_all_successes_is_one() -> None:
    # C(4,4) / C(4,4) = 1 / 1
    assert pass_hat_k(4, 4, 4) == 1.0


def test_pass_hat_k_is_zero_when_fewer_successes_than_k() -> None:
    # C(1,2) = 0, so 0 / C(5,2) = 0
    assert pass_hat_k(5, 1, 2) == 0.0


def test_pass_hat_k_at_k1_is_the_success_rate() -> None:
    # C(3,1) / C(5,1) = 3 / 5
    assert pass_hat_k(5, 3, 1) == pytest.approx(0.6)


def test_pass_hat_k_of_three_in_five_at_k2_is_three_tenths() -> None:
    # C(3,2) / C(5,2) = 3 / 10
    assert pass_hat_k(5, 3, 2) == pytest.approx(0.3)


@pytest.mark.parametrize(
    ("n", "c", "k"),
    [(4, 2, 5), (4, 5, 2), (-1, 0, 1), (4, -1, 1), (4, 2, -1), (4, 2, 0)],
    ids=["k>n", "c>n", "negative n", "negative c", "negative k", "k=0"],
)
def test_pass_hat_k_rejects_impossible_arguments(n: int, c: int, k: int) -> None:
    with pytest.raises(ValueError):
        pass_hat_k(n, c, k)


@given(st.integers(1, 30).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n))))
def test_pass_hat_k_never_rises_as_k_grows(n_c: tuple[int, int]) -> None:
    n, c = n_c
    values = [pass_hat_k(n, c, k) for k in range(1, n + 1)]
    assert all(0.0 <= v <= 1.0 for v in values)
    assert all(later <= earlier for earlier, later in itertools.pairwise(values))


# mean pass^k over scenarios


def test_mean_pass_hat_k_averages_scenarios() -> None:
    # k=2: [T,T,F,F] -> 1/6, [T,T,T,T] -> 1, [F,F,F,F] -> 0; mean = (1/6 + 1 + 0) / 3 = 7/18
    outcomes = [[T, T, F, F], [T, T, T, T], [F, F, F, F]]
    assert mean_pass_hat_k(outcomes, 2) == pytest.approx(7 / 18)


def test_mean_pass_hat_k_accepts_scenarios_with_different_trial_counts() -> None:
    # k=2: [T,T] -> 1, [T,T,T,F] -> C(3,2)/C(4,2) = 3/6; mean = (1 + 0.5) / 2 = 0.75
    assert mean_pass_hat_k([[T, T], [T, T, T, F]], 2) == pytest.approx(0.75)


def test_mean_pass_hat_k_rejects_no_scenarios() -> None:
    with pytest.raises(ValueError):
        mean_pass_hat_k([], 1)


def test_mean_pass_hat_k_rejects_a_scenario_with_fewer_trials_than_k() -> None:
    with pytest.raises(ValueError):
        mean_pass_hat_k([[T, T, T], [T]], 2)


# Wilson score interval


def test_wilson_interval_for_8_of_10_matches_hand_computation() -> None:
    # z = 1.959964, z^2 = 3.841459, p = 0.8, n = 10
    # z^2/n = 0.3841459; denominator 1 + z^2/n = 1.3841459
    # centre = (p + z^2/(2n)) / denom = (0.8 + 0.1920730) / 1.3841459 = 0.716735
    # half = z / denom * sqrt(p(1-p)/n + z^2/(4n^2))
    #      = 1.959964 / 1.3841459 * sqrt(0.016 + 0.0096036) = 1.416006 * 0.160011 = 0.226577
    # interval = (0.716735 - 0.226577, 0.716735 + 0.226577) = (0.490158, 0.943312)
    interval = wilson_interval(8, 10)
    assert interval.low == pytest.approx(0.4902, abs=1e-4)
    assert interval.high == pytest.approx(0.9433, abs=1e-4)
    assert interval.estimate == pytest.approx(0.8)


def test_wilson_interval_with_no_trials_is_the_whole_unit_interval() -> None:
    assert wilson_interval(0, 0) == Interval(low=0.0, high=1.0, estimate=0.5)


def test_wilson_interval_reaches_exactly_zero_and_one_at_the_extremes() -> None:
    # Float arithmetic alone lands ~1e-17 off for these counts.
    assert wilson_interval(0, 10).low == 0.0
    assert wilson_interval(13, 13).high == 1.0


def test_wilson_interval_widens_with_a_higher_level() -> None:
    narrow, wide = wilson_interval(8, 10, level=0.9), wilson_interval(8, 10, level=0.99)
    assert wide.low < narrow.low and narrow.high < wide.high


@pytest.mark.parametrize(("s", "n", "level"), [(11, 10, 0.95), (-1, 10, 0.95), (5, 10, 1.0)])
def test_wilson_interval_rejects_impossible_arguments(s: int, n: int, level: float) -> None:
    with pytest.raises(ValueError):
        wilson_interval(s, n, level)


# bootstrap


def _scenarios(num: int) -> list[list[bool]]:
    """Every third scenario fails one of its four trials; the rest succeed on all."""
    return [[T, T, T, F] if i % 3 == 0 else [T, T, T, T] for i in range(num)]


def test_bootstrap_ci_is_deterministic_for_a_seed() -> None:
    outcomes = _scenarios(30)
    assert bootstrap_ci(outcomes, 2, seed=7) == bootstrap_ci(outcomes, 2, seed=7)


def test_bootstrap_ci_estimate_is_mean_pass_hat_k_and_lies_inside() -> None:
    outcomes = _scenarios(30)
    interval = bootstrap_ci(outcomes, 2)
    assert interval.estimate == pytest.approx(mean_pass_hat_k(outcomes, 2))
    assert interval.low <= interval.estimate <= interval.high


def test_bootstrap_ci_narrows_with_more_scenarios() -> None:
    small, large = bootstrap_ci(_scenarios(12), 2), bootstrap_ci(_scenarios(300), 2)
    assert large.high - large.low < small.high - small.low


def test_bootstrap_ci_of_all_successes_is_exactly_one() -> None:
    assert bootstrap_ci([[T, T, T]] * 20, 3) == Interval(low=1.0, high=1.0, estimate=1.0)


def test_bootstrap_ci_resamples_scenario_values_like_mean_ci() -> None:
    outcomes = [[T, F, T], [F, F, T], [T, T, T], [F, F, F]]
    values = [pass_hat_k(3, sum(o), 2) for o in outcomes]
    assert bootstrap_ci(outcomes, 2, seed=3) == mean_ci(values, seed=3)


def test_bootstrap_ci_of_100_scenarios_takes_well_under_a_second() -> None:
    outcomes = _scenarios(100)
    start = time.perf_counter()
    bootstrap_ci(outcomes, 2, resamples=2000)
    assert time.perf_counter() - start < 1.0


def test_mean_ci_of_zero_and_one_spans_both() -> None:
    # Resampled means of [0, 1] are 0, 0.5, 1 with probabilities 1/4, 1/2, 1/4, so the
    # 2.5% and 97.5% percentiles of 2000 resamples are 0 and 1; the estimate is 0.5.
    assert mean_ci([0.0, 1.0]) == Interval(low=0.0, high=1.0, estimate=0.5)


def test_mean_ci_of_one_value_collapses_to_it() -> None:
    assert mean_ci([3.25]) == Interval(low=3.25, high=3.25, estimate=3.25)


@pytest.mark.parametrize(
    "kwargs", [{"values": []}, {"values": [1.0], "resamples": 0}, {"values": [1.0], "level": 0}]
)
def test_mean_ci_rejects_empty_input_and_bad_settings(kwargs: dict) -> None:
    values = kwargs.pop("values")
    with pytest.raises(ValueError):
        mean_ci(values, **kwargs)


# Interval


def test_interval_formats_estimate_then_bounds() -> None:
    assert Interval(low=0.53, high=0.71, estimate=0.62).format() == "0.62 [0.53, 0.71]"
    assert Interval(low=0.5, high=1.0, estimate=0.75).format(3) == "0.750 [0.500, 1.000]"


def test_interval_rejects_low_above_high() -> None:
    with pytest.raises(ValueError):
        Interval(low=0.8, high=0.2, estimate=0.5)


def test_interval_is_frozen() -> None:
    interval = Interval(low=0.1, high=0.2, estimate=0.15)
    with pytest.raises(dataclasses.FrozenInstanceError):
        interval.low = 0.0  # type: ignore[misc]


def test_intervals_overlap_when_they_share_or_touch_a_point() -> None:
    a = Interval(low=0.2, high=0.5, estimate=0.3)
    assert intervals_overlap(a, Interval(low=0.4, high=0.9, estimate=0.6))
    assert intervals_overlap(a, Interval(low=0.5, high=0.9, estimate=0.6))
    assert intervals_overlap(Interval(low=0.0, high=1.0, estimate=0.5), a)


def test_intervals_do_not_overlap_when_disjoint_in_either_order() -> None:
    a = Interval(low=0.2, high=0.5, estimate=0.3)
    b = Interval(low=0.6, high=0.9, estimate=0.7)
    assert not intervals_overlap(a, b)
    assert not intervals_overlap(b, a)
