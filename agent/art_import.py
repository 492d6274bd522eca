"""Import OpenPipe ART without its transformers patch, except where training needs it.

`import art` (0.5.18) imports torch and replaces
`transformers.masking_utils._preprocess_mask_arguments` with a wrapper written for an older
signature; under transformers 5.24 every causal-LM forward in the same process then fails
(`missing ... 'layer_idx'`). The patch serves Qwen3.5's 3-D position ids inside ART's GPU
backend, so `train.py` asks for it (LEDGERGYM_ART_TRANSFORMERS_PATCH=1); everywhere else it is
replaced by a no-op before art is imported, which also keeps torch out of eval start-up. Even
when asked for, a patch whose signature does not match the installed transformers is undone.
LedgerGym modules import art through this one: `from agent.art_import import art`.
"""

from __future__ import annotations

import inspect
import os
import sys
import types

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # art imports litellm: stay offline
_PATCH_MODULE = "art.transformers.patches"
WANT_PATCH = os.environ.get("LEDGERGYM_ART_TRANSFORMERS_PATCH") == "1"


def _no_op_patch() -> None:
    return None


if not WANT_PATCH and "art" not in sys.modules:
    _stub = types.ModuleType(_PATCH_MODULE)
    _stub.patch_preprocess_mask_arguments = _no_op_patch  # type: ignore[attr-defined]
    sys.modules[_PATCH_MODULE] = _stub

_original = None
if WANT_PATCH:
    try:
        from transformers import masking_utils

        _original = masking_utils._preprocess_mask_arguments
    except ImportError:
        pass

import art  # noqa: E402

if _original is not None:
    from transformers import masking_utils

    _patched = masking_utils._preprocess_mask_arguments
    _names = list(inspect.signature(_original).parameters)
    if list(inspect.signature(_patched).parameters) != _names:
        masking_utils._preprocess_mask_arguments = _original

__all__ = ["WANT_PATCH", "art"]
