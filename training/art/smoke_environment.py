"""The GPU smoke's checks of its software environment: the Gated-DeltaNet kernels and the base
precision Unsloth trained on. Pure functions plus one probe of the installed transformers;
`training.gpu_smoke_device` runs them on the GPU machine, tests/train/test_gpu_smoke_checks.py
on CPU.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
from collections.abc import Sequence
from types import SimpleNamespace
from typing import Any

from training.art.gpu_smoke_checks import Check, Status

# What transformers 5.2 logs (warning_once) when a Qwen3.5 / Qwen3-Next Gated-DeltaNet layer is
# built without flash-linear-attention and causal-conv1d: "The fast path is not available
# because one of the required library is not installed. Falling back to torch implementation."
FAST_PATH_MESSAGE = "fast path is not available"
GDN_MODELING = {  # training.art.backends.gdn_family -> the modeling module of its layers
    "qwen3.5": "transformers.models.qwen3_5.modeling_qwen3_5",
    "qwen3.next": "transformers.models.qwen3_next.modeling_qwen3_next",
}


def gdn_modeling_module(base_model: str) -> str | None:
    """The transformers module of the base model's Gated-DeltaNet layers; None without them."""
    from training.art.backends import gdn_family

    family = gdn_family(base_model)
    return GDN_MODELING.get(family) if family else None


def probe_gdn_fast_path(module_name: str) -> tuple[bool | None, list[str]]:
    """transformers' own verdict: its `is_fast_path_available`, and what it logs building a layer.

    Imports the modeling module and builds one tiny Gated-DeltaNet layer (a few hundred
    parameters, on CPU) while collecting the records of the "transformers" logger: the
    constructor logs FAST_PATH_MESSAGE when it falls back to torch. Unsloth builds the real
    model in a child process, whose log the smoke cannot read; this is the same code, here.
    """
    messages: list[str] = []
    handler = logging.Handler(logging.WARNING)
    handler.emit = lambda record: messages.append(record.getMessage())  # type: ignore[method-assign]
    logger = logging.getLogger("transformers")
    logger.addHandler(handler)
    try:
        module = importlib.import_module(module_name)
        layer = next((getattr(module, n) for n in dir(module) if n.endswith("GatedDeltaNet")), None)
        if layer is not None:
            with contextlib.suppress(Exception):  # another transformers may want other fields
                layer(_tiny_gdn_config(), layer_idx=0)
    finally:
        logger.removeHandler(handler)
    return getattr(module, "is_fast_path_available", None), messages


def _tiny_gdn_config() -> Any:
    """The fields transformers 5.2's Gated-DeltaNet constructors read, at toy sizes."""
    return SimpleNamespace(
        hidden_size=8,
        linear_num_value_heads=2,
        linear_num_key_heads=2,
        linear_key_head_dim=4,
        linear_value_head_dim=4,
        linear_conv_kernel_dim=4,
        hidden_act="silu",
        rms_norm_eps=1e-6,
        layer_types=["linear_attention"],
    )


def kernel_check(fast_path: bool | None, messages: Sequence[str], importable: str) -> Check:
    """Fails, in one line, when transformers reports its pure-torch Gated-DeltaNet fallback."""
    slow = [message for message in messages if FAST_PATH_MESSAGE in message]
    if slow or fast_path is False:
        said = slow[0].split(". ")[0] if slow else "its is_fast_path_available is False"
        return Check(
            "kernels",
            "fail",
            f"transformers reports the Gated-DeltaNet slow path ({said}); {importable}; install "
            "flash-linear-attention and causal-conv1d as docs/gpu.md says",
        )
    if fast_path:
        return Check("kernels", "pass", f"Gated-DeltaNet fast path ({importable})")
    detail = f"transformers names no Gated-DeltaNet fast path ({importable})"
    return Check("kernels", "note", detail)


def precision_check(load_in_4bit: bool, trained_on: str | None) -> Check:
    """The base Unsloth loaded (the checkpoint's base_model_name_or_path) against the run's."""
    asked = "4-bit" if load_in_4bit else "bf16"
    setting = f"[model] load_in_4bit = {str(load_in_4bit).lower()}"
    if not trained_on:
        return Check("precision", "note", f"asked {asked} ({setting}); the adapter names no base")
    four_bit = "4bit" in trained_on.lower().replace("-", "").replace("_", "")
    loaded = "a 4-bit base" if four_bit else "a 16-bit base"
    status: Status = "pass" if four_bit == load_in_4bit else "fail"
    detail = f"asked {asked} ({setting}); trained on {trained_on} ({loaded})"
    return Check("precision", status, detail)
