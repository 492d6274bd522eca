"""Local models the registry runs in-process (`kind = "local"` in agent/models.toml).

Each name maps to a loader returning a model and tokenizer whose chat template renders the nine
tools and whose response template parses tool calls; `HfPolicy` then generates on this machine's
CPU. A missing package or library is a one-line `PolicyError`, raised before any episode starts.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from agent.policy import PolicyError

if TYPE_CHECKING:
    from agent.hf_policy import HfPolicy


def _smollm2() -> tuple[Any, Any]:
    from agent import smollm2

    return smollm2.load()


LOADERS: dict[str, Callable[[], tuple[Any, Any]]] = {"smollm2-135m": _smollm2}


def local_policy(model: str, *, name: str, temperature: float, max_tokens: int) -> HfPolicy:
    """Load (converting once if needed) and wrap the model; slow the first time only."""
    from agent.hf_policy import HfPolicy
    from agent.smollm2 import ModelUnavailable

    if model not in LOADERS:
        raise PolicyError(f"unknown local model {model!r}; known: {', '.join(sorted(LOADERS))}")
    try:
        weights, tokenizer = LOADERS[model]()
    except (ModelUnavailable, ImportError) as exc:
        raise PolicyError(str(exc)) from None
    return HfPolicy(
        weights,
        tokenizer,
        name=name,
        max_new_tokens=max_tokens,
        temperature=temperature,
        prefix_cache=True,
    )
