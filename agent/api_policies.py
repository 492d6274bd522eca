"""Policies behind HTTP: any OpenAI-compatible endpoint (vLLM, a served LoRA) and litellm models.

Both return the model's `Choice` unchanged (logprobs included when the server sends them), so
the same trajectory trains under ART. Errors are sorted into transient ones, which the rollout
retries without counting a turn, and fatal ones, which stop the run with one clear line.
"""

from __future__ import annotations

import os
from typing import Any, cast

import openai
from openai.types.chat import ChatCompletionMessageParam, ChatCompletionToolParam
from openai.types.chat.chat_completion import Choice

from agent.policy import ContextLengthExceeded, PolicyError, PolicyReply, TransientPolicyError
from env.scenario import Scenario

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # never fetch the cost map

_TRANSIENT = (
    openai.APIConnectionError,
    openai.APITimeoutError,
    openai.RateLimitError,
    openai.InternalServerError,
    openai.ConflictError,
)


_CONTEXT_WORDS = (
    "context length",
    "context_length",
    "maximum context",
    "max_model_len",
    "too many tokens",
    "prompt is too long",
)


def _classify(exc: Exception, where: str) -> Exception:
    if isinstance(exc, openai.BadRequestError) and any(
        word in str(exc.message).lower() for word in _CONTEXT_WORDS
    ):
        return ContextLengthExceeded(f"{where}: {exc.message[:200]}")
    if isinstance(exc, openai.APIConnectionError) and "Connection refused" in repr(exc.__cause__):
        return PolicyError(f"cannot reach {where}: connection refused")
    if isinstance(exc, _TRANSIENT):
        return TransientPolicyError(f"{type(exc).__name__} from {where}")
    if isinstance(exc, openai.AuthenticationError | openai.PermissionDeniedError):
        return PolicyError(f"{where} refused the API key ({type(exc).__name__})")
    if isinstance(exc, openai.NotFoundError):
        return PolicyError(f"{where} does not serve this model (404): {exc.message[:200]}")
    if isinstance(exc, openai.APIStatusError):
        return PolicyError(f"{where} answered {exc.status_code}: {exc.message[:200]}")
    return exc


def is_qwen35(model_name: str) -> bool:
    return "qwen3.5" in model_name.lower() or "qwen3_5" in model_name.lower()


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
    ) -> None:
        """`enable_thinking`: None sends `false` to Qwen3.5 models (by name), as training does."""
        self.name = name or model_name
        self.model_name = model_name
        self.base_url = base_url
        self._client = client or openai.AsyncOpenAI(
            base_url=base_url,
            api_key=api_key or os.environ.get("OPENAI_API_KEY") or "EMPTY",
            max_retries=0,
            timeout=300.0,
        )
        self._params: dict[str, Any] = {"temperature": temperature, "max_tokens": max_tokens}
        if logprobs:
            self._params["logprobs"] = True
        if enable_thinking is None and is_qwen35(model_name):
            enable_thinking = False  # inference and training tokenisation must agree
        if enable_thinking is not None:
            kwargs = {"enable_thinking": enable_thinking}
            self._params["extra_body"] = {"chat_template_kwargs": kwargs}

    async def respond(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], scenario: Scenario
    ) -> PolicyReply:
        try:
            response = await self._client.chat.completions.create(
                model=self.model_name,
                messages=cast(list[ChatCompletionMessageParam], messages),
                tools=cast(list[ChatCompletionToolParam], tools),
                **self._params,
            )
        except openai.OpenAIError as exc:
            raise _classify(exc, self.base_url) from exc
        usage = response.usage
        return PolicyReply(
            choice=response.choices[0],
            prompt_tokens=usage.prompt_tokens if usage else 0,
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
    ) -> None:
        self.name = name or model_id
        self.model_id = model_id
        self._params: dict[str, Any] = {"temperature": temperature, "max_tokens": max_tokens}
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
        try:
            response = await litellm.acompletion(
                model=self.model_id, messages=messages, tools=tools, num_retries=0, **self._params
            )
        except openai.OpenAIError as exc:  # litellm's errors subclass openai's
            raise _classify(exc, self.model_id) from exc
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
        cost = (getattr(response, "_hidden_params", None) or {}).get("response_cost") or 0.0
        return PolicyReply(
            choice=choice,
            prompt_tokens=getattr(usage, "prompt_tokens", 0) or 0,
            completion_tokens=getattr(usage, "completion_tokens", 0) or 0,
            cost_usd=float(cost),
        )

    async def aclose(self) -> None:
        return None
