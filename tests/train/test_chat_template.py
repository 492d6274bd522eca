"""training.art.chat_template: `preserve_thinking` is sent only when the template names it, with
the value that renders a past assistant turn exactly as it was sampled.

Two toy templates (tests/train/toy_chat_template.jinja, in Qwen3.5's shape): the file as is,
which does not name `preserve_thinking`, and a copy that names it and, when it is true, stops
trimming past assistant text, as ART's Qwen3.5 test template does. Training's kwargs are what
ART's own `_chat_template_kwargs` makes of ours; inference's are ours as they are.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from art.preprocessing.tokenize import _chat_template_kwargs

from tests.train.toy_rollout import TOOLS, _tool_call_text
from tests.train.toy_tokenizer import TEMPLATE_PATH, build_toy_tokenizer
from training.art.chat_template import serve_kwargs_json, template_kwargs

QWEN = "Qwen/Qwen3.5-4B"
PLAIN = TEMPLATE_PATH.read_text(encoding="utf-8")
TRIM = "{%- set content = (message.content or '') | trim %}"
NAMING = PLAIN.replace(
    TRIM,
    "{%- if preserve_thinking is defined and preserve_thinking %}"
    "{%- set content = message.content or '' %}{%- else %}" + TRIM + "{%- endif %}",
)
ARGS = {"invoice_id": "INV-1001"}
# what the model sampled after <think>\n\n</think>\n\n: text, a blank line, the tool call
SAMPLED = "I will read the invoice.\n\n" + _tool_call_text("get_invoice", ARGS) + "<|im_end|>"


@pytest.fixture(scope="module")
def tokenizer():
    return build_toy_tokenizer()


def history() -> list[dict[str, Any]]:
    """vLLM's qwen3_coder parser leaves the text before the call, newlines included."""
    call = {"id": "c1", "type": "function", "function": {"name": "get_invoice", "arguments": ARGS}}
    return [
        {"role": "system", "content": "You investigate billing disputes."},
        {"role": "user", "content": "I was charged twice."},
        {"role": "assistant", "content": "I will read the invoice.\n\n", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": '{"total": "148.20"}'},
    ]


def rendered_turn(tokenizer, template: str, kwargs: dict[str, Any]) -> str:
    tokenizer.chat_template = template
    text = tokenizer.apply_chat_template(
        history(), tools=TOOLS, tokenize=False, add_generation_prompt=True, **kwargs
    )
    start = text.index("<|im_start|>assistant\n<think>\n\n</think>\n\n") + len(
        "<|im_start|>assistant\n<think>\n\n</think>\n\n"
    )
    return text[start : text.index("<|im_end|>", start) + len("<|im_end|>")]


def sides(template: str, ours: dict[str, Any] | None) -> tuple[dict[str, Any], dict[str, Any]]:
    """(what ART renders training with, what vLLM renders the request with)."""
    training = _chat_template_kwargs(SimpleNamespace(chat_template=template), ours)  # type: ignore[arg-type]
    return training, dict(ours or {})


@pytest.mark.parametrize("template", [PLAIN, NAMING], ids=["does-not-name", "names"])
def test_both_sides_render_the_past_turn_as_it_was_sampled(tokenizer, template):
    ours = template_kwargs(QWEN, template)
    training, inference = sides(template, ours)
    assert training == inference
    for kwargs in (training, inference):
        assert rendered_turn(tokenizer, template, kwargs) == SAMPLED


def test_preserve_thinking_is_sent_only_when_the_template_names_it():
    assert template_kwargs(QWEN, PLAIN) == {"enable_thinking": False}
    assert template_kwargs(QWEN, NAMING) == {"enable_thinking": False, "preserve_thinking": False}
    assert template_kwargs(QWEN, None) == {"enable_thinking": False}
    assert template_kwargs("meta-llama/Llama-3.1-8B-Instruct", NAMING) is None
    assert serve_kwargs_json(QWEN, NAMING) == (
        '{"enable_thinking": false, "preserve_thinking": false}'
    )


def test_true_where_the_template_names_it_adds_two_newlines_before_the_call(tokenizer):
    """The old setting (always true), so this test can tell the two apart."""
    training, inference = sides(NAMING, {"enable_thinking": False, "preserve_thinking": True})
    turn = rendered_turn(tokenizer, NAMING, training)
    assert turn != SAMPLED and turn.replace("\n\n\n\n<tool_call>", "\n\n<tool_call>") == SAMPLED
    # and leaving it out lets ART force true for training while vLLM renders the trimmed text
    training, inference = sides(NAMING, {"enable_thinking": False})
    assert training["preserve_thinking"] is True and "preserve_thinking" not in inference
    assert rendered_turn(tokenizer, NAMING, training) != rendered_turn(tokenizer, NAMING, inference)
