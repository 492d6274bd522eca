"""GPU memory a run's longest row needs, and `--check`'s word when the device is smaller.

Derivation (third review of ART 0.5.18 / Unsloth): ART computes the new log-probs of a whole row
at once, and that head holds about 1.9 GiB per 1,024 tokens until backward; on top sit the bf16
base weights of Qwen3.5-4B (about 9 GiB), the LoRA with its optimizer state (under 1 GiB),
checkpointed activations, the CUDA contexts and what ART's vLLM keeps while it sleeps during the
update: 14 to 24 GiB in all. So a row of T tokens needs 1.9 * T / 1024 + 14..24 GiB (32k: about
75-85 GiB). No torch import: the device size comes from nvidia-smi.
"""

from __future__ import annotations

import shutil
import subprocess

HEAD_GIB_PER_1K_TOKENS = 1.9
FIXED_GIB = (14.0, 24.0)  # weights, LoRA + optimizer, activations, contexts, vLLM asleep


def needed_gib(max_seq_length: int) -> tuple[float, float]:
    head = HEAD_GIB_PER_1K_TOKENS * max_seq_length / 1024
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


def memory_line(max_seq_length: int, total_gib: float | None) -> str:
    low, high = needed_gib(max_seq_length)
    need = f"a row of {max_seq_length:,} tokens needs ~{low:.0f}-{high:.0f} GiB"
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
