"""Converting between openai `Choice` objects and the plain message dicts sent to an API.

The trajectory keeps each `Choice` exactly as the model returned it (ART trains on those);
the next request needs it as an assistant message dict.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any

from openai.types.chat.chat_completion import Choice

from env.tools import TOOL_NAMES


def assistant_message(choice: Choice) -> dict[str, Any]:
    message = choice.message
    result: dict[str, Any] = {"role": "assistant", "content": message.content or ""}
    if message.tool_calls:
        result["tool_calls"] = [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.function.name, "arguments": call.function.arguments},
            }
            for call in message.tool_calls
            if call.type == "function"
        ]
    return result


def make_choice(
    *,
    content: str | None = None,
    tool_calls: Sequence[tuple[str, dict[str, Any] | str]] = (),
    turn: int = 0,
) -> Choice:
    """A `Choice` built in-process (scripted policies): same shape as an API's."""
    calls = [
        {
            "id": f"call_{turn}_{i}",
            "type": "function",
            "function": {
                "name": name,
                "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments),
            },
        }
        for i, (name, arguments) in enumerate(tool_calls)
    ]
    return Choice.model_validate(
        {
            "index": 0,
            "finish_reason": "tool_calls" if calls else "stop",
            "message": {"role": "assistant", "content": content, "tool_calls": calls or None},
            "logprobs": None,
        }
    )


TRANSCRIPT_CONTENT_CHARS = 4_000
TRANSCRIPT_TOTAL_CHARS = 200_000


def _capped(text: str | None, limit: int) -> tuple[str | None, bool]:
    if text is None or len(text) <= limit:
        return text, False
    marker = f" …[{len(text) - limit} more chars]"
    return text[: limit - len(marker)] + marker, True


def _transcript_entry(
    message: dict[str, Any], tool_names: dict[str, str], limit: int
) -> tuple[dict[str, Any], bool]:
    content, cut = _capped(message.get("content"), limit)
    entry: dict[str, Any] = {"role": message.get("role"), "content": content}
    if message.get("role") == "assistant" and message.get("tool_calls"):
        calls = []
        for call in message["tool_calls"]:
            arguments, cut_args = _capped(call["function"]["arguments"], limit)
            cut = cut or cut_args
            calls.append(
                {"id": call["id"], "name": call["function"]["name"], "arguments": arguments}
            )
        entry["tool_calls"] = calls
    if message.get("role") == "tool":
        call_id = str(message.get("tool_call_id", ""))
        entry.update(tool_call_id=call_id, name=tool_names.get(call_id, ""))
    return entry, cut


def transcript(
    messages: Sequence[dict[str, Any]],
    *,
    content_chars: int = TRANSCRIPT_CONTENT_CHARS,
    total_chars: int = TRANSCRIPT_TOTAL_CHARS,
) -> tuple[list[dict[str, Any]], bool]:
    """The chat in order as plain OpenAI-format dicts, capped; (entries, truncated).

    Each content (and call arguments) keeps at most `content_chars`; past `total_chars` of JSON
    the rest is left off, so entries always form a prefix and the i-th "tool" entry is the
    i-th tool call of the episode.
    """
    tool_names = {
        call["id"]: call["function"]["name"]
        for message in messages
        for call in message.get("tool_calls") or []
    }
    entries: list[dict[str, Any]] = []
    truncated, used = False, 0
    for message in messages:
        entry, cut = _transcript_entry(message, tool_names, content_chars)
        size = len(json.dumps(entry, ensure_ascii=False))
        if used + size > total_chars:
            return entries, True
        entries.append(entry)
        used += size
        truncated = truncated or cut
    return entries, truncated


def reply_digest(messages: Sequence[dict[str, Any]]) -> str:
    """A fingerprint of what the model said (its text and calls): spots identical samples."""
    said = [
        [
            m.get("content") or "",
            [
                [c["function"]["name"], c["function"]["arguments"]]
                for c in m.get("tool_calls") or []
            ],
        ]
        for m in messages
        if m.get("role") == "assistant"
    ]
    return hashlib.sha256(json.dumps(said, ensure_ascii=False).encode()).hexdigest()[:16]


def malformed_turns(messages: list[dict[str, Any]]) -> tuple[int, int]:
    """(assistant turns that are not well-formed calls to the nine tools, assistant turns).

    A well-formed turn calls at least one tool, every call names one of the nine tools and its
    arguments parse to a JSON object; a text-only reply (the episode's end without a
    submission) and a call the server returned unparsed both count. Training's format-error
    rate: what a warm start must bring down before GRPO's groups can differ in outcome.
    """
    turns = [m for m in messages if m.get("role") == "assistant"]
    return sum(not _well_formed(turn) for turn in turns), len(turns)


def _well_formed(turn: dict[str, Any]) -> bool:
    calls = turn.get("tool_calls") or []
    if not calls:
        return False
    for call in calls:
        function = call.get("function") or {}
        if function.get("name") not in TOOL_NAMES:
            return False
        try:
            arguments = json.loads(function.get("arguments") or "")
        except (TypeError, ValueError):
            return False
        if not isinstance(arguments, dict):
            return False
    return True
