"""Keeps prompt + completion inside the model's context window on every HTTP route.

Servers count tokens with the model's own tokenizer, which the harness does not have; the guard
estimates a request's prompt from its characters and learns the chars-per-token ratio from the
`prompt_tokens` each reply reports (keeping the smallest seen, i.e. the most tokens per character).
It asks for at most the room left; when less than `min_room` tokens are left the episode ends as
a context overflow instead of sending a request the server must refuse.
"""

from __future__ import annotations

import json
import math
import threading
from typing import Any

from agent.policy import ContextLengthExceeded

FIRST_GUESS_CHARS_PER_TOKEN = 3.5  # JSON-heavy chat text; refined from the first reply
TEMPLATE_TOKENS = 32  # chat template framing: role markers, tool preamble
PER_MESSAGE_TOKENS = 4
LEARN_FROM_TOKENS = 200


def _chars(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> int:
    return len(json.dumps(messages, ensure_ascii=False)) + len(json.dumps(tools))


class ContextGuard:
    def __init__(self, context_length: int | None, max_tokens: int, min_room: int = 16) -> None:
        self.context_length = context_length
        self.max_tokens = max_tokens
        self.min_room = min_room
        self._observed: float | None = None  # smallest chars/token seen in a reply
        self._lock = threading.Lock()

    def estimate(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> int:
        ratio = self._observed or FIRST_GUESS_CHARS_PER_TOKEN
        text = _chars(messages, tools) / ratio
        return math.ceil(text) + TEMPLATE_TOKENS + PER_MESSAGE_TOKENS * len(messages)

    def completion_limit(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> int:
        """`max_tokens` for this request; raises ContextLengthExceeded when nothing fits."""
        if self.context_length is None:
            return self.max_tokens
        prompt = self.estimate(messages, tools)
        room = self.context_length - prompt
        if room < self.min_room:
            raise ContextLengthExceeded(
                f"the prompt is about {prompt} tokens of the model's {self.context_length}; "
                f"{max(room, 0)} left for the reply"
            )
        return min(self.max_tokens, room)

    def observe(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], prompt_tokens: int
    ) -> None:
        """Learns from a reply's reported prompt size (0 = the server did not say); prompts under
        `LEARN_FROM_TOKENS` say more about the template than about the text, and are skipped."""
        if prompt_tokens < LEARN_FROM_TOKENS:
            return
        ratio = _chars(messages, tools) / prompt_tokens
        with self._lock:
            seen = ratio if self._observed is None else min(self._observed, ratio)
            self._observed = max(1.0, seen)
