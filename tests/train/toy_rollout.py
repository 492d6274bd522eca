"""Scripted tool-use rollouts with the token ids an inference server saw and sampled.

Each prompt is rendered the way vLLM's chat endpoint renders it (tool-call arguments parsed into
dicts, empty arguments as {}, the tools JSON in vLLM's key order, `enable_thinking=false`), and
each sampled turn becomes an openai `Choice` whose logprobs carry 'token_id:N' tokens, as ART's
vLLM returns them. A rollout becomes ART's trajectory the way the ART path converts the shared
rollout's (`training.art.trajectories.to_art_trajectory`). Token-alignment tests compare ART's
training tokens with `inference_tokens`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, cast

import art
from openai.types.chat import (
    ChatCompletionMessage,
    ChatCompletionMessageToolCallUnion,
    ChatCompletionTokenLogprob,
)
from openai.types.chat.chat_completion import Choice, ChoiceLogprobs
from openai.types.chat.chat_completion_message_function_tool_call import (
    ChatCompletionMessageFunctionToolCall,
    Function,
)
from transformers import PreTrainedTokenizerBase

from agent.trajectory import Trajectory
from training.art.trajectories import to_art_trajectory

SAMPLED_LOGPROB = -0.5
SYSTEM_PROMPT = "You investigate billing disputes. Check the ledger before you answer."
USER_COMPLAINT = "I think I was charged twice for INV-1001."

_INVOICE_ID: dict[str, object] = {
    "type": "object",
    "properties": {"invoice_id": {"type": "string", "description": "e.g. INV-1001"}},
    "required": ["invoice_id"],
}
# Our schema generator's key order (parameters first) on purpose: vLLM reorders to name,
# description, parameters, and ART only matches that with chat_template_tool_schema_format.
TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {"parameters": _INVOICE_ID, "name": name, "description": description},
    }
    for name, description in [
        ("get_invoice", "Look up one invoice by id; call list_payments next."),
        ("list_payments", "List the payments made against an invoice."),
        ("list_open_disputes", "List the disputes still open; takes no arguments."),
    ]
]


@dataclass(frozen=True)
class Turn:
    """One assistant turn: tool calls (then their results) or a final answer.

    `sampled=False` makes it a plain dict in the history (context, never trained), as a
    warm-start demonstration or an API model's turn would be. `raw_arguments` replaces the
    arguments string of every call, to script malformed ones.
    """

    calls: tuple[tuple[str, dict[str, str]], ...] = ()
    answer: str = ""
    results: tuple[str, ...] = ()
    sampled: bool = True
    raw_arguments: str | None = None


@dataclass
class ToyRollout:
    items: list[Choice | dict[str, Any]]
    prompts: list[list[int]] = field(default_factory=list)
    samples: list[list[int]] = field(default_factory=list)

    @property
    def inference_tokens(self) -> list[int]:
        """The last prompt plus the last sample: everything the model saw or produced."""
        return self.prompts[-1] + self.samples[-1]

    def trajectory(self, reward: float) -> art.Trajectory:
        """As the shared rollout records it, converted as the ART path converts it."""
        recorded = Trajectory(messages_and_choices=list(self.items), tools=TOOLS, reward=reward)
        return to_art_trajectory(recorded)


def three_turn_script() -> list[Turn]:
    """Two tool-calling turns and a final answer: the shape of a short LedgerGym episode."""
    return [
        Turn(
            calls=(("get_invoice", {"invoice_id": "INV-1001"}),),
            results=('{"invoice_id": "INV-1001", "total": "148.20", "currency": "USD"}',),
        ),
        Turn(
            calls=(("list_payments", {"invoice_id": "INV-1001"}),),
            results=('{"payments": ["PAY-1", "PAY-2"], "amount": "148.20"}',),
        ),
        Turn(answer="The customer paid INV-1001 twice; a credit of 148.20 USD is due."),
    ]


def run_rollout(tokenizer: PreTrainedTokenizerBase, turns: list[Turn]) -> ToyRollout:
    """Plays the script against a pretend vLLM that samples exactly the scripted text."""
    opening: list[dict[str, Any]] = [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": USER_COMPLAINT},
    ]
    rollout = ToyRollout(items=list(opening))
    sent: list[dict[str, Any]] = list(opening)  # what the client sends back each turn
    for number, turn in enumerate(turns):
        calls = [
            _tool_call(number, index, name, args, turn)
            for index, (name, args) in enumerate(turn.calls)
        ]
        message = {
            "role": "assistant",
            "content": None if calls else turn.answer,
            "tool_calls": [call.model_dump(mode="json") for call in calls],
        }
        if turn.sampled:
            rollout.prompts.append(vllm_prompt_ids(tokenizer, sent))
            sample = sampled_token_ids(tokenizer, turn)
            rollout.samples.append(sample)
            rollout.items.append(_choice(tokenizer, sample, calls, turn.answer))
        else:
            rollout.items.append(message)
        sent.append(message)
        for call, result in zip(calls, turn.results, strict=True):
            result_message = {"role": "tool", "tool_call_id": call.id, "content": result}
            rollout.items.append(result_message)
            sent.append(result_message)
    return rollout


def vllm_prompt_ids(
    tokenizer: PreTrainedTokenizerBase, messages: list[dict[str, Any]]
) -> list[int]:
    """The prompt token ids vLLM builds for a chat request (its chat_utils, restated here)."""
    parsed = json.loads(json.dumps(messages))
    for message in parsed:
        for call in message.get("tool_calls") or []:
            arguments = call["function"].get("arguments")
            call["function"]["arguments"] = json.loads(arguments) if arguments else {}
        if message.get("tool_calls") == []:
            del message["tool_calls"]
    tools: list[dict[Any, Any] | Callable[..., Any]] = [
        {
            "type": "function",
            "function": {
                "name": tool["function"]["name"],
                "description": tool["function"]["description"],
                "parameters": tool["function"]["parameters"],
            },
        }
        for tool in TOOLS
    ]
    token_ids = tokenizer.apply_chat_template(
        parsed,
        tools=tools,
        add_generation_prompt=True,
        enable_thinking=False,
        tokenize=True,
        return_dict=False,
    )
    return cast(list[int], token_ids)


def sampled_token_ids(tokenizer: PreTrainedTokenizerBase, turn: Turn) -> list[int]:
    """What the model generates after `<think>\\n\\n</think>\\n\\n`, ending in `<|im_end|>`."""
    if not turn.calls:
        text = turn.answer
    else:
        text = "\n".join(_tool_call_text(name, args) for name, args in turn.calls)
    eos = tokenizer.eos_token_id
    assert isinstance(eos, int)
    return [*tokenizer.encode(text, add_special_tokens=False), eos]


def _tool_call_text(name: str, args: dict[str, str]) -> str:
    parameters = "".join(
        f"<parameter={key}>\n{value}\n</parameter>\n" for key, value in args.items()
    )
    return f"<tool_call>\n<function={name}>\n{parameters}</function>\n</tool_call>"


def _tool_call(
    turn_number: int, index: int, name: str, args: dict[str, str], turn: Turn
) -> ChatCompletionMessageFunctionToolCall:
    arguments = turn.raw_arguments if turn.raw_arguments is not None else json.dumps(args)
    return ChatCompletionMessageFunctionToolCall(
        id=f"call_{turn_number}_{index}",
        type="function",
        function=Function(name=name, arguments=arguments),
    )


def _choice(
    tokenizer: PreTrainedTokenizerBase,
    sample: list[int],
    calls: list[ChatCompletionMessageFunctionToolCall],
    answer: str,
) -> Choice:
    logprobs = [
        ChatCompletionTokenLogprob(
            token=f"token_id:{token_id}",
            logprob=SAMPLED_LOGPROB,
            bytes=list(cast(str, tokenizer.decode(token_id)).encode("utf-8")),
            top_logprobs=[],
        )
        for token_id in sample
    ]
    tool_calls: list[ChatCompletionMessageToolCallUnion] = list(calls)
    message = ChatCompletionMessage(
        role="assistant", content=None if calls else answer, tool_calls=tool_calls or None
    )
    return Choice(
        index=0,
        finish_reason="tool_calls" if calls else "stop",
        message=message,
        logprobs=ChoiceLogprobs(content=logprobs),
    )
