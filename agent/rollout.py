"""The one rollout: drive any policy through a LedgerEnv episode and score it.

call -> parse -> dispatch -> score. Evaluation and both training paths use `run_episode`
(ART's gather through `training.art.trajectories.rollout`). The trajectory (`agent.trajectory`,
no ART here) keeps each `Choice` exactly as the model returned it and every tool message;
metrics are logged beside the reward, never added to it. Each episode says why it ended
(`END_REASONS`); failing infrastructure is handled by `agent.retry` (rules: eval/README.md).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from agent.messages import assistant_message
from agent.policy import ContextLengthExceeded, Policy, PolicyReply, ServerFailure
from agent.retry import RetrySettings, ServerWatch, call_with_retries
from agent.trajectory import Trajectory
from env.episode import EpisodeRecord, record_episode
from env.ledger_env import DEFAULT_TOOL_BUDGET, LedgerEnv
from env.scenario import Scenario, reveal_truth
from env.versions import generator_hash, tool_contract_hash
from rewards.reward import RewardBreakdown, RewardConfig, compute_reward

END_REASONS = (
    "submitted",
    "text_reply",
    "tool_budget",
    "turn_budget",
    "context_overflow",
    "finish_length",
    "server_error",
    "error",
)


@dataclass(frozen=True)
class RolloutConfig:
    tool_budget: int = DEFAULT_TOOL_BUDGET
    max_turns: int = 40
    reward: RewardConfig = field(default_factory=lambda: RewardConfig())
    retry: RetrySettings = field(default_factory=RetrySettings)
    watch: ServerWatch | None = None  # shared by a run's episodes; None: one per episode
    report: Callable[[str], None] | None = None  # progress lines (what is retried and why)


@dataclass
class EpisodeStats:
    turns: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    retries: int = 0
    retry_causes: list[str] = field(default_factory=list)
    finish_reasons: list[str] = field(default_factory=list)
    peak_context_tokens: int = 0
    queue_s: float = 0.0  # failed attempts and backoff pauses
    generation_s: float = 0.0  # requests that returned a turn
    end_reason: str | None = None
    error: str | None = None  # the server's status and message when it ended the episode

    @property
    def ended_by_text(self) -> bool:
        return self.end_reason in ("text_reply", "finish_length")

    @property
    def context_overflow(self) -> bool:
        return self.end_reason == "context_overflow"


@dataclass(frozen=True)
class RolloutResult:
    trajectory: Trajectory
    record: EpisodeRecord
    reward: RewardBreakdown
    stats: EpisodeStats
    wall_s: float
    messages: list[dict[str, Any]] = field(default_factory=list)  # the chat as sent, in order

    @property
    def error(self) -> str | None:
        return self.stats.error


def _metadata(scenario: Scenario, policy: Policy, env: LedgerEnv) -> dict[str, Any]:
    truth = reveal_truth(scenario)  # for logging by the harness; the policy never sees this
    return {
        "scenario_id": scenario.scenario_id,
        "split": scenario.split,
        "seed": scenario.seed,
        "label": truth.label,
        "difficulty": scenario.difficulty,
        "policy": policy.name,
        "episode_id": env.episode_id,
        "tool_contract": tool_contract_hash(),
        "generator": generator_hash(),
    }


def _count(stats: EpisodeStats, reply: PolicyReply) -> None:
    stats.turns += 1
    stats.prompt_tokens += reply.prompt_tokens
    stats.completion_tokens += reply.completion_tokens
    stats.cost_usd += reply.cost_usd
    stats.finish_reasons.append(str(reply.choice.finish_reason or ""))
    context = reply.prompt_tokens + reply.completion_tokens
    stats.peak_context_tokens = max(stats.peak_context_tokens, context)


async def _play(
    policy: Policy,
    scenario: Scenario,
    env: LedgerEnv,
    config: RolloutConfig,
    messages: list[dict[str, Any]],
    trajectory: Trajectory,
    stats: EpisodeStats,
) -> str:
    """Plays turns until the episode ends; returns its end reason."""
    tools = env.tool_specs()
    watch = config.watch or ServerWatch()
    while not env.done:
        if stats.turns >= config.max_turns:
            env.truncate()
            return "turn_budget"
        try:
            reply = await call_with_retries(
                lambda: policy.respond(messages, tools, scenario),
                config.retry,
                watch,
                stats,
                config.report,
                f"{scenario.scenario_id} turn {stats.turns + 1}",
            )
        except ContextLengthExceeded:  # out of context: truncated, like a spent budget
            env.truncate()
            return "context_overflow"
        except ServerFailure as failure:  # the server failed this request repeatedly
            stats.error = str(failure)[:500]
            env.truncate()
            return "server_error"
        _count(stats, reply)
        trajectory.messages_and_choices.append(reply.choice)
        messages.append(assistant_message(reply.choice))
        calls = [c for c in reply.choice.message.tool_calls or [] if c.type == "function"]
        if not calls:  # a text-only reply ends the episode as no submission
            return "finish_length" if reply.choice.finish_reason == "length" else "text_reply"
        for tool_call in calls:
            result = env.call(tool_call.function.name, tool_call.function.arguments)
            tool_message = {"role": "tool", "tool_call_id": tool_call.id, "content": result}
            messages.append(tool_message)
            trajectory.messages_and_choices.append(tool_message)
    return "submitted" if env.submitted else "tool_budget"


async def run_episode(
    policy: Policy, scenario: Scenario, config: RolloutConfig | None = None
) -> RolloutResult:
    config = config or RolloutConfig()
    started = time.perf_counter()
    env = LedgerEnv(scenario, tool_budget=config.tool_budget)
    messages = env.initial_messages()
    trajectory = Trajectory(
        messages_and_choices=list(messages),
        tools=env.tool_specs(),
        metadata=_metadata(scenario, policy, env),
    )
    stats = EpisodeStats()
    try:
        stats.end_reason = await _play(policy, scenario, env, config, messages, trajectory, stats)
        record = record_episode(env)
    finally:
        env.close()
    reward = score_record(scenario, record, config.reward)
    trajectory.reward = reward.total
    trajectory.metrics.update(_metrics(reward, record, stats))
    wall = time.perf_counter() - started
    return RolloutResult(trajectory, record, reward, stats, wall, messages)


def score_record(
    scenario: Scenario, record: EpisodeRecord, reward: RewardConfig | None = None
) -> RewardBreakdown:
    """The training reward of a finished episode: what the rollout gives it, and what
    `eval.regrade` gives a stored one (eval reaches the reward only through here)."""
    return compute_reward(reveal_truth(scenario), record, reward or RewardConfig())


def _metrics(
    reward: RewardBreakdown, record: EpisodeRecord, stats: EpisodeStats
) -> dict[str, float]:
    metrics = reward.as_metrics()
    metrics.update(
        {
            "tool_calls": float(record.tool_calls),
            "tool_errors": float(sum(r.is_error for r in record.tool_log)),
            "turns": float(stats.turns),
            # per-episode totals; not "completion_tokens", which ART's gather overwrites
            "episode_prompt_tokens": float(stats.prompt_tokens),
            "episode_completion_tokens": float(stats.completion_tokens),
            "cost_usd": stats.cost_usd,
            "retries": float(stats.retries),
            "ended_by_text": float(stats.ended_by_text),
            "context_overflow": float(stats.context_overflow),
            "server_error": float(stats.end_reason == "server_error"),
        }
    )
    return metrics


__all__ = [
    "END_REASONS",
    "RetrySettings",
    "RolloutConfig",
    "RolloutResult",
    "ServerWatch",
    "run_episode",
]
