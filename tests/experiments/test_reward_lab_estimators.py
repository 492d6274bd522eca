"""The lab's advantage estimators against advantages computed by hand."""

from __future__ import annotations

import math

import pytest

from experiments.reward_lab.reinforce import ESTIMATORS, dr_grpo, estimator, grpo, rloo


def close(got: list[float], want: list[float]) -> bool:
    return len(got) == len(want) and all(
        math.isclose(g, w, abs_tol=1e-6) for g, w in zip(got, want, strict=True)
    )


def test_one_success_in_four() -> None:
    rewards = [1.0, 0.0, 0.0, 0.0]  # mean 0.25, population std sqrt(0.1875) = 0.4330127
    assert close(rloo(rewards), [1.0, -1 / 3, -1 / 3, -1 / 3])
    assert close(dr_grpo(rewards), [0.75, -0.25, -0.25, -0.25])
    assert close(
        grpo(rewards), [0.75 / 0.4330137, -0.25 / 0.4330137, -0.25 / 0.4330137, -0.25 / 0.4330137]
    )


def test_all_equal_group_gets_zero_from_every_estimator() -> None:
    for name, fn in ESTIMATORS.items():
        assert fn([0.3] * 8) == pytest.approx([0.0] * 8, abs=1e-9), name
        assert fn([0.0] * 8) == [0.0] * 8, name


def test_all_fail_group_differing_only_by_tool_cost() -> None:
    """λ = 0.01 per call, 10/12/8/10 calls, no success: GRPO blows 0.02 up to ±1.41."""
    rewards = [-0.10, -0.12, -0.08, -0.10]
    assert close(dr_grpo(rewards), [0.0, -0.02, 0.02, 0.0])
    assert close(rloo(rewards), [0.0, -0.12 + 0.28 / 3, -0.08 + 0.32 / 3, 0.0])
    # population std = sqrt((0 + 0.0004 + 0.0004 + 0) / 4) = 0.0141421
    s = math.sqrt(0.0002) + 1e-6
    assert close(grpo(rewards), [0.0, -0.02 / s, 0.02 / s, 0.0])
    assert abs(grpo(rewards)[2]) > 1.4


def test_rloo_is_the_scaled_mean_baseline() -> None:
    rewards = [0.9, 0.1, 0.4, 0.2, 0.7]
    n = len(rewards)
    assert close(rloo(rewards), [a * n / (n - 1) for a in dr_grpo(rewards)])


def test_degenerate_groups() -> None:
    for fn in ESTIMATORS.values():
        assert fn([]) == []
        assert fn([0.7]) == [0.0]


def test_unknown_estimator_is_a_clear_error() -> None:
    assert estimator("grpo") is grpo
    with pytest.raises(ValueError, match="unknown estimator 'ppo'"):
        estimator("ppo")
