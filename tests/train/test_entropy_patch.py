"""training.art.entropy_patch against ART 0.5.18's own log-prob head, on CPU.

Same log-probs and gradients as `art.unsloth.train._calculate_logprobs`, the same entropy up
to rounding, one saved vocabulary-sized tensor per token instead of four (counted with
torch's saved-tensor hooks), and the patch in force in a process that multiprocessing spawns.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import training.art  # noqa: F401  (the guards, as every ART entry point imports them)
from training.art.entropy_patch import logprobs_with_detached_entropy

art_train = pytest.importorskip("art.unsloth.train")
REPO = Path(__file__).resolve().parents[2]
VOCAB, HIDDEN, CHUNK = 96, 16, 8


def art_original():
    """ART's function as shipped: the module attribute is patched, its code object is not."""
    from importlib import util

    spec = util.find_spec("art.unsloth.train")
    assert spec is not None and spec.origin is not None
    source = Path(spec.origin).read_text(encoding="utf-8")
    start = source.index("def _calculate_logprobs(")
    end = source.index("\ndef ", start + 10)
    namespace: dict = {"torch": torch}
    exec(compile(source[start:end], spec.origin, "exec"), namespace)
    return namespace["_calculate_logprobs"]


def inputs(dtype=torch.float32, seed=0):
    generator = torch.Generator().manual_seed(seed)
    hidden = torch.randn(2, 3 * CHUNK, HIDDEN, generator=generator, dtype=dtype)
    head = torch.randn(HIDDEN, VOCAB, generator=generator, dtype=dtype) / HIDDEN**0.5
    ids = torch.randint(0, VOCAB, (2, 3 * CHUNK), generator=generator)
    return hidden.requires_grad_(), head.requires_grad_(), ids


def run(function, dtype=torch.float32):
    hidden, head, ids = inputs(dtype)
    log_probs, entropy = function(head, hidden, ids, CHUNK)
    weights = torch.linspace(-1, 1, log_probs.numel()).reshape(log_probs.shape).to(dtype)
    (log_probs * weights).sum().backward()
    return log_probs.detach(), entropy.detach(), hidden.grad, head.grad


def test_the_patched_head_gives_arts_log_probs_gradients_and_entropy():
    ours, theirs = run(logprobs_with_detached_entropy), run(art_original())
    assert torch.equal(ours[0], theirs[0])  # the same operations: bit for bit
    assert torch.allclose(ours[1], theirs[1], atol=1e-5)
    assert torch.allclose(ours[2], theirs[2]) and torch.allclose(ours[3], theirs[3])


def test_in_bf16_the_entropy_agrees_within_bf16_rounding():
    ours, theirs = (
        run(logprobs_with_detached_entropy, torch.bfloat16),
        run(art_original(), torch.bfloat16),
    )
    assert torch.equal(ours[0], theirs[0])
    assert torch.allclose(ours[1].float(), theirs[1].float(), rtol=0.02, atol=0.03)


def saved_vocabulary_rows(function) -> float:
    """Distinct vocabulary-sized tensors autograd keeps per token for the backward (a tensor
    saved by two operations is one tensor in memory)."""
    hidden, head, ids = inputs()
    kept: dict[tuple[int, tuple[int, ...]], int] = {}

    def pack(tensor):
        if tensor.dim() == 3 and tensor.shape[-1] == VOCAB:
            kept[(tensor.data_ptr(), tuple(tensor.shape))] = tensor.numel()
        return tensor

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
        function(head, hidden, ids, CHUNK)
    return sum(kept.values()) / (ids.numel() * VOCAB)


def test_the_patched_head_keeps_one_vocabulary_row_per_token_where_art_keeps_four():
    assert saved_vocabulary_rows(art_original()) == pytest.approx(4.0)
    assert saved_vocabulary_rows(logprobs_with_detached_entropy) == pytest.approx(1.0)


def test_importing_training_art_patches_arts_module_in_this_process():
    assert art_train._calculate_logprobs is logprobs_with_detached_entropy


@pytest.mark.timeout(600)
def test_a_process_art_spawns_imports_the_patched_module(tmp_path):
    from tests.train.entropy_child import SPAWN_MAIN

    main = tmp_path / "spawn_main.py"
    main.write_text(SPAWN_MAIN, encoding="utf-8")
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
    }
    env.pop("LEDGERGYM_ART_ENTROPY", None)
    done = subprocess.run(
        [sys.executable, str(main)], cwd=REPO, env=env, capture_output=True, text=True, timeout=560
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "(True, True)"
