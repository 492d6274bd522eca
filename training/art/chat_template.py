"""The chat-template settings inference and training share, decided by the template itself.

ART renders training tokens with `enable_thinking=False` and `preserve_thinking=True` whenever the
template's text names them (art/preprocessing/tokenize.py `_chat_template_kwargs`), and lets the
model's `chat_template_kwargs` override both; vLLM renders each request with what the request
carries and drops names the template ignores. Where a template names `preserve_thinking`, True
makes it stop trimming past assistant text (ART's own Qwen3.5 test template: text before a tool
call comes back with two extra newlines), so the history no longer matches what was sampled:
LedgerGym sends `preserve_thinking: false` exactly then, to both sides, and nothing otherwise.
"""

from __future__ import annotations

from typing import Any

from agent.api_policies import is_qwen35

PRESERVE_THINKING = "preserve_thinking"
# the value that keeps a past assistant turn rendered as it was sampled (see above)
PRESERVE_THINKING_ALIGNED = False


class TemplateUnavailable(RuntimeError):
    """The base model's tokenizer (and so its chat template) could not be loaded."""


def names_preserve_thinking(chat_template: object) -> bool:
    """ART's own test: the name anywhere in the template's text."""
    return isinstance(chat_template, str) and PRESERVE_THINKING in chat_template


def template_kwargs(base_model: str, chat_template: object) -> dict[str, Any] | None:
    """What every vLLM request carries and ART renders training with; None: nothing to send.

    Qwen3.5 runs with thinking off; `preserve_thinking` only when the template names it.
    """
    if not is_qwen35(base_model):
        return None
    kwargs: dict[str, Any] = {"enable_thinking": False}
    if names_preserve_thinking(chat_template):
        kwargs[PRESERVE_THINKING] = PRESERVE_THINKING_ALIGNED
    return kwargs


def resolve_chat_template(base_model: str) -> str | None:
    """The chat template of the base model's tokenizer, as ART and vLLM will load it."""
    try:
        from transformers import AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(base_model)
    except Exception as exc:  # offline, gated, a typo: one line, before any GPU start-up
        first = (str(exc).strip().splitlines() or [""])[0][:200]
        raise TemplateUnavailable(
            f"cannot load the tokenizer of {base_model} to read its chat template "
            f"({type(exc).__name__}: {first})"
        ) from None
    template = tokenizer.chat_template
    return template if isinstance(template, str) else None


def serve_kwargs_json(base_model: str, chat_template: object) -> str:
    """`--default-chat-template-kwargs` for vLLM serving an exported adapter."""
    import json

    kwargs = template_kwargs(base_model, chat_template)
    if kwargs is None:
        kwargs = {"enable_thinking": False}
    return json.dumps(kwargs)
