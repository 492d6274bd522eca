"""Data for the TRL path: scenario picks, the tokenizer corpus, SFT conversations, GRPO rows.

The tiny model has a 4096-token context and the prompt alone (system + nine tool schemas +
complaint) takes about 2,700 of them, so a full reference investigation does not fit. The
SFT conversation is the reference cut to fit: read calls are dropped, the largest output
first among those whose removal keeps the reference's reward, until the rendering fits.
Credit notes and `submit_findings` always stay; the findings' prose summary is left empty
(the invoice ids and amounts still carry the evidence). Used by `training.trl.runner`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from env.episode import record_episode
from env.generation.generator import generate
from env.ledger_env import LedgerEnv, system_prompt
from env.scenario import Scenario, ToolCall, reveal_truth
from env.tools import READ_TOOLS
from rewards.reward import RewardConfig, compute_reward
from training.data_order import curriculum_seeds
from training.trl.episode_env import trl_tool_schemas

CLOSING_TEXT = "Findings submitted."  # TRL asks for one more turn after the last tool result
CORPUS_COMPLAINTS = 256

# Counts rendered tokens of a conversation; the runner passes the tiny tokenizer's.
TokenCounter = Callable[[list[dict[str, Any]]], int]


@dataclass(frozen=True)
class SftExample:
    scenario_id: str
    messages: list[dict[str, Any]]
    tokens: int
    calls_kept: int
    calls_total: int
    reward: float  # LedgerGym reward of replaying exactly these calls


def initial_prompt(scenario: Scenario, tool_budget: int) -> list[dict[str, str]]:
    return [
        {"role": "system", "content": system_prompt(tool_budget)},
        {"role": "user", "content": scenario.complaint},
    ]


def grpo_rows(scenarios: Sequence[Scenario], tool_budget: int) -> list[dict[str, Any]]:
    """One row per scenario; `LedgerTrlEnv.reset` rebuilds the scenario from split and seed."""
    return [
        {"prompt": initial_prompt(sc, tool_budget), "split": sc.split, "seed": sc.seed}
        for sc in scenarios
    ]


def replay(
    scenario: Scenario, calls: Sequence[ToolCall], tool_budget: int, reward: RewardConfig
) -> tuple[list[dict[str, Any]], float]:
    """The conversation of an agent making exactly these calls, and the reward it earns."""
    env = LedgerEnv(scenario, tool_budget=tool_budget)
    messages: list[dict[str, Any]] = list(initial_prompt(scenario, tool_budget))
    try:
        for call in calls:
            arguments = json.dumps(call.arguments, ensure_ascii=False)
            # arguments stay a JSON string: Arrow would merge every tool's keys into one struct
            function = {"name": call.name, "arguments": arguments}
            messages.append(
                {
                    "role": "assistant",
                    "content": "",
                    "tool_calls": [{"type": "function", "function": function}],
                }
            )
            messages.append(
                {"role": "tool", "name": call.name, "content": env.call(call.name, arguments)}
            )
        messages.append({"role": "assistant", "content": CLOSING_TEXT})
        record = record_episode(env)
    finally:
        env.close()
    return messages, compute_reward(reveal_truth(scenario), record, reward).total


def fitted_reference(
    scenario: Scenario,
    *,
    max_tokens: int,
    count_tokens: TokenCounter,
    tool_budget: int,
    reward: RewardConfig,
) -> SftExample | None:
    """The reference investigation with read calls dropped until it fits `max_tokens`."""
    calls = [_terse(call) for call in reveal_truth(scenario).reference]
    total = len(calls)
    messages, score = replay(scenario, calls, tool_budget, reward)
    while count_tokens(messages) > max_tokens:
        droppable = [i for i, call in enumerate(calls) if call.name in READ_TOOLS]
        if not droppable:
            return None
        trials = []
        for i in droppable:
            kept = calls[:i] + calls[i + 1 :]
            trial_messages, trial_score = replay(scenario, kept, tool_budget, reward)
            output = len(messages[2 + 2 * i + 1]["content"])
            trials.append((trial_score, output, kept, trial_messages))
        score, _, calls, messages = max(trials, key=lambda trial: trial[:2])
    return SftExample(
        scenario.scenario_id, messages, count_tokens(messages), len(calls), total, score
    )


def _terse(call: ToolCall) -> ToolCall:
    """The reference's prose summary is beyond a tiny model; its findings cite ids and amounts."""
    if call.name != "submit_findings":
        return call
    return ToolCall(call.name, {**call.arguments, "summary": ""})


def corpus_lines(train_scenarios: Sequence[Scenario], tool_budget: int) -> Iterator[str]:
    """LedgerGym text for the tiny tokenizer: prompt, tool schemas, references, complaints.

    The system prompt and the schemas open every conversation, so they come once per training
    scenario: weighted like that, BPE merges favour them and the fixed prompt gets shorter.
    """
    schemas = [json.dumps(schema, ensure_ascii=False) for schema in trl_tool_schemas()]
    for scenario in train_scenarios:
        yield system_prompt(tool_budget)
        yield from schemas
        messages, _ = replay(
            scenario, reveal_truth(scenario).reference, tool_budget, RewardConfig()
        )
        for message in messages[2:]:
            yield json.dumps(message, ensure_ascii=False)
    for seed in curriculum_seeds("train", ("L1", "L2", "L3"), CORPUS_COMPLAINTS):
        yield generate("train", seed).complaint
