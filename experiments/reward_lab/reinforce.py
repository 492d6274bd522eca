"""REINFORCE with a group baseline over lab episodes, and the three baselines it can use.

Each step samples `group_size` episodes on each of `scenarios_per_step` train scenarios,
turns each group's rewards into advantages with the chosen estimator, and moves the policy
along sum(advantage * grad log pi(move)) over every decision of every episode, divided by the
number of episodes (plain SGD, one update per batch: on-policy). All three estimators share
the learning rate, so a run shows what swapping the estimator alone does. On the same groups
the step also records what the *other* estimators would have given, so the comparison of
all-fail groups is on identical data.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from env.scenario import Scenario
from experiments.reward_lab.episodes import Episode, RewardSpec, sample_group
from experiments.reward_lab.moves import Move
from experiments.reward_lab.softmax_policy import SoftmaxPolicy

# The estimators: pure functions of one group's rewards.
# - RLOO: each sample against the mean of the *other* samples.
# - GRPO: against the group mean, divided by the group's standard deviation (population std
#   plus 1e-6, as ART 0.5.18 computes it, `art/preprocessing/tokenize.py`).
# - Dr. GRPO: against the group mean, not divided (Liu et al., "Understanding R1-Zero-Like
#   Training"): the step size keeps the reward's scale.
# A group whose rewards all tie gets zero advantage from all three. GRPO's division is what
# turns a tie broken only by tiny tool-cost differences into advantages of size ~1.
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


@dataclass(frozen=True)
class TrainConfig:
    reward: RewardSpec
    estimator: str = "grpo"
    steps: int = 40
    scenarios_per_step: int = 8
    group_size: int = 8
    lr: float = 0.5
    seed: int = 0


_KINDS: tuple[str, ...] = ("all_fail", "all_succeed", "mixed")


@dataclass
class GroupTally:
    """How one estimator treated the groups of a run, split by outcome of the group."""

    groups: dict[str, int] = field(default_factory=lambda: dict.fromkeys(_KINDS, 0))
    abs_advantage: dict[str, float] = field(default_factory=lambda: dict.fromkeys(_KINDS, 0.0))
    # pooled (advantage, tool calls) from groups whose outcomes tie (all fail or all succeed):
    # there only the tool cost separates the samples; does the estimator push to fewer calls?
    tied_pairs: list[tuple[float, int]] = field(default_factory=list)

    def mean_abs(self, kind: str) -> float:
        n = self.groups[kind]
        return self.abs_advantage[kind] / n if n else 0.0

    def tied_share(self) -> float:
        """Share of the total |advantage| that went to groups whose outcomes tie."""
        total = sum(self.abs_advantage.values())
        return 1 - self.abs_advantage["mixed"] / total if total else 0.0

    def calls_correlation(self) -> float:
        return _pearson(self.tied_pairs)


@dataclass(frozen=True)
class StepLog:
    step: int
    reward: float
    grounded: float
    tool_calls: float
    hack_mass: float
    all_fail: int
    all_succeed: int
    groups: int


@dataclass
class TrainResult:
    config: TrainConfig
    policy: SoftmaxPolicy
    steps: list[StepLog] = field(default_factory=list)
    tallies: dict[str, GroupTally] = field(default_factory=dict)  # per estimator, same groups
    checkpoints: dict[int, SoftmaxPolicy] = field(default_factory=dict)
    episodes: int = 0
    truth_touches: int = 0


def group_kind(episodes: Sequence[Episode]) -> str:
    wins = sum(e.score.grounded for e in episodes)
    return "all_fail" if wins == 0 else "all_succeed" if wins == len(episodes) else "mixed"


def _pearson(pairs: Sequence[tuple[float, int]]) -> float:
    if len(pairs) < 2:
        return 0.0
    xs = [float(a) for a, _ in pairs]
    ys = [float(c) for _, c in pairs]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    sxy = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True))
    sxx = sum((x - mx) ** 2 for x in xs)
    syy = sum((y - my) ** 2 for y in ys)
    return sxy / math.sqrt(sxx * syy) if sxx > 1e-18 and syy > 0 else 0.0


def _tally(tallies: dict[str, GroupTally], group: Sequence[Episode]) -> None:
    kind = group_kind(group)
    rewards = [e.reward for e in group]
    for name, fn in ESTIMATORS.items():
        advantages = fn(rewards)
        tally = tallies[name]
        tally.groups[kind] += 1
        tally.abs_advantage[kind] += sum(abs(a) for a in advantages) / len(advantages)
        if kind != "mixed":
            tally.tied_pairs += [(a, e.tool_calls) for a, e in zip(advantages, group, strict=True)]


def train(
    config: TrainConfig,
    moves: Sequence[Move],
    pool: Sequence[Scenario],
    *,
    policy: SoftmaxPolicy | None = None,
    keep: Sequence[int] = (),
) -> TrainResult:
    """Trains from `policy` (uniform if None); `keep` names steps whose policy is saved."""
    policy = policy.copy() if policy is not None else SoftmaxPolicy([m.name for m in moves])
    advantage = estimator(config.estimator)
    result = TrainResult(config, policy, tallies={n: GroupTally() for n in ESTIMATORS})
    order = np.random.default_rng([config.seed, 0]).permutation(len(pool))
    for step in range(config.steps):
        if step in keep:
            result.checkpoints[step] = policy.copy()
        rng = np.random.default_rng([config.seed, 1, step])
        batch: list[tuple[Episode, float]] = []
        kinds: list[str] = []
        for i in range(config.scenarios_per_step):
            scenario = pool[int(order[(step * config.scenarios_per_step + i) % len(pool)])]
            tag = f"lab-{config.seed}-{step}-{i}"
            group = sample_group(
                policy, scenario, moves, config.reward, rng, config.group_size, tag
            )
            _tally(result.tallies, group)
            kinds.append(group_kind(group))
            batch += zip(group, advantage([e.reward for e in group]), strict=True)
        scale = 1.0 / len(batch)
        policy.step([(d, a * scale) for e, a in batch for d in e.decisions], config.lr)
        result.steps.append(_log(step, [e for e, _ in batch], kinds))
        result.episodes += len(batch)
        result.truth_touches += sum(e.truth_touches for e, _ in batch)
    if config.steps in keep:
        result.checkpoints[config.steps] = policy.copy()
    return result


def _log(step: int, episodes: Sequence[Episode], kinds: Sequence[str]) -> StepLog:
    n = len(episodes)
    return StepLog(
        step=step,
        reward=sum(e.reward for e in episodes) / n,
        grounded=sum(e.score.grounded for e in episodes) / n,
        tool_calls=sum(e.tool_calls for e in episodes) / n,
        hack_mass=sum(e.hack_mass for e in episodes) / n,
        all_fail=kinds.count("all_fail"),
        all_succeed=kinds.count("all_succeed"),
        groups=len(kinds),
    )
