"""GPU memory a run's longest row needs, and `--check`'s word when the device is smaller.

Derivation (third and fourth reviews of ART 0.5.18 / Unsloth): ART computes the new log-probs of
a whole row at once, and autograd keeps vocabulary-sized tensors per token of that head until
the backward: four in ART as shipped (1.9 GiB per 1,024 tokens with Qwen3.5's ~248k vocabulary
in bf16, i.e. ~0.475 GiB per row), one with `training.art.entropy_patch` (the logged entropy
computed under no_grad; counted with saved-tensor hooks in tests/train/test_entropy_patch.py).
On top sit the bf16 base weights of Qwen3.5-4B (about 9 GiB), the LoRA with its optimizer
state (under 1 GiB), checkpointed activations, the CUDA contexts and what ART's vLLM keeps while
it sleeps during the update: 14 to 24 GiB in all. So a row of T tokens needs
rows x 0.475 x T / 1024 + 14..24 GiB: 32k tokens about 29-39 GiB patched, 75-85 GiB not.
No torch import: the device size comes from nvidia-smi.
"""

from __future__ import annotations

import os
import shutil
import subprocess

GIB_PER_1K_TOKENS_PER_ROW = 0.475  # one [1,024 x ~248k] bf16 tensor
ART_HEAD_ROWS = 4  # logits, exp, and both factors of the entropy product
PATCHED_HEAD_ROWS = 1  # the logits logsumexp needs (training.art.entropy_patch)
FIXED_GIB = (14.0, 24.0)  # weights, LoRA + optimizer, activations, contexts, vLLM asleep


def head_rows() -> int:
    """The rows this process's training will keep: the patch unless LEDGERGYM_ART_ENTROPY=art."""
    from training.art.entropy_patch import ENTROPY_ENV

    return ART_HEAD_ROWS if os.environ.get(ENTROPY_ENV) == "art" else PATCHED_HEAD_ROWS


def needed_gib(max_seq_length: int, rows: int = PATCHED_HEAD_ROWS) -> tuple[float, float]:
    head = rows * GIB_PER_1K_TOKENS_PER_ROW * max_seq_length / 1024
    return head + FIXED_GIB[0], head + FIXED_GIB[1]


def device_gib() -> float | None:
    """The first GPU's total memory (nvidia-smi), or None without one."""
    if not shutil.which("nvidia-smi"):
        return None
    command = ["nvidia-smi", "--query-gpu=memory.total", "--format=csv,noheader,nounits"]
    try:
        out = subprocess.run(command, capture_output=True, text=True, timeout=10).stdout
        return float(out.split()[0]) / 1024
    except (OSError, subprocess.SubprocessError, ValueError, IndexError):
        return None


def memory_line(max_seq_length: int, total_gib: float | None, rows: int | None = None) -> str:
    rows = head_rows() if rows is None else rows
    low, high = needed_gib(max_seq_length, rows)
    head = "entropy under no_grad" if rows == PATCHED_HEAD_ROWS else "ART's head as shipped"
    need = f"a row of {max_seq_length:,} tokens needs ~{low:.0f}-{high:.0f} GiB ({head})"
    if total_gib is None:
        return f"{need} (docs/gpu.md); no GPU seen here"
    if total_gib < low:
        return (
            f"WARNING: this GPU has {total_gib:.0f} GiB; {need}: lower [grpo] max_seq_length "
            "or use a larger GPU (docs/gpu.md's table)"
        )
    if total_gib < high:
        return f"warning: this GPU has {total_gib:.0f} GiB; {need}: the longest rows may not fit"
    return f"{need}; this GPU has {total_gib:.0f} GiB"
