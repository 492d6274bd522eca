"""One episode line as the report reads it: verdicts, findings and tool outputs, old logs included.

Newer logs carry `findings`, `transcript`, `end_reason` and a grade with `grounded_success` and
`number_trace` (see /work/notes/contracts.md); older ones have none of these, so every accessor
here returns None (or an empty list) for what a line does not hold rather than guessing.
"""

from __future__ import annotations

import json
from typing import Any

from eval.episode_log import EpisodeLine

NO_ERROR = "no_error"
# terms the binary reward needs paid (rewards/reward.py) and those it needs at zero
_PAID_TERMS = ("root_cause", "amounts", "action", "evidence")
_ZERO_TERMS = ("false_reversal", "hallucination", "extra_invoices")


def episode_id(run_index: int, line: EpisodeLine) -> str:
    """The report's key for an episode: run position, scenario and sample (URL-safe)."""
    return f"r{run_index}.{line.scenario_id}.{line.sample}"


def field(line: EpisodeLine, name: str) -> Any:
    """A field the harness adds later (contracts.md), or None on an older line."""
    return getattr(line, name, None)


def grade_value(line: EpisodeLine, name: str) -> Any:
    return (line.grade or {}).get(name)


def grounded(line: EpisodeLine) -> bool | None:
    """The grader's grounded success; None where the log predates it."""
    if line.error is not None:
        return False
    value = grade_value(line, "grounded_success")
    return None if value is None else bool(value)


def reward_verdict(line: EpisodeLine) -> bool | None:
    """What the binary reward would say, read off the shaped terms; None without terms.

    The binary variant pays 1 when the eval-success conditions hold with a non-empty evidence
    chain and no untraceable number (rewards/reward.py): in the shaped breakdown that is every
    positive term paid and no penalty term charged.
    """
    terms = line.reward_terms
    if not terms or any(name not in terms for name in _PAID_TERMS + _ZERO_TERMS):
        return None
    paid = all(terms[name] > 0 for name in _PAID_TERMS)
    return paid and all(terms[name] == 0 for name in _ZERO_TERMS)


def transcript(line: EpisodeLine) -> list[dict[str, Any]]:
    value = field(line, "transcript")
    return list(value) if isinstance(value, list) else []


def tool_outputs(line: EpisodeLine) -> list[str]:
    """The text of every tool message, in call order (number_trace `sources` index these)."""
    return [
        str(message.get("content") or "")
        for message in transcript(line)
        if message.get("role") == "tool"
    ]


def findings(line: EpisodeLine) -> dict[str, Any] | None:
    """The accepted findings; from an older transcript, the last submit_findings arguments."""
    value = field(line, "findings")
    if isinstance(value, dict):
        return value
    submitted = None
    for message in transcript(line):
        for call in message.get("tool_calls") or []:
            if call.get("name") == "submit_findings":
                submitted = _arguments(call.get("arguments"))
    return submitted


def _arguments(raw: Any) -> dict[str, Any] | None:
    if isinstance(raw, dict):
        return raw
    try:
        value = json.loads(raw) if isinstance(raw, str) else None
    except json.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


def credited(line: EpisodeLine) -> bool:
    credits = grade_value(line, "credits") or {}
    return any(int(cents) > 0 for cents in credits.values())


OUTCOMES = (
    "credited right",
    "credited wrong",
    "should have credited and did not",
    "credited when nothing was wrong",
    "rightly credited nothing",
    "no grade (error)",
)


def outcome(line: EpisodeLine) -> str:
    """The action outcome: did the episode credit, and was crediting the right action?"""
    if line.error is not None or line.grade is None:
        return OUTCOMES[5]
    if line.label == NO_ERROR:
        return OUTCOMES[3] if credited(line) else OUTCOMES[4]
    if not credited(line):
        return OUTCOMES[2]
    return OUTCOMES[0] if grade_value(line, "credits_correct") else OUTCOMES[1]


def reported_label(line: EpisodeLine) -> str:
    if line.error is not None:
        return "(error)"
    return str(grade_value(line, "reported_label") or "(no submission)")
