"""The one rollout: drive any policy through a LedgerEnv episode and score it.

call -> parse -> dispatch -> score. Evaluation and training both use `run_episode`; ART's
`gather_trajectory_groups` uses `rollout`, which returns only the `art.Trajectory`. The
trajectory keeps each `Choice` exactly as the model returned it and every tool message;
metrics are logged beside the reward, never added to it.
"""

from __future__ import annotations

import asyncio
import random
import time
from dataclasses import dataclass, field
from typing import Any, cast

from art.types import MessagesAndChoices, Tools

from agent.art_import import art
from agent.messages import assistant_message
from agent.policy import ContextLengthExceeded, Policy, PolicyReply, TransientPolicyError
from env.episode import EpisodeRecord, record_episode
from env.ledger_env import DEFAULT_TOOL_BUDGET, LedgerEnv
from env.scenario import Scenario, reveal_truth
from env.versions import generator_hash, tool_contract_hash
from rewards.reward import RewardBreakdown, RewardConfig, compute_reward


@dataclass(frozen=True)
class RolloutConfig:
    tool_budget: int = DEFAULT_TOOL_BUDGET
    max_turns: int = 40
    max_retries: int = 6
    backoff_s: float = 0.5  # first pause; doubles per retry, with jitter
    backoff_max_s: float = 30.0
    reward: RewardConfig = field(default_factory=lambda: RewardConfig())


@dataclass
class EpisodeStats:
    turns: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    retries: int = 0
    ended_by_text: bool = False
    context_overflow: bool = False


@dataclass(frozen=True)
class RolloutResult:
    trajectory: art.Trajectory
    record: EpisodeRecord
    reward: RewardBreakdown
    stats: EpisodeStats
    wall_s: float


async def _respond(
    policy: Policy,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]],
    scenario: Scenario,
    config: RolloutConfig,
    stats: EpisodeStats,
) -> PolicyReply:
    """Transient API errors are retried with backoff and never count as a turn."""
    for attempt in range(config.max_retries + 1):
        try:
            return await policy.respond(messages, tools, scenario)
        except TransientPolicyError:
            if attempt == config.max_retries:
                raise
            stats.retries += 1
            pause = min(config.backoff_max_s, config.backoff_s * 2**attempt)
            await asyncio.sleep(pause * (0.5 + random.random() / 2))
    raise AssertionError("unreachable")


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


async def run_episode(
    policy: Policy, scenario: Scenario, config: RolloutConfig | None = None
) -> RolloutResult:
    config = config or RolloutConfig()
    started = time.perf_counter()
    env = LedgerEnv(scenario, tool_budget=config.tool_budget)
    tools = env.tool_specs()
    messages = env.initial_messages()
    trajectory = art.Trajectory(
        messages_and_choices=cast(MessagesAndChoices, list(messages)),
        tools=cast(Tools, tools),
        reward=0.0,
        metadata=_metadata(scenario, policy, env),
    )
    stats = EpisodeStats()
    try:
        while not env.done:
            if stats.turns >= config.max_turns:
                env.truncate()
                break
            try:
                reply = await _respond(policy, messages, tools, scenario, config, stats)
            except ContextLengthExceeded:  # out of context: truncated, like a spent budget
                stats.context_overflow = True
                env.truncate()
                break
            stats.turns += 1
            stats.prompt_tokens += reply.prompt_tokens
            stats.completion_tokens += reply.completion_tokens
            stats.cost_usd += reply.cost_usd
            trajectory.messages_and_choices.append(reply.choice)
            messages.append(assistant_message(reply.choice))
            calls = [c for c in reply.choice.message.tool_calls or [] if c.type == "function"]
            if not calls:  # a text-only reply ends the episode as no submission
                stats.ended_by_text = True
                break
            for tool_call in calls:
                result = env.call(tool_call.function.name, tool_call.function.arguments)
                tool_message = {"role": "tool", "tool_call_id": tool_call.id, "content": result}
                messages.append(tool_message)
                trajectory.messages_and_choices.append(tool_message)  # type: ignore[arg-type]
        record = record_episode(env)
    finally:
        env.close()
    reward = compute_reward(reveal_truth(scenario), record, config.reward)
    trajectory.reward = reward.total
    trajectory.metrics.update(_metrics(reward, record, stats))
    return RolloutResult(trajectory, record, reward, stats, time.perf_counter() - started)


def _metrics(
    reward: RewardBreakdown, record: EpisodeRecord, stats: EpisodeStats
) -> dict[str, float]:
    metrics = reward.as_metrics()
    metrics.update(
        {
            "tool_calls": float(record.tool_calls),
            "tool_errors": float(sum(r.is_error for r in record.tool_log)),
            "turns": float(stats.turns),
            "prompt_tokens": float(stats.prompt_tokens),
            "completion_tokens": float(stats.completion_tokens),
            "cost_usd": stats.cost_usd,
            "retries": float(stats.retries),
            "ended_by_text": float(stats.ended_by_text),
            "context_overflow": float(stats.context_overflow),
        }
    )
    return metrics


async def rollout(
    policy: Policy, scenario: Scenario, config: RolloutConfig | None = None
) -> art.Trajectory:
    """For `art.gather_trajectory_groups`: the trajectory alone."""
    return (await run_episode(policy, scenario, config)).trajectory


__all__ = ["RolloutConfig", "RolloutResult", "TransientPolicyError", "rollout", "run_episode"]
