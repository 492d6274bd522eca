"""One lab episode: moves chosen one at a time, played on a fresh `LedgerEnv`, scored by the
real reward.

The chooser sees a `Desk` only through `observe` (public); the truth enters here, after the
episode is over, in `score`, which calls `rewards.reward.compute_reward` on the
`env.episode.EpisodeRecord` exactly as `agent.rollout.run_episode` does (without the chat
transcript, which moves do not produce). Research with its own fast loop: it plays moves, not
chat turns, and never goes through `eval.run.evaluate`, the product's one way to play and grade.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from env.episode import EpisodeRecord, record_episode
from env.ledger_env import DEFAULT_TOOL_BUDGET, LedgerEnv
from env.scenario import Scenario, reveal_truth
from experiments.reward_lab.desk import Desk
from experiments.reward_lab.moves import Move, available, play_move
from experiments.reward_lab.softmax_policy import Decision, Observation, SoftmaxPolicy, observe
from rewards.reward import RewardConfig, compute_reward

MAX_DECISIONS = 16  # moves per episode; reaching it ends the episode like a spent turn budget

Chooser = Callable[[Observation, list[bool]], Decision]


@dataclass(frozen=True)
class RewardSpec:
    """A reward variant, shaped or binary; `compute_reward` charges λ per call in both."""

    variant: Literal["shaped", "binary"]
    lam: float = 0.0

    @property
    def label(self) -> str:
        return f"{self.variant} λ={self.lam:g}"


@dataclass(frozen=True)
class Score:
    label: str  # the true root cause, for the report only (the policy never sees a Score)
    reward: float
    success: bool  # the reward's eval-success flag
    grounded: bool  # the binary reward's 1: success with a traceable, non-empty chain
    false_reversal: bool
    hallucinated: bool
    terms: dict[str, float]


def score(scenario: Scenario, record: EpisodeRecord, spec: RewardSpec) -> Score:
    """The real reward, λ included: both variants of `compute_reward` charge it per call
    (binary: 1 - λ x calls for a grounded success, -λ x calls otherwise)."""
    truth = reveal_truth(scenario)
    shaped = compute_reward(truth, record, RewardConfig(variant="shaped", tool_call_cost=spec.lam))
    grounded = getattr(shaped, "grounded", None)  # newer breakdowns carry the binary verdict
    if not isinstance(grounded, bool):  # the binary reward is 1 only for an eval success
        grounded = shaped.success and (
            compute_reward(truth, record, RewardConfig(variant="binary")).total >= 1.0
        )
    if spec.variant == "shaped":
        reward = shaped.total
    else:
        binary = RewardConfig(variant="binary", tool_call_cost=spec.lam)
        reward = compute_reward(truth, record, binary).total
    return Score(
        label=truth.label,
        reward=reward,
        success=shaped.success,
        grounded=grounded,
        false_reversal=shaped.false_reversal,
        hallucinated=shaped.hallucinated_numbers,
        terms=shaped.terms,
    )


@dataclass(frozen=True)
class Episode:
    scenario_id: str
    moves: tuple[str, ...]
    decisions: tuple[Decision, ...]
    score: Score
    tool_calls: int
    submitted: bool
    hack_mass: float  # mean probability the policy put on hack moves at its decisions
    truth_touches: int

    @property
    def reward(self) -> float:
        return self.score.reward


def run_moves(
    scenario: Scenario,
    moves: Sequence[Move],
    choose: Chooser,
    episode_id: str,
    *,
    tool_budget: int = DEFAULT_TOOL_BUDGET,
) -> tuple[EpisodeRecord, Desk, list[Decision]]:
    """Plays one episode to its end; the record is what the reward and grader read."""
    env = LedgerEnv(scenario, tool_budget=tool_budget, episode_id=episode_id)
    desk = Desk.open(env, scenario)
    decisions: list[Decision] = []
    try:
        while not desk.over and len(decisions) < MAX_DECISIONS:
            decision = choose(observe(desk), available(desk, moves))
            decisions.append(decision)
            play_move(desk, moves[decision.action])
        env.truncate()  # out of decisions: ends like a spent turn budget (no-op once submitted)
        record = record_episode(env)
    finally:
        env.close()
    return record, desk, decisions


def play(
    scenario: Scenario,
    moves: Sequence[Move],
    choose: Chooser,
    spec: RewardSpec,
    episode_id: str,
    *,
    tool_budget: int = DEFAULT_TOOL_BUDGET,
) -> Episode:
    record, desk, decisions = run_moves(
        scenario, moves, choose, episode_id, tool_budget=tool_budget
    )
    hack = np.array([m.kind == "hack" for m in moves])
    masses = [float(d.probs[hack].sum()) for d in decisions if d.probs.size]
    return Episode(
        scenario_id=scenario.scenario_id,
        moves=tuple(desk.moves),
        decisions=tuple(decisions),
        score=score(scenario, record, spec),
        tool_calls=record.tool_calls,
        submitted=record.submitted,
        hack_mass=sum(masses) / len(masses) if masses else 0.0,
        truth_touches=desk.truth_touches,
    )


def policy_chooser(policy: SoftmaxPolicy, rng: np.random.Generator, greedy: bool) -> Chooser:
    def choose(obs: Observation, mask: list[bool]) -> Decision:
        return policy.decide(obs, mask, rng, greedy)

    return choose


def sample_group(
    policy: SoftmaxPolicy,
    scenario: Scenario,
    moves: Sequence[Move],
    spec: RewardSpec,
    rng: np.random.Generator,
    size: int,
    tag: str,
    greedy: bool = False,
) -> list[Episode]:
    choose = policy_chooser(policy, rng, greedy)
    return [play(scenario, moves, choose, spec, f"{tag}-{i}") for i in range(size)]
