"""Dynamic sampling and the outcome-tied filter pick groups by their outcome, never by the tool
cost; the recipe loop logs what it gathered, kept and dropped and spends what it gathered."""

from __future__ import annotations

import numpy as np

from env.generation.generator import generate
from env.generation.splits import split_seeds
from experiments.reward_lab.episodes import Episode, RewardSpec, Score
from experiments.reward_lab.moves import catalogue
from experiments.reward_lab.recipe_loop import Arm, train_arm
from experiments.reward_lab.selection import has_spread, outcome, select
from experiments.reward_lab.softmax_policy import SoftmaxPolicy


def episode(grounded: bool, calls: int, lam: float = 0.01) -> Episode:
    """A scored episode as the reward would score it under the binary variant with λ."""
    cost = -lam * calls
    score = Score("no_error", float(grounded) + cost, grounded, grounded, False, False,
                  {"tool_cost": cost})  # fmt: skip
    return Episode("s", (), (), score, calls, True, 0.0, 0)


def group(*wins: bool, calls: int = 10) -> list[Episode]:
    return [episode(w, calls + i) for i, w in enumerate(wins)]


def test_the_outcome_leaves_the_tool_cost_out() -> None:
    tied = [episode(True, 5), episode(True, 15)]  # rewards 0.95 and 0.85
    assert tied[0].reward != tied[1].reward
    assert not has_spread(tied) and not has_spread(tied, "untaxed")
    assert outcome(tied[0], "untaxed") == outcome(tied[1], "untaxed") == 1.0
    assert has_spread([episode(True, 5), episode(False, 5)])


def test_dynamic_sampling_keeps_the_first_groups_with_spread() -> None:
    spread = [False, True, True, False, True, True, False, True, True, True, True, False]
    groups = [group(True, False) if s else group(False, False) for s in spread]
    chosen = select(groups, 4, dynamic=True, drop_tied=False)
    assert chosen.kept == (1, 2, 4, 5)
    assert (chosen.gathered, chosen.with_spread, chosen.dropped) == (12, 8, 8)


def test_dynamic_sampling_trains_on_fewer_when_too_few_groups_have_spread() -> None:
    groups = [group(False, False), group(True, True), group(True, False)]
    chosen = select(groups, 2, dynamic=True, drop_tied=False)
    assert chosen.kept == (2,) and chosen.dropped == 2


def test_the_filter_drops_only_outcome_tied_groups() -> None:
    groups = [group(True, True), group(True, False), group(False, False), group(False, True)]
    assert select(groups, 4, dynamic=False, drop_tied=True).kept == (1, 3)
    assert select(groups, 4, dynamic=False, drop_tied=False).kept == (0, 1, 2, 3)
    assert select(groups, 2, dynamic=False, drop_tied=False).kept == (0, 1)


def test_the_loop_spends_what_it_gathers_and_trains_on_what_it_keeps() -> None:
    moves = catalogue()
    pool = [generate("train", s) for s in split_seeds("train", 6)]
    start = SoftmaxPolicy([m.name for m in moves])
    start.theta = np.random.default_rng(4).normal(0, 1.0, start.theta.shape)
    arm = Arm("dyn", RewardSpec("binary", 0.01), "dr_grpo", groups=2, group_size=4, gather=3)
    run = train_arm(arm, moves, pool, start, steps=2, lr=0.01, seed=0)
    assert run.rollouts == 2 * 3 * 4
    for step in run.steps:
        assert step.gathered == 3 and step.kept + step.dropped == 3
        assert step.kept == min(step.with_spread, 2) and step.carrying <= step.kept
    assert run.movement.tied == 0.0  # dynamic sampling trains on groups with spread only
    again = train_arm(arm, moves, pool, start, steps=2, lr=0.01, seed=0)
    assert np.array_equal(run.policy.theta, again.policy.theta) and run.steps == again.steps
    assert not np.array_equal(run.policy.theta, start.theta) or run.movement.updates == 0


def test_without_the_filter_a_tool_cost_moves_the_policy_through_tied_groups() -> None:
    moves = catalogue()
    pool = [generate("train", s) for s in split_seeds("train", 4)]
    start = SoftmaxPolicy([m.name for m in moves])  # ~2% success: nearly every group all fails
    kept = Arm("keep", RewardSpec("binary", 0.02), "dr_grpo", groups=2, group_size=4)
    dropped = Arm("drop", RewardSpec("binary", 0.02), "dr_grpo", groups=2, group_size=4,
                  drop_tied=True)  # fmt: skip
    with_tied = train_arm(kept, moves, pool, start, steps=2, lr=0.01, seed=1)
    filtered = train_arm(dropped, moves, pool, start, steps=2, lr=0.01, seed=1)
    assert with_tied.movement.tied > 0
    assert filtered.movement.tied == 0.0
