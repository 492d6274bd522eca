"""What a policy is to the rollout: given the chat so far, one assistant `Choice` back.

API models, a vLLM server, an ART-trained LoRA and the scripted `reference`/`auditor`
investigators all answer through this one protocol, so evaluation and training share the
rollout. Failures are sorted by who failed (eval/README.md has the rules):
- `TransientPolicyError`: the infrastructure (connection reset, 429, 502/503/504/529, timeout);
  retried with backoff, never a turn. `ConnectFailed` is its refused-connection kind, which the
  rollout turns into `ServerUnreachable` once it has lasted long enough.
- `ServerFailure`: the server failed this request (a plain HTTP 500, e.g. a tool call it could not
  parse); retried a couple of times, then the episode ends as an error line. `RequestRejected`
  is its 400/422 kind (transformers serve >= 5.25 answers a tool call it cannot parse with 400,
  5.24 with 500): the same per-episode rule.
- `ContextLengthExceeded`: the conversation no longer fits; the episode ends, the run goes on.
- `PolicyError`: the user's mistake (bad key, unknown model); the run stops with one line.
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


class ServerUnreachable(PolicyError):
    """Every connection was refused for the configured time: the run stops, a rerun resumes."""


class TransientPolicyError(RuntimeError):
    """Worth retrying after a pause (rate limit, 502/503/504/529, connection reset, timeout)."""

    def __init__(
        self, message: str, cause: str = "transient", retry_after_s: float | None = None
    ) -> None:
        super().__init__(message)
        self.cause = cause  # short, for the progress line and the episode's retry_causes
        self.retry_after_s = retry_after_s  # the server's Retry-After, when it sent one


class ConnectFailed(TransientPolicyError):
    """Nothing accepted the connection (refused, by exception type, whatever the wording)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, "connection refused")


class ServerFailure(RuntimeError):
    """The server answered this request with a 5xx of its own (not an overload): `status`."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"HTTP {status}: {message}")
        self.status = status


class RequestRejected(ServerFailure):
    """HTTP 400/422 that is not a context overflow: what this conversation provoked (a tool call
    the server could not parse). A request the server never accepts shows as every episode
    ending on it; the summary says so (`eval.summary`)."""


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
