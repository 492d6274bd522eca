"""One training run of the recipe experiment: gather groups, select, advantages, optimise, log.

The lab's `reinforce.train` with the three knobs issue 37 turns: how many groups of what size,
which of the gathered groups a step trains on (`selection`), and which optimiser turns the
advantages into a step (`optimisers`: ART's per-trajectory clipped AdamW or one batch step).
Every step logs what it gathered, kept and dropped, the groups that carried a gradient, the
rollouts it spent, and the parameter movement split by tied and outcome-mixed groups.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from env.scenario import Scenario
from experiments.reward_lab.episodes import Episode, RewardSpec, sample_group
from experiments.reward_lab.moves import Move
from experiments.reward_lab.optimisers import ART_MAX_GRAD_NORM, Movement, Row, make_optimiser
from experiments.reward_lab.reinforce import estimator
from experiments.reward_lab.selection import has_spread, select
from experiments.reward_lab.softmax_policy import SoftmaxPolicy


@dataclass(frozen=True)
class Arm:
    """One arm of a comparison: everything about the run except the seed and its length."""

    name: str
    reward: RewardSpec
    estimator: str = "grpo"  # "grpo" = scale_rewards true, "dr_grpo" = false
    optimiser: str = "art"
    groups: int = 8  # groups trained per step
    group_size: int = 8
    gather: int = 0  # groups gathered per step; more than `groups` turns on dynamic sampling
    drop_tied: bool = False  # the outcome-tied filter
    init: str = "uniform"  # the start: "uniform" or a cold start's name
    max_grad_norm: float = ART_MAX_GRAD_NORM  # ART's clip (inf: none); the batch step has none

    @property
    def gathered(self) -> int:
        return max(self.gather, self.groups)

    @property
    def dynamic(self) -> bool:
        return self.gather > self.groups


@dataclass(frozen=True)
class StepRecord:
    gathered: int
    with_spread: int
    kept: int
    dropped: int
    carrying: int  # kept groups with a nonzero advantage somewhere: they move the policy
    rollouts: int
    updates: int  # optimiser steps
    grounded: float  # mean over the gathered rollouts
    tool_calls: float


@dataclass
class ArmRun:
    arm: Arm
    seed: int
    policy: SoftmaxPolicy
    steps: list[StepRecord] = field(default_factory=list)
    movement: Movement = field(default_factory=Movement)

    @property
    def rollouts(self) -> int:
        return sum(s.rollouts for s in self.steps)

    def per_step(self, name: str) -> float:
        return sum(getattr(s, name) for s in self.steps) / max(len(self.steps), 1)

    def spread_share(self) -> float:
        return sum(s.with_spread for s in self.steps) / max(sum(s.gathered for s in self.steps), 1)


def _rows(group: Sequence[Episode], arm: Arm) -> list[Row]:
    advantages = estimator(arm.estimator)([e.reward for e in group])
    tied = not has_spread(group)
    return [Row(e.decisions, a, tied) for e, a in zip(group, advantages, strict=True)]


def train_arm(
    arm: Arm,
    moves: Sequence[Move],
    pool: Sequence[Scenario],
    start: SoftmaxPolicy,
    *,
    steps: int,
    lr: float,
    seed: int,
) -> ArmRun:
    """Trains a copy of `start`; the seed fixes the scenario order and the samples."""
    run = ArmRun(arm, seed, start.copy())
    optimiser = make_optimiser(arm.optimiser, lr, seed, arm.max_grad_norm)
    order = np.random.default_rng([seed, 0]).permutation(len(pool))
    drawn = 0
    for step in range(steps):
        rng = np.random.default_rng([seed, 1, step])
        groups = []
        for i in range(arm.gathered):
            scenario = pool[int(order[drawn % len(pool)])]
            drawn += 1
            tag = f"recipe-{seed}-{step}-{i}"
            groups.append(
                sample_group(run.policy, scenario, moves, arm.reward, rng, arm.group_size, tag)
            )
        chosen = select(groups, arm.groups, dynamic=arm.dynamic, drop_tied=arm.drop_tied)
        rows = [_rows(groups[i], arm) for i in chosen.kept]
        moved = optimiser.update(run.policy, rows, arm.groups * arm.group_size)
        run.movement.add(moved)
        played = [e for g in groups for e in g]
        run.steps.append(
            StepRecord(
                gathered=chosen.gathered,
                with_spread=chosen.with_spread,
                kept=len(chosen.kept),
                dropped=chosen.dropped,
                carrying=sum(any(r.advantage != 0.0 for r in g) for g in rows),
                rollouts=len(played),
                updates=moved.updates,
                grounded=sum(e.score.grounded for e in played) / len(played),
                tool_calls=sum(e.tool_calls for e in played) / len(played),
            )
        )
    return run
