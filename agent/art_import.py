"""Import OpenPipe ART without its transformers patch breaking CPU models in this process.

`import art` (0.5.18) replaces `transformers.masking_utils._preprocess_mask_arguments` with a
wrapper written for an older signature; under transformers 5.24 every causal-LM forward in
the same process then fails (`missing ... 'layer_idx'`). The patch only matters inside ART's
own GPU backend process, which imports art itself, so here it is undone when the signatures
differ. LedgerGym modules import art through this one: `from agent.art_import import art`.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Callable
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # art imports litellm: stay offline

_original: Callable[..., Any] | None
try:
    from transformers import masking_utils
except ImportError:  # the [agent] extra alone has no transformers: nothing to protect
    masking_utils = None  # type: ignore[assignment]
    _original = None
else:
    _original = masking_utils._preprocess_mask_arguments

import art  # noqa: E402

if masking_utils is not None and _original is not None:
    _patched = masking_utils._preprocess_mask_arguments
    if _patched is not _original and list(inspect.signature(_patched).parameters) != list(
        inspect.signature(_original).parameters
    ):
        masking_utils._preprocess_mask_arguments = _original

__all__ = ["art"]
