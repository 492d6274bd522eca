"""An in-process `agent.policy.Policy` over a Hugging Face model and tokenizer (CPU evaluation).

Renders the chat with the tokenizer's template and tools, samples with `generate`, and parses
the reply with TRL's `parse_response` (the tokenizer's response parser, falling back to plain
text on a malformed call), which is exactly how GRPOTrainer reads a completion. `render_tools`
lets the caller render the schema the model was trained on (TRL's `get_json_schema` form)
instead of the rollout's `env.tool_specs()`; both describe the same nine tools.
"""

from __future__ import annotations

import json
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
    ) -> None:
        self.name = name
        self._model: Any = model
        self._tokenizer = tokenizer
        self._max_new_tokens = max_new_tokens
        self._temperature = temperature
        self._render_tools = render_tools
        self._max_context = max_context or model.config.max_position_embeddings

    async def respond(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], scenario: Scenario
    ) -> PolicyReply:
        import torch

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
        sampling: dict[str, Any] = {"do_sample": self._temperature > 0}
        if self._temperature > 0:
            sampling["temperature"] = self._temperature  # no top-k/top-p cut, as in GRPOConfig
        with torch.no_grad():
            output = self._model.generate(
                torch.tensor([prompt_ids], device=self._model.device),
                attention_mask=torch.ones(1, len(prompt_ids), dtype=torch.long),
                max_new_tokens=room,
                eos_token_id=self._tokenizer.eos_token_id,
                pad_token_id=self._tokenizer.pad_token_id,
                **sampling,
            )
        new_ids = output[0, len(prompt_ids) :].tolist()
        finished = bool(new_ids) and new_ids[-1] == self._tokenizer.eos_token_id
        parsed = self._parse(new_ids, prompt_ids, shown_tools)
        reason = "tool_calls" if parsed.get("tool_calls") else ("stop" if finished else "length")
        return PolicyReply(_choice(parsed, reason, turn), len(prompt_ids), len(new_ids))

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
