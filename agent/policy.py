"""What a policy is to the rollout: given the chat so far, one assistant `Choice` back.

API models, a vLLM server, an ART-trained LoRA and the scripted `reference`/`auditor`
investigators all answer through this one protocol, so evaluation and training share the
rollout. Errors are split into transient (retried, not a turn) and fatal (the user's mistake).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from openai.types.chat.chat_completion import Choice

from env.scenario import Scenario


@dataclass(frozen=True)
class PolicyReply:
    choice: Choice
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0


class PolicyError(RuntimeError):
    """A mistake the user must fix (bad key, unknown model, unreachable endpoint): one line."""


class TransientPolicyError(RuntimeError):
    """Worth retrying after a pause (rate limit, 5xx, connection reset)."""


class ContextLengthExceeded(RuntimeError):
    """The conversation no longer fits the model: this episode ends (truncated), the run goes on."""


class Policy(Protocol):
    name: str

    async def respond(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], scenario: Scenario
    ) -> PolicyReply:
        """Next assistant turn. `scenario` is for in-process scripted policies only."""
        ...

    async def aclose(self) -> None: ...
