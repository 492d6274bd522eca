"""The scripted server's answer as a chat-completions stream (`stream: true`), as vLLM sends it.

One finished completion becomes server-sent events: a first chunk with the role, the text and
whole tool calls, a chunk with the finish reason, a usage chunk when the request asked for it
(`stream_options.include_usage`), then `data: [DONE]`. Test support only.
"""

from __future__ import annotations

import json
from typing import Any


def stream_events(body: dict[str, Any], completion: dict[str, Any], *, done: bool = True) -> bytes:
    """The SSE bytes for `completion`, the non-streamed answer to `body`; `done=False` leaves
    out the closing sentinel, as `transformers serve` does."""
    choice = completion["choices"][0]
    message = choice["message"]
    delta: dict[str, Any] = {"role": "assistant", "content": message["content"]}
    if message["tool_calls"]:
        delta["tool_calls"] = [{"index": i, **call} for i, call in enumerate(message["tool_calls"])]
    chunks = [
        _chunk(completion, [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": None}]),
        _chunk(completion, [{"index": 0, "delta": {}, "finish_reason": choice["finish_reason"]}]),
    ]
    if (body.get("stream_options") or {}).get("include_usage"):
        chunks.append(_chunk(completion, [], usage=completion["usage"]))
    events = [f"data: {json.dumps(chunk)}\n\n" for chunk in chunks] + (
        ["data: [DONE]\n\n"] if done else []
    )
    return "".join(events).encode("utf-8")


def _chunk(
    completion: dict[str, Any], choices: list[dict[str, Any]], usage: dict[str, Any] | None = None
) -> dict[str, Any]:
    return {
        "id": completion["id"],
        "object": "chat.completion.chunk",
        "created": completion["created"],
        "model": completion["model"],
        "choices": choices,
        "usage": usage,
    }
