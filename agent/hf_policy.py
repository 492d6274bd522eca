"""An in-process `agent.policy.Policy` over a Hugging Face model and tokenizer (CPU evaluation).

Renders the chat with the tokenizer's template and tools, samples with `generate`, and parses
the reply with TRL's `parse_response` (the tokenizer's response parser, falling back to plain
text on a malformed call), which is exactly how GRPOTrainer reads a completion. `render_tools`
lets the caller render the schema the model was trained on (TRL's `get_json_schema` form)
instead of the rollout's `env.tool_specs()`; both describe the same nine tools.
`prefix_cache=True` keeps the KV cache of the last sequence and reuses its longest common prefix
with the next prompt: every episode opens with the same system prompt and tool schemas (~2.7k
tokens for SmolLM2), and a prefix-preserving template makes each turn extend the previous one.
"""

from __future__ import annotations

import asyncio
import copy
import json
import threading
from typing import TYPE_CHECKING, Any, cast

from openai.types.chat.chat_completion import Choice

from agent.policy import PolicyReply
from env.scenario import Scenario

if TYPE_CHECKING:
    from transformers import PreTrainedModel, PreTrainedTokenizerBase


class HfPolicy:
    """Stateless between turns: every reply re-renders the conversation it is given."""

    def __init__(
        self,
        model: PreTrainedModel,
        tokenizer: PreTrainedTokenizerBase,
        *,
        name: str = "hf",
        max_new_tokens: int = 256,
        temperature: float = 1.0,
        render_tools: list[dict[str, Any]] | None = None,
        max_context: int | None = None,
        prefix_cache: bool = False,
    ) -> None:
        self.name = name
        self._model: Any = model
        self._tokenizer = tokenizer
        self._max_new_tokens = max_new_tokens
        self._temperature = temperature
        self._render_tools = render_tools
        self._max_context = max_context or model.config.max_position_embeddings
        self._prefix_cache = prefix_cache
        self._cached: tuple[list[int], Any] | None = None  # token ids, their KV cache
        # a thread lock, not an asyncio one: a cancelled turn's thread still holds the model
        self._generating = threading.Lock()

    async def respond(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], scenario: Scenario
    ) -> PolicyReply:
        turn = sum(1 for message in messages if message.get("role") == "assistant")
        shown_tools = self._render_tools if self._render_tools is not None else tools
        prompt_ids = cast(
            list[int],
            self._tokenizer.apply_chat_template(
                messages,
                tools=cast(Any, shown_tools),
                add_generation_prompt=True,
                tokenize=True,
                return_dict=False,
            ),
        )
        room = min(self._max_new_tokens, self._max_context - len(prompt_ids))
        if room <= 0:  # out of context: end the turn with no call, as a length cut
            return PolicyReply(_choice({"content": ""}, "length", turn), len(prompt_ids), 0)
        # generate() runs in a worker thread, one at a time (the model and its prefix cache are
        # shared): the event loop stays free, so Ctrl-C cancels every episode at once instead
        # of letting each queued episode finish its turn first
        cancelled = threading.Event()
        try:
            output = await asyncio.to_thread(self._generate, prompt_ids, room, cancelled)
        except asyncio.CancelledError:
            cancelled.set()  # a queued turn never starts; a running one stops at its next token
            raise
        sequence = output.sequences[0].tolist()
        new_ids = sequence[len(prompt_ids) :]
        finished = bool(new_ids) and new_ids[-1] == self._tokenizer.eos_token_id
        parsed = self._parse(new_ids, prompt_ids, shown_tools)
        reason = "tool_calls" if parsed.get("tool_calls") else ("stop" if finished else "length")
        return PolicyReply(_choice(parsed, reason, turn), len(prompt_ids), len(new_ids))

    def _generate(self, prompt_ids: list[int], room: int, cancelled: threading.Event) -> Any:
        """The blocking part of a turn (a worker thread); keeps the prefix cache up to date."""
        import torch
        from transformers import StoppingCriteria, StoppingCriteriaList

        class StopWhenCancelled(StoppingCriteria):
            def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
                return torch.full((input_ids.shape[0],), cancelled.is_set(), dtype=torch.bool)

        sampling: dict[str, Any] = {"do_sample": self._temperature > 0}
        if self._temperature > 0:
            sampling["temperature"] = self._temperature  # no top-k/top-p cut, as in GRPOConfig
        with self._generating, torch.no_grad():  # no_grad is thread-local: enter it here
            if cancelled.is_set():
                return None
            if self._prefix_cache:
                sampling.update(self._reuse(prompt_ids))
            output = self._model.generate(
                torch.tensor([prompt_ids], device=self._model.device),
                stopping_criteria=StoppingCriteriaList([StopWhenCancelled()]),
                attention_mask=torch.ones(1, len(prompt_ids), dtype=torch.long),
                max_new_tokens=room,
                eos_token_id=self._tokenizer.eos_token_id,
                pad_token_id=self._tokenizer.pad_token_id,
                return_dict_in_generate=True,
                **sampling,
            )
            if self._prefix_cache and getattr(output, "cache", None) is not None:
                sequence = output.sequences[0].tolist()
                self._cached = (sequence[: output.cache.get_seq_length()], output.cache)
        return output

    def _reuse(self, prompt_ids: list[int]) -> dict[str, Any]:
        """A copy of the KV cache cut to its longest common prefix with the prompt, or nothing."""
        if self._cached is None:
            return {}
        cached_ids, cache = self._cached
        shared = 0
        for mine, theirs in zip(cached_ids, prompt_ids[:-1], strict=False):  # >= 1 token left
            if mine != theirs:
                break
            shared += 1
        if shared == 0:
            return {}
        reused = copy.deepcopy(cache)
        reused.crop(shared - len(cached_ids))  # transformers 5: minus the tokens to drop
        return {"cache": reused}

    def _parse(
        self, new_ids: list[int], prompt_ids: list[int], tools: list[dict[str, Any]]
    ) -> dict[str, Any]:
        from trl.chat_template_utils import parse_response

        return parse_response(self._tokenizer, new_ids, prefix=prompt_ids, tools=cast(Any, tools))

    async def aclose(self) -> None:
        return None


def _choice(parsed: dict[str, Any], finish_reason: str, turn: int) -> Choice:
    calls = []
    for i, call in enumerate(parsed.get("tool_calls") or []):
        function = call.get("function", call)
        arguments = function.get("arguments", {})
        calls.append(
            {
                "id": f"call_{turn}_{i}",
                "type": "function",
                "function": {
                    "name": str(function.get("name", "")),
                    "arguments": arguments
                    if isinstance(arguments, str)
                    else json.dumps(arguments, ensure_ascii=False),
                },
            }
        )
    content = parsed.get("content")
    return Choice.model_validate(
        {
            "index": 0,
            "finish_reason": finish_reason,
            "message": {
                "role": "assistant",
                "content": content if isinstance(content, str) else None,
                "tool_calls": calls or None,
            },
            "logprobs": None,
        }
    )
