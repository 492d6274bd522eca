"""Prepare a process for importing OpenPipe ART 0.5.18: its transformers patch, its Megatron import.

1. `import art` imports torch and replaces `transformers.masking_utils._preprocess_mask_arguments`
   with a wrapper written for transformers 5.2 (ART's `[backend]` pin). Transformers calls that
   function positionally; from 5.2 to 5.24 its parameters changed in number and kind (not just in
   name), and under 5.24 every causal-LM forward in a patched process fails (`missing ...
   'layer_idx'`). The patch serves Qwen3.5's 3-D position ids inside ART's GPU backend, so
   `train.py` asks for it (`import_art_for_training`); everywhere else on the ART path a no-op
   stands in before art is imported (`training/art/__init__.py` installs it, so every
   `training.art` module can `import art`); processes off that path never import art at all.
   When asked for, the patch stays only on the transformers series ART pins and when it takes
   the same positional call as the function it replaces (`patch_fits`); otherwise it is undone.
   ART's Unsloth service runs in a child process that multiprocessing *spawns*: the child imports
   art afresh, so the decision reaches it through LEDGERGYM_ART_TRANSFORMERS_PATCH ("1" keep,
   "0" no-op), read by `install_art_guards` when the child imports `training.art` before art
   (train.py imports it at the top for this: a spawned child re-imports the main module).
2. Registering any model builds its config in `art/dev/get_model_config.py`, which imports
   `art.megatron.model_support` for one call, `default_target_modules_for_model`, a table
   lookup. That package's handlers import `megatron.core` and `megatron.bridge` at module level
   (the Qwen3.5 handler needs a megatron-bridge that no Python 3.11 release has). Where Megatron
   is not importable, `install_model_support_stand_in` puts a handlers module in front of them
   that carries each handler's registry key and vLLM-LoRA status and nothing else, so ART's real
   registry (its target-module tables) loads, and any use of a handler's Megatron code says why
   it is missing. LocalBackend and the Tinker backend use no handler; LedgerGym always passes
   explicit LoRA target modules.
3. ART's log-prob head computes a logged entropy with gradients, keeping three more
   vocabulary-sized tensors per token: `training.art.entropy_patch` computes it under no_grad,
   in this process and (by the same re-import) in the Unsloth service ART spawns.
"""

from __future__ import annotations

import importlib.util
import inspect
import os
import sys
import types
from typing import Any

PATCH_ENV = "LEDGERGYM_ART_TRANSFORMERS_PATCH"
_PATCH_MODULE = "art.transformers.patches"
# openpipe-art 0.5.18's [backend] extra pins transformers==5.2.0; its patch is written for that
ART_TRANSFORMERS_SERIES = "5.2"

_MODEL_SUPPORT = "art.megatron.model_support"
HANDLERS_MODULE = f"{_MODEL_SUPPORT}.handlers"
# The handler objects ART 0.5.18's registry imports: name -> (key, native_vllm_lora_status),
# as their classes in art/megatron/model_support/handlers/*.py define them (a test checks).
ART_HANDLERS: dict[str, tuple[str, str]] = {
    "DEFAULT_DENSE_HANDLER": ("default_dense", "disabled"),
    "QWEN3_DENSE_HANDLER": ("qwen3_dense", "validated"),
    "QWEN3_MOE_HANDLER": ("qwen3_moe", "validated"),
    "QWEN3_5_DENSE_HANDLER": ("qwen3_5_dense", "validated"),
    "QWEN3_5_MOE_HANDLER": ("qwen3_5_moe", "validated"),
}


def _no_op_patch() -> None:
    return None


class MegatronOnlyHandler:
    """Stands in for one of ART's Megatron model-support handlers: registry data only."""

    def __init__(self, key: str, native_vllm_lora_status: str) -> None:
        self.key = key
        self.native_vllm_lora_status = native_vllm_lora_status

    def __getattr__(self, name: str) -> Any:
        raise ModuleNotFoundError(
            f"ART's {self.key!r} model-support handler needs megatron-core and megatron-bridge "
            f"(asked for {name!r}); LedgerGym's backends do not use it (training/art/guard.py)"
        )


def install_art_guards() -> None:
    """Idempotent; the patch stand-in is a no-op once art has been imported."""
    from training.art.entropy_patch import install_entropy_patch

    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # never fetch the cost map
    install_model_support_stand_in()
    install_entropy_patch()  # 3. below: ART's log-prob head keeps 1 vocabulary row, not 4
    wanted = os.environ.get(PATCH_ENV) == "1"
    if wanted or "art" in sys.modules or _PATCH_MODULE in sys.modules:
        return
    stub = types.ModuleType(_PATCH_MODULE)
    stub.patch_preprocess_mask_arguments = _no_op_patch  # type: ignore[attr-defined]
    sys.modules[_PATCH_MODULE] = stub


def megatron_importable() -> bool:
    return _importable("megatron.core") and _importable("megatron.bridge")


def install_model_support_stand_in() -> bool:
    """Whether the stand-in is (now) in place; never replaces real, already imported handlers."""
    current = sys.modules.get(HANDLERS_MODULE)
    if current is not None:
        return isinstance(current, _StandInModule)
    if _MODEL_SUPPORT in sys.modules or megatron_importable():
        return False
    module = _StandInModule(HANDLERS_MODULE, "ART's model-support handlers without Megatron")
    for name, (key, status) in ART_HANDLERS.items():
        setattr(module, name, MegatronOnlyHandler(key, status))
    sys.modules[HANDLERS_MODULE] = module
    return True


class _StandInModule(types.ModuleType):
    """The module type of LedgerGym's handlers stand-in, so it can be told from ART's."""


def patch_fits(
    transformers_version: str, original: inspect.Signature, patched: inspect.Signature
) -> bool:
    """Keep ART's patch only on the transformers series it was written for, taking the same call.

    Transformers calls the patched function positionally, so what must agree is the number of
    parameters, their kinds and which have defaults; names may differ (ART's wrapper says
    `input_embeds` where transformers 5.2 says `inputs_embeds`, and that works).
    """
    series = ".".join(transformers_version.split(".")[:2])
    return series == ART_TRANSFORMERS_SERIES and _call_shape(original) == _call_shape(patched)


def _call_shape(signature: inspect.Signature) -> list[tuple[inspect._ParameterKind, bool]]:
    return [(p.kind, p.default is p.empty) for p in signature.parameters.values()]


def import_art_for_training() -> types.ModuleType:
    """For train.py on a GPU box: import art with its patch where it fits, else without it.

    Call before anything imports art. The decision is left in PATCH_ENV for the processes ART
    spawns (see the module docstring)."""
    os.environ[PATCH_ENV] = "1"
    install_model_support_stand_in()
    stub = sys.modules.get(_PATCH_MODULE)
    if "art" not in sys.modules and stub is not None and getattr(stub, "__file__", None) is None:
        del sys.modules[_PATCH_MODULE]  # our no-op stands in: take it away
    import transformers
    from transformers import masking_utils

    original = masking_utils._preprocess_mask_arguments
    import art

    patched = masking_utils._preprocess_mask_arguments
    if patched is not original and not patch_fits(
        transformers.__version__, inspect.signature(original), inspect.signature(patched)
    ):
        masking_utils._preprocess_mask_arguments = original
        os.environ[PATCH_ENV] = "0"
    return art


def transformers_patch_kept() -> bool:
    """After `import_art_for_training`: whether ART's transformers patch is in force."""
    return os.environ.get(PATCH_ENV) == "1"


def _importable(name: str) -> bool:
    """Without importing it; a dotted name whose parent package is absent is missing too."""
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False
