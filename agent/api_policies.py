"""Policies behind HTTP: any OpenAI-compatible endpoint (vLLM, a served LoRA) and litellm models.

Both return the model's `Choice` unchanged (logprobs included when the server sends them), so
the same trajectory trains under ART. Every request carries an explicit timeout and a completion
limit that the context guard keeps inside the model's window. Errors are classified by exception
type (never by message wording) into the kinds of `agent.policy`; eval/README.md has the rules.
"""

from __future__ import annotations

import os
from typing import Any, cast

import httpx
import openai
from openai.types.chat import ChatCompletionMessageParam, ChatCompletionToolParam
from openai.types.chat.chat_completion import Choice

from agent.context_guard import ContextGuard
from agent.policy import (
    ConnectFailed,
    ContextLengthExceeded,
    PolicyError,
    PolicyReply,
    RequestRejected,
    ServerFailure,
    TransientPolicyError,
)
from env.scenario import Scenario

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # never fetch the cost map

DEFAULT_TIMEOUT_S = 300.0
TRANSIENT_STATUSES = frozenset({408, 409, 429, 502, 503, 504, 529})
# the request was understood but not processed: with a well-formed request this is the
# conversation's doing (transformers serve >= 5.25 answers a tool call it cannot parse with 400)
REJECTED_STATUSES = frozenset({400, 422})
# sampling keys the OpenAI SDK takes as arguments; any other registry key goes in extra_body
OPENAI_SAMPLING_KEYS = frozenset(
    {"top_p", "seed", "presence_penalty", "frequency_penalty", "stop", "logit_bias"}
)
_CONTEXT_WORDS = (
    "context length",
    "context_length",
    "maximum context",
    "max_model_len",
    "too many tokens",
    "prompt is too long",
)
_CONNECT_REFUSED: tuple[type[BaseException], ...] = (httpx.ConnectError, ConnectionRefusedError)
_TIMEOUTS: tuple[type[BaseException], ...] = (
    openai.APITimeoutError,
    httpx.TimeoutException,
    TimeoutError,
)
_RESETS: tuple[type[BaseException], ...] = (
    httpx.RemoteProtocolError,
    httpx.ReadError,
    httpx.WriteError,
    ConnectionResetError,
    BrokenPipeError,
)


def _chain(exc: BaseException) -> list[BaseException]:
    """The exception and what it wraps (litellm wraps openai, which wraps httpx)."""
    seen: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in seen and len(seen) < 12:
        seen.append(current)
        current = current.__cause__ or current.__context__
    return seen


def _first(chain: list[BaseException], kinds: tuple[type[BaseException], ...]) -> bool:
    return any(isinstance(item, kinds) for item in chain)


def _status(exc: Exception) -> int | None:
    status = getattr(exc, "status_code", None)
    return status if isinstance(status, int) else None


def _message(exc: Exception) -> str:
    body = getattr(exc, "body", None)  # FastAPI servers (transformers serve) answer {"detail": …}
    detail = body.get("detail") if isinstance(body, dict) else None
    text = detail if isinstance(detail, str) else None
    text = text or getattr(exc, "message", None) or str(exc) or type(exc).__name__
    return " ".join(str(text).split())[:300]


def _classify(exc: Exception, where: str) -> Exception:
    """An openai/litellm exception -> the `agent.policy` kind the rollout acts on."""
    chain = _chain(exc)
    if _first(chain, _CONNECT_REFUSED):
        return ConnectFailed(f"cannot connect to {where}")
    if _first(chain, _TIMEOUTS):
        return TransientPolicyError(f"{where} did not answer in time", "timeout")
    if _first(chain, _RESETS):
        return TransientPolicyError(f"{where} dropped the connection", "connection reset")
    if isinstance(exc, openai.APIConnectionError):
        return TransientPolicyError(f"connection error to {where}", "connection error")
    status = _status(exc)
    message = _message(exc)
    if _is_context_error(exc, message):
        return ContextLengthExceeded(f"{where}: {message[:200]}")
    if status in TRANSIENT_STATUSES:
        text = f"HTTP {status} from {where}: {message[:120]}"
        return TransientPolicyError(text, f"HTTP {status}", _retry_after(exc))
    if status is not None and status >= 500:
        return ServerFailure(status, f"{message} ({where})")
    if status in REJECTED_STATUSES:
        return RequestRejected(status, f"{message} ({where})")
    if status in (401, 403):
        return PolicyError(f"{where} refused the API key ({type(exc).__name__})")
    if status == 404:
        return PolicyError(f"{where} does not serve this model (404): {message[:200]}")
    if status is not None:
        return PolicyError(f"{where} answered {status}: {message[:200]}")
    return exc


def _retry_after(exc: Exception) -> float | None:
    """Seconds from a Retry-After(-ms) header, if the response had one."""
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None) or {}
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        try:
            return max(0.0, float(headers[name]) * scale)
        except (KeyError, TypeError, ValueError):
            continue
    return None


def _is_context_error(exc: Exception, message: str) -> bool:
    if type(exc).__name__ == "ContextWindowExceededError":  # litellm's own class
        return True
    return isinstance(exc, openai.BadRequestError) and any(
        word in message.lower() for word in _CONTEXT_WORDS
    )


def is_qwen35(model_name: str) -> bool:
    return "qwen3.5" in model_name.lower() or "qwen3_5" in model_name.lower()


