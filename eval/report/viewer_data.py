"""What the trajectory viewer shows per episode, as JSON embedded in the page.

Shows what the line holds: a log without a transcript still has its grade, reward terms and
(from the generator, when the run's generator hash matches this checkout) its complaint. Long
texts (the system prompt, tool outputs) are stored once in a string table and referenced by
index: the samples of one scenario repeat the same outputs.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from eval.report.episode_view import (
    episode_id,
    field,
    findings,
    grounded,
    outcome,
    reward_verdict,
    transcript,
)
from eval.report.load import EpisodeLine, RunData

INTERN_CHARS = 200  # shorter texts cost less inline than as a reference


@lru_cache(maxsize=1)
def _current_generator() -> str:
    from env.versions import generator_hash

    return generator_hash()


def complaint(run: RunData, line: EpisodeLine, messages: list[dict[str, Any]]) -> str | None:
    """The first user message; for older logs, regenerated when the generator is unchanged."""
    for message in messages:
        if message.get("role") == "user":
            return str(message.get("content") or "")
    if run.config.get("generator") != _current_generator():
        return None  # another generator version: regenerating would show another complaint
    from env.generation.generator import generate

    try:
        return generate(line.split, line.seed).complaint
    except Exception:  # an unknown split or seed: show the episode without it
        return None


class Strings:
    """Long texts stored once for the whole page: the system prompt, and tool outputs that
    repeat across the samples of a scenario (the same calls return the same rows)."""

    def __init__(self) -> None:
        self.table: list[str] = []
        self._index: dict[str, int] = {}

    def ref(self, text: str) -> int:
        if text not in self._index:
            self._index[text] = len(self.table)
            self.table.append(text)
        return self._index[text]


def _messages(messages: list[dict[str, Any]], strings: Strings) -> list[dict[str, Any]]:
    kept = []
    for message in messages:
        content = message.get("content")
        if isinstance(content, str) and (
            message.get("role") == "system" or len(content) >= INTERN_CHARS
        ):
            message = {**message, "content": None, "ref": strings.ref(content)}
        kept.append(message)
    return kept


def episode_payload(
    run_index: int,
    run: RunData,
    line: EpisodeLine,
    flags: list[str],
    strings: Strings,
) -> dict[str, Any]:
    messages = transcript(line)
    return {
        "id": episode_id(run_index, line),
        "run": run.name,
        "scenario_id": line.scenario_id,
        "sample": line.sample,
        "split": line.split,
        "label": line.label,
        "difficulty": line.difficulty,
        "success": line.success,
        "grounded": grounded(line),
        "reward_verdict": reward_verdict(line),
        "outcome": outcome(line),
        "flags": flags,
        "error": line.error,
        "end_reason": field(line, "end_reason"),
        "reward": line.reward_total,
        "terms": line.reward_terms,
        "grade": line.grade,
        "findings": findings(line),
        "complaint": complaint(run, line, messages),
        "transcript": _messages(messages, strings) if messages else None,
        "transcript_truncated": bool(field(line, "transcript_truncated")),
        "stats": {
            "tool_calls": line.tool_calls,
            "tool_errors": line.tool_errors,
            "turns": line.turns,
            "prompt_tokens": line.prompt_tokens,
            "completion_tokens": line.completion_tokens,
            "cost_usd": line.cost_usd,
            "wall_s": line.wall_s,
        },
    }


def viewer_payload(runs: Sequence[RunData], flags: dict[str, list[str]]) -> dict[str, Any]:
    strings = Strings()
    episodes = [
        episode_payload(index, run, line, flags.get(episode_id(index, line), []), strings)
        for index, run in enumerate(runs)
        for line in run.lines
    ]
    return {"episodes": episodes, "strings": strings.table}
