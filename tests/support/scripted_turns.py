"""Assistant turns for the scripted server: replay scripts, tool calls, text and malformed calls.

A responder gets the parsed request body and returns one assistant turn as a plain dict
(`ScriptedReply` fields); these helpers build such turns and stateless responders.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

Responder = Callable[[dict[str, Any]], dict[str, Any]]
"""Gets the parsed request body and returns an assistant turn (see `ScriptedReply`)."""


class ScriptExhausted(IndexError):
    """The conversation has more assistant turns than the script has entries."""


def replay_responder(script: list[dict[str, Any]]) -> Responder:
    """Answers the i-th assistant turn with script[i], i = assistant messages already sent.

    Stateless (the turn index comes from the request), so concurrent conversations and client
    retries replay the same turn.
    """

    def respond(body: dict[str, Any]) -> dict[str, Any]:
        turn = sum(1 for m in body.get("messages", []) if m.get("role") == "assistant")
        if turn >= len(script):
            raise ScriptExhausted(f"script has {len(script)} turns; asked for turn {turn + 1}")
        return dict(script[turn])

    return respond


def tool_call(name: str, arguments: Mapping[str, Any] | str) -> dict[str, Any]:
    """One scripted call; a string is sent untouched, so malformed JSON can be scripted."""
    text = arguments if isinstance(arguments, str) else json.dumps(dict(arguments))
    return {"name": name, "arguments": text}


def tool_call_turn(
    name: str, arguments: Mapping[str, Any] | str, *, content: str | None = None
) -> dict[str, Any]:
    """An assistant turn making a single tool call."""
    return {"content": content, "tool_calls": [tool_call(name, arguments)]}


def text_turn(content: str) -> dict[str, Any]:
    """An assistant turn with text only (finish_reason 'stop')."""
    return {"content": content, "tool_calls": []}


def call_as_text(name: str, arguments: str) -> str:
    """A tool call the server's parser could not read, as the model wrote it (Hermes style)."""
    return f'<tool_call>\n{{"name": "{name}", "arguments": {arguments}\n</tool_call>'


def malformed_call_turn(name: str, arguments: str = '{"invoice_id": ') -> dict[str, Any]:
    """A turn whose tool call does not parse, returned as text with finish 'stop', as vLLM does."""
    return text_turn(call_as_text(name, arguments))
