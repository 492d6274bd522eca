"""Converting between openai `Choice` objects and the plain message dicts sent to an API.

The trajectory keeps each `Choice` exactly as the model returned it (ART trains on those);
the next request needs it as an assistant message dict.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from openai.types.chat.chat_completion import Choice


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