def _split_sampling(sampling: dict[str, Any] | None) -> tuple[dict[str, Any], dict[str, Any]]:
    """(SDK arguments, extra_body fields) from the registry's sampling table."""
    items = (sampling or {}).items()
    known = {key: value for key, value in items if key in OPENAI_SAMPLING_KEYS}
    extra = {key: value for key, value in items if key not in OPENAI_SAMPLING_KEYS}
    return known, extra


class OpenAICompatiblePolicy:
    """An OpenAI-compatible server, e.g. vLLM serving Qwen3.5-4B (+ LoRA) or ART's backend."""

    def __init__(
        self,
        *,
        base_url: str,
        model_name: str,
        api_key: str | None = None,
        temperature: float = 1.0,
        max_tokens: int = 2048,
        logprobs: bool = False,
        name: str | None = None,
        client: openai.AsyncOpenAI | None = None,
        enable_thinking: bool | None = None,
        timeout_s: float | None = None,
        context_length: int | None = None,
        sampling: dict[str, Any] | None = None,
    ) -> None:
        """`enable_thinking`: None sends `false` to Qwen3.5 models (by name), as training does.
        `timeout_s`: per request; None = 300 s, or the given `client`'s own timeout."""
        self.name = name or model_name
        self.model_name = model_name
        self.base_url = base_url
        self.guard = ContextGuard(context_length, max_tokens)
        self._client = client or openai.AsyncOpenAI(
            base_url=base_url,
            api_key=api_key or os.environ.get("OPENAI_API_KEY") or "EMPTY",
            max_retries=0,
            timeout=timeout_s or DEFAULT_TIMEOUT_S,
        )
        known, extra = _split_sampling(sampling)
        self._params: dict[str, Any] = {"temperature": temperature, **known}
        if client is not None and timeout_s is not None:
            self._params["timeout"] = timeout_s
        if logprobs:
            self._params["logprobs"] = True
        if enable_thinking is None and is_qwen35(model_name):
            enable_thinking = False  # inference and training tokenisation must agree
        if enable_thinking is not None:
            extra["chat_template_kwargs"] = {"enable_thinking": enable_thinking}
        if extra:
            self._params["extra_body"] = extra

    async def respond(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], scenario: Scenario
    ) -> PolicyReply:
        limit = self.guard.completion_limit(messages, tools)
        try:
            response = await self._client.chat.completions.create(
                model=self.model_name,
                messages=cast(list[ChatCompletionMessageParam], messages),
                tools=cast(list[ChatCompletionToolParam], tools),
                max_tokens=limit,
                **self._params,
            )
        except openai.OpenAIError as exc:
            raise _classify(exc, self.base_url) from exc
        usage = response.usage
        prompt_tokens = usage.prompt_tokens if usage else 0
        self.guard.observe(messages, tools, prompt_tokens)
        return PolicyReply(
            choice=response.choices[0],
            prompt_tokens=prompt_tokens,
            completion_tokens=usage.completion_tokens if usage else 0,
        )

    async def aclose(self) -> None:
        await self._client.close()


class LiteLLMPolicy:
    """Any provider litellm knows, by provider model id; the key comes from the environment."""

    def __init__(
        self,
        *,
        model_id: str,
        name: str | None = None,
        api_base: str | None = None,
        api_key: str | None = None,
        temperature: float = 1.0,
        max_tokens: int = 2048,
        extra: dict[str, Any] | None = None,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        context_length: int | None = None,
        sampling: dict[str, Any] | None = None,
    ) -> None:
        self.name = name or model_id
        self.model_id = model_id
        self._where = api_base or model_id
        self.guard = ContextGuard(context_length, max_tokens)
        known, unknown = _split_sampling(sampling)
        self._params: dict[str, Any] = {"temperature": temperature, "timeout": timeout_s, **known}
        if unknown:
            self._params["extra_body"] = unknown
        self._params.update(extra or {})
        if api_base:
            self._params["api_base"] = api_base
        if api_key:
            self._params["api_key"] = api_key

    async def respond(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], scenario: Scenario
    ) -> PolicyReply:
        import litellm

        litellm.suppress_debug_info = True
        limit = self.guard.completion_limit(messages, tools)
        try:
            response = await litellm.acompletion(
                model=self.model_id,
                messages=messages,
                tools=tools,
                max_tokens=limit,
                num_retries=0,
                max_retries=0,
                **self._params,
            )
        except openai.OpenAIError as exc:  # litellm's errors subclass openai's
            raise _classify(exc, self._where) from exc
        raw = response.choices[0]
        # litellm's Choices is not openai's Choice (ART checks isinstance): convert, dropping
        # litellm-only fields
        choice = Choice.model_validate(
            raw.model_dump(
                warnings=False,
                exclude={"provider_specific_fields": True, "message": {"provider_specific_fields"}},
            )
        )
        usage = getattr(response, "usage", None)
        prompt_tokens = getattr(usage, "prompt_tokens", 0) or 0
        self.guard.observe(messages, tools, prompt_tokens)
        cost = (getattr(response, "_hidden_params", None) or {}).get("response_cost") or 0.0
        return PolicyReply(
            choice=choice,
            prompt_tokens=prompt_tokens,
            completion_tokens=getattr(usage, "completion_tokens", 0) or 0,
            cost_usd=float(cost),
        )

    async def aclose(self) -> None:
        return None
