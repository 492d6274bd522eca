"""The recipe's optimisers: ART 0.5.18's per-trajectory clipped AdamW (one step per trajectory
with a nonzero advantage, global-norm clip, 1/length weights normalised over the batch, state
kept across GRPO steps, decoupled weight decay) and the lab's one step per batch."""

from __future__ import annotations

import math

import numpy as np
import pytest

from env.generation.generator import generate
from env.generation.splits import split_seeds
from experiments.reward_lab.episodes import RewardSpec, sample_group
from experiments.reward_lab.moves import catalogue
from experiments.reward_lab.optimisers import (
    ART_DECAY_PER_STEP,
    ArtAdam,
    BatchStep,
    Row,
    log_prob_gradient,
    make_optimiser,
)
from experiments.reward_lab.softmax_policy import SoftmaxPolicy

MOVES = catalogue()


@pytest.fixture(scope="module")
def group():
    """Eight real episodes of a random policy on one train scenario."""
    policy = SoftmaxPolicy([m.name for m in MOVES])
    policy.theta = np.random.default_rng(1).normal(0, 0.5, policy.theta.shape)
    scenario = generate("train", split_seeds("train", 1)[0])
    rng = np.random.default_rng(2)
    return policy, sample_group(policy, scenario, MOVES, RewardSpec("binary"), rng, 8, "opt")


def rows(episodes, advantages, tied=False) -> list[Row]:
    return [Row(e.decisions, a, tied) for e, a in zip(episodes, advantages, strict=True)]


def test_the_log_prob_gradient_matches_finite_differences(group) -> None:
    policy, episodes = group
    decisions = episodes[0].decisions
    grad = log_prob_gradient(policy, decisions)
    rng = np.random.default_rng(0)
    for _ in range(5):
        direction = rng.normal(size=policy.theta.shape)
        h = 1e-5
        plus, minus = policy.copy(), policy.copy()
        plus.theta += h * direction
        minus.theta -= h * direction
        numeric = (
            sum(plus.log_prob(d) for d in decisions) - sum(minus.log_prob(d) for d in decisions)
        ) / (2 * h)
        assert float((grad * direction).sum()) == pytest.approx(numeric, rel=1e-4, abs=1e-6)


def test_one_adam_step_per_trajectory_with_a_nonzero_advantage(group) -> None:
    policy, episodes = group
    advantages = [1.0, -1.0, 0.0, 0.5, 0.0, -0.5, 0.25, 0.0]
    optimiser = ArtAdam(0.01, seed=0)
    moved = optimiser.update(policy.copy(), [rows(episodes, advantages)], 8)
    assert moved.updates == 5 == optimiser.t  # ART drops the three zero-advantage rows
    assert len(moved.grad_norms) == 5


def test_the_adam_state_carries_over_from_one_grpo_step_to_the_next(group) -> None:
    policy, episodes = group
    optimiser = ArtAdam(0.01, seed=0)
    target = policy.copy()
    optimiser.update(target, [rows(episodes[:4], [1.0, -1.0, 0.5, -0.5])], 4)
    second_moment = optimiser.v.copy()
    optimiser.update(target, [rows(episodes[4:], [1.0, -1.0, 0.5, -0.5])], 4)
    assert optimiser.t == 8
    assert not np.array_equal(optimiser.v, second_moment) and (optimiser.v > 0).any()


def test_each_step_is_clipped_to_global_norm_0_1() -> None:
    policy = SoftmaxPolicy(["a", "b"])
    optimiser = ArtAdam(0.01)
    big = np.zeros_like(policy.theta)
    big[0, 0], big[1, 1] = 30.0, 40.0  # norm 50
    assert optimiser.step(policy, big) == pytest.approx(50.0)
    clipped = optimiser.m / (1 - optimiser.betas[0])  # the gradient Adam saw
    assert float(np.sqrt((clipped**2).sum())) == pytest.approx(0.1, rel=1e-5)
    small = np.zeros_like(policy.theta)
    small[0, 0] = 0.05
    fresh = ArtAdam(0.01)
    fresh.step(SoftmaxPolicy(["a", "b"]), small)
    assert fresh.m[0, 0] == pytest.approx((1 - fresh.betas[0]) * 0.05)  # under the clip: as is


def test_without_a_clip_the_gradient_reaches_adam_unchanged() -> None:
    policy = SoftmaxPolicy(["a", "b"])
    optimiser = ArtAdam(0.01, max_grad_norm=math.inf)
    big = np.full_like(policy.theta, 3.0)
    optimiser.step(policy, big)
    assert np.allclose(optimiser.m, (1 - optimiser.betas[0]) * big)


def test_row_weights_are_one_over_length_normalised_like_art() -> None:
    """(A / mean|A|) x (n_mean / n) x 1/n on the row's summed log-probs."""
    short = Row(tuple(range(2)), 1.0, False)  # type: ignore[arg-type]
    long = Row(tuple(range(4)), -1.0, False)  # type: ignore[arg-type]
    assert ArtAdam.row_weights([short, long]) == pytest.approx([0.75, -0.1875])
    scaled = [Row(r.decisions, 7 * r.advantage, r.tied) for r in (short, long)]
    assert ArtAdam.row_weights(scaled) == pytest.approx([0.75, -0.1875])  # the batch's scale goes


def test_weight_decay_shrinks_by_arts_per_step_fraction() -> None:
    policy = SoftmaxPolicy(["a", "b"])
    policy.theta[:] = 1.0
    optimiser = ArtAdam(0.003)
    assert optimiser.lr * optimiser.weight_decay == pytest.approx(ART_DECAY_PER_STEP)
    optimiser.step(policy, np.zeros_like(policy.theta))
    assert np.allclose(policy.theta, 1.0 - ART_DECAY_PER_STEP)


def test_one_batch_step_is_the_labs_update(group) -> None:
    policy, episodes = group
    advantages = [0.5, -0.25, 0.0, 0.75, -0.5, -0.5, 0.25, -0.25]
    mine, labs = policy.copy(), policy.copy()
    moved = BatchStep(0.8).update(mine, [rows(episodes, advantages)], 8)
    pairs = zip(episodes, advantages, strict=True)
    labs.step([(d, a / 8) for e, a in pairs for d in e.decisions], 0.8)
    assert np.allclose(mine.theta, labs.theta)
    assert moved.updates == 1
    assert moved.mixed == pytest.approx(float(np.abs(mine.theta - policy.theta).sum()))


def test_movement_is_split_by_the_outcome_of_the_group_behind_it(group) -> None:
    policy, episodes = group
    tied = rows(episodes[:4], [0.1, -0.1, 0.05, -0.05], tied=True)
    mixed = rows(episodes[4:], [1.0, -1.0, 0.5, -0.5])
    for name in ("art", "batch"):
        moved = make_optimiser(name, 0.01, 0).update(policy.copy(), [tied, mixed], 8)
        assert moved.tied > 0 and moved.mixed > 0
        only = make_optimiser(name, 0.01, 0).update(policy.copy(), [tied], 8)
        assert only.mixed == 0 and only.tied_share() == 1.0


def test_an_unknown_optimiser_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="unknown optimiser 'sgd'"):
        make_optimiser("sgd", 0.1, 0)
