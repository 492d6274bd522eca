"""What a training step records about exploration: each rollout's tool-call sequence, by group.

A sequence is the tool names a rollout called, in order (arguments ignored: the strategy, not
its ids), kept as a 12-hex digest. A group is the rollouts of one scenario in one step. TRL's
metrics.jsonl rows get `group_tool_sequences` (the digests, grouped) and
`tool_sequence_diversity`; ART's history rows get `data/tool_sequence_diversity` (a row holds
numbers only). Diversity, its mean and the collapse warning are the report's
(`eval.report.diversity`), so training and report share one definition.
"""

from __future__ import annotations

import hashlib
import statistics
from collections.abc import Iterable, Sequence
from typing import Any

from eval.report.diversity import ART_KEY, TRL_KEY, group_diversity


def sequence_digest(names: Sequence[str]) -> str:
    return hashlib.sha256("\n".join(names).encode("utf-8")).hexdigest()[:12]


def mean_diversity(groups: Sequence[Sequence[str]]) -> float | None:
    """The mean over groups of two or more rollouts (a lone rollout has nothing to differ from)."""
    values = [group_diversity(group) for group in groups if len(group) > 1]
    return round(statistics.fmean(values), 6) if values else None


def trl_fields(episodes: Iterable[tuple[str, str]]) -> dict[str, Any]:
    """metrics.jsonl fields from (scenario_id, digest) per episode, groups in first-seen order."""
    groups: dict[str, list[str]] = {}
    for scenario_id, digest in episodes:
        groups.setdefault(scenario_id, []).append(digest)
    listed = list(groups.values())
    return {TRL_KEY: listed, "tool_sequence_diversity": mean_diversity(listed)}


def called_tools(messages_and_choices: Iterable[Any]) -> list[str]:
    """The tool names of a trajectory's assistant turns in order (openai Choices or dicts)."""
    names: list[str] = []
    for item in messages_and_choices:
        message = getattr(item, "message", None)
        if message is not None:
            names += [call.function.name for call in message.tool_calls or []]
        elif isinstance(item, dict) and item.get("role") == "assistant":
            for call in item.get("tool_calls") or []:
                function = call.get("function") or call
                names.append(str(function.get("name")))
    return names


def art_metrics(groups: Iterable[Any]) -> dict[str, float]:
    """`data/tool_sequence_diversity` of ART trajectory groups (absent when no group has two)."""
    digests = [
        [sequence_digest(called_tools(t.messages_and_choices)) for t in group.trajectories]
        for group in groups
    ]
    value = mean_diversity(digests)
    return {} if value is None else {ART_KEY: value}
