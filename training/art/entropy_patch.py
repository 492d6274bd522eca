"""ART's log-prob head without the three vocabulary-sized tensors it keeps only for a metric.

ART 0.5.18 computes, chunk by chunk, the new log-probs of every trained token
(`art/unsloth/train.py`, `_calculate_logprobs`) and, from the same logits, each token's entropy,
which the loss only logs (`loss/entropy`; `art/loss.py` never puts it in the policy loss). Both
run with gradients, so autograd keeps four [tokens x vocabulary] tensors per chunk until the
backward: the logits (for logsumexp), the exp, and both factors of the entropy product. With
Qwen3.5's ~248k vocabulary in bf16 that is about 1.9 GiB per 1,024 tokens: a 32k-token row
needs ~61 GiB for the head alone and does not fit an 80 GB H100 (docs/gpu.md, section 6).
Computed under `no_grad`, the entropy keeps nothing: one tensor per token is left (measured
with saved-tensor hooks, tests/train/test_entropy_patch.py), ~0.5 GiB per 1,024 tokens.

The replacement computes the same log-probs the same way (a test compares values and
gradients with ART's own function on CPU) and the entropy as logsumexp - sum(p * logits) from
detached logits. It has to reach the process that trains: ART's Unsloth service runs in a child
that multiprocessing *spawns*, which imports art afresh. So `install_entropy_patch` (called by
`training.art.guard.install_art_guards`, i.e. by importing `training.art`, which train.py and
every training.art entry point do at the top, and a spawned child re-imports the main module
before anything else) patches `art.unsloth.train` when it is already imported, and otherwise
puts an import hook in front of it that patches the module as soon as it has been executed.
LEDGERGYM_ART_ENTROPY=art leaves ART's function alone (and is inherited by ART's children).
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import inspect
import os
import sys
import types
from collections.abc import Sequence
from typing import Any

ART_TRAIN_MODULE = "art.unsloth.train"
TARGET = "_calculate_logprobs"
ENTROPY_ENV = "LEDGERGYM_ART_ENTROPY"  # "no_grad" (the default) or "art" (ART's own head)
MARK = "_ledgergym_entropy_no_grad"  # set on the module once patched
ART_PARAMETERS = ("lm_head_t", "hidden_states", "next_input_ids", "chunk_size")


def logprobs_with_detached_entropy(
    lm_head_t: Any, hidden_states: Any, next_input_ids: Any, chunk_size: int
) -> tuple[Any, Any]:
    """(log-probs [B, S] with gradients, entropy [B, S] without), chunked over S like ART's."""
    import torch

    batch, length, _ = hidden_states.shape
    dtype, device = hidden_states.dtype, hidden_states.device
    head = lm_head_t.to(dtype)
    log_probs = torch.empty((batch, length), dtype=dtype, device=device)
    entropy = torch.empty((batch, length), dtype=dtype, device=device)
    for start in range(0, length, chunk_size):
        end = start + chunk_size
        logits = torch.matmul(hidden_states[:, start:end, :], head)  # [B, C, V]
        picked = torch.gather(logits, -1, next_input_ids[:, start:end].unsqueeze(-1)).squeeze(-1)
        normaliser = torch.logsumexp(logits, dim=-1)
        log_probs[:, start:end] = picked - normaliser
        with torch.no_grad():  # a logged metric: nothing of it is kept for the backward
            plain = logits.detach()
            weights = torch.softmax(plain, dim=-1)
            entropy[:, start:end] = normaliser.detach() - (weights * plain).sum(dim=-1)
        del logits, picked, normaliser
    return log_probs, entropy


def _fits(function: Any) -> bool:
    """ART's function has the parameters the replacement takes (a changed ART is left alone)."""
    try:
        names = tuple(inspect.signature(function).parameters)
    except (TypeError, ValueError):
        return False
    return names == ART_PARAMETERS


def patch_module(module: types.ModuleType) -> bool:
    """Replaces ART's head in `module`; False (and ART's left) when it does not fit."""
    if getattr(module, MARK, False):
        return True
    if not _fits(getattr(module, TARGET, None)):
        return False
    setattr(module, TARGET, logprobs_with_detached_entropy)
    setattr(module, MARK, True)
    return True


def is_patched() -> bool:
    module = sys.modules.get(ART_TRAIN_MODULE)
    return bool(module is not None and getattr(module, MARK, False))


class _PatchingLoader(importlib.abc.Loader):
    def __init__(self, inner: importlib.abc.Loader) -> None:
        self.inner = inner

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType | None:
        return self.inner.create_module(spec)

    def exec_module(self, module: types.ModuleType) -> None:
        self.inner.exec_module(module)
        patch_module(module)


class _PatchOnImport(importlib.abc.MetaPathFinder):
    """Finds `art.unsloth.train` with the other finders and patches it once executed."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: types.ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != ART_TRAIN_MODULE:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None and spec.loader is not None:
                spec.loader = _PatchingLoader(spec.loader)
                return spec
        return None


def install_entropy_patch() -> bool:
    """Idempotent; whether the patch is (or will be, on import) in force in this process."""
    if os.environ.get(ENTROPY_ENV, "no_grad") == "art":
        return False
    module = sys.modules.get(ART_TRAIN_MODULE)
    if module is not None:
        return patch_module(module)
    if not any(isinstance(finder, _PatchOnImport) for finder in sys.meta_path):
        sys.meta_path.insert(0, _PatchOnImport())
    return True
