"""Keep OpenPipe ART's transformers patch out of this process, except where training needs it.

`import art` (0.5.18) imports torch and replaces
`transformers.masking_utils._preprocess_mask_arguments` with a wrapper written for an older
signature; under transformers 5.24 every causal-LM forward in the same process then fails
(`missing ... 'layer_idx'`). The patch serves Qwen3.5's 3-D position ids inside ART's GPU
backend, so `train.py` asks for it (LEDGERGYM_ART_TRANSFORMERS_PATCH=1); everywhere else it is
replaced by a no-op before art is imported (`agent/__init__.py` does that), which also keeps
torch out of eval start-up. Even when asked for, a patch whose signature does not match the
installed transformers is undone.
"""

from __future__ import annotations

import inspect
import os
import sys
import types

_PATCH_MODULE = "art.transformers.patches"


def _no_op_patch() -> None:
    return None


def install_art_guards() -> None:
    """Idempotent; a no-op once art has been imported."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # never fetch the cost map
    wanted = os.environ.get("LEDGERGYM_ART_TRANSFORMERS_PATCH") == "1"
    if wanted or "art" in sys.modules or _PATCH_MODULE in sys.modules:
        return
    stub = types.ModuleType(_PATCH_MODULE)
    stub.patch_preprocess_mask_arguments = _no_op_patch  # type: ignore[attr-defined]
    sys.modules[_PATCH_MODULE] = stub


def import_art_for_training() -> types.ModuleType:
    """For train.py on a GPU box: import art with its patch, unless it cannot fit.

    Call before anything imports art; processes the backend forks then inherit the patch."""
    os.environ["LEDGERGYM_ART_TRANSFORMERS_PATCH"] = "1"
    stub = sys.modules.get(_PATCH_MODULE)
    if "art" not in sys.modules and stub is not None and getattr(stub, "__file__", None) is None:
        del sys.modules[_PATCH_MODULE]  # our no-op stands in: take it away
    from transformers import masking_utils

    original = masking_utils._preprocess_mask_arguments
    import art

    patched = masking_utils._preprocess_mask_arguments
    if list(inspect.signature(patched).parameters) != list(inspect.signature(original).parameters):
        masking_utils._preprocess_mask_arguments = original
    return art
