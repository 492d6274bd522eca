"""Scripted players for the door tests, and what the rollout gives them to compare with.

A player is one of LedgerGym's program policies (`agent.program_policy`): the reference solution,
or the reference with its credit notes left out (a wrong action: shaped and binary rewards part).
`program_responder` lets them answer through the scripted OpenAI server, finding the scenario by
its complaint; `rollout_reward` is the same player through `agent.rollout.run_episode`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Generator
from functools import cache
from typing import Any

from agent.program_policy import ProgramPolicy, reference_policy
from agent.rollout import RolloutConfig, run_episode
from env.generation.generator import generate
from env.generation.splits import split_seeds
from env.scenario import Scenario, ToolCall, reveal_truth
from rewards.reward import RewardBreakdown, RewardConfig, Variant
from tests.support.scripted_turns import Responder, tool_call

Chooser = Callable[[Scenario], ProgramPolicy]


def eval_scenarios(limit: int | None = None) -> list[Scenario]:
    return [generate("eval", seed) for seed in split_seeds("eval", limit)]


def uncredited_program(scenario: Scenario) -> Generator[ToolCall, str, None]:
    for step in reveal_truth(scenario).reference:
        if step.name != "draft_credit_note":
            yield step


def uncredited_policy() -> ProgramPolicy:
    """Investigates and reports like the reference, but never drafts the credit notes."""
    return ProgramPolicy("uncredited", uncredited_program)


def reference_for_all(scenario: Scenario) -> ProgramPolicy:
    return reference_policy()


def alternate(scenario: Scenario) -> ProgramPolicy:
    """The reference on even seeds, the uncredited reference on odd ones."""
    return reference_policy() if scenario.seed % 2 == 0 else uncredited_policy()


@cache
def _by_complaint() -> dict[str, Scenario]:
    return {scenario.complaint: scenario for scenario in eval_scenarios()}


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content or [])


def program_responder(choose: Chooser) -> Responder:
    """Answers each request as `choose(scenario)` would, the scenario read off the complaint."""

    def respond(body: dict[str, Any]) -> dict[str, Any]:
        messages = body["messages"]
        complaint = next(_text(m["content"]) for m in messages if m["role"] == "user")
        scenario = _by_complaint()[complaint]
        reply = asyncio.run(choose(scenario).respond(messages, body.get("tools") or [], scenario))
        message = reply.choice.message
        calls = [
            tool_call(call.function.name, call.function.arguments)
            for call in message.tool_calls or []
            if call.type == "function"
        ]
        return {"content": message.content, "tool_calls": calls}

    return respond


def rollout_reward(policy: ProgramPolicy, scenario: Scenario, variant: Variant) -> RewardBreakdown:
    """The player through `agent.rollout.run_episode`, scored in `variant`."""
    config = RolloutConfig(reward=RewardConfig(variant=variant))
    return asyncio.run(run_episode(policy, scenario, config)).reward
