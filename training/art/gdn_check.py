"""Are fla's Gated-DeltaNet gradients right on this GPU? `python -m training.art.gdn_check`

Runs fla's Triton `chunk_gated_delta_rule` forward and backward at Qwen3.5's layer shape (fp16,
T = 2,048, 16 key / 32 value heads of size 128) and compares o, dq, dk, dv, dg and dbeta with an
fp32 token-by-token reference (training.art.gdn_reference), in fla's own test metric and at
fla's own test tolerances, which are fp16 ones (fla's tests/ops/test_gdn.py); `--dtype bf16`
runs the precision training uses, at the stated looser bf16 tolerances (gdn_reference).
Why: fla-core 0.4.1 picks a backward tile (BK=64 for head size 128)
that Triton 3.4-3.7.0 miscompiles on SM90 (H100/H200), corrupting dk and dg silently (fla issue
#640); constraints/gpu-py311.txt pins 0.4.2. Needs torch with CUDA, Triton and fla-core (plus
einops) only: scripts/gdn_check.sh runs it on a bare machine. Exit 0: within tolerance; 1: a
value past it (the lines say which); 2: no CUDA GPU or no fla here, in one line.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import sys
import time
from collections.abc import Sequence
from typing import Any

from env.cli import EXIT_FAILED, Parser, UsageError, fail


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = Parser(
        prog="python -m training.art.gdn_check",
        description=(__doc__ or "").split("\n\n")[1],
    )
    parser.add_argument("--tokens", type=int, default=2048, help="sequence length (2048)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--dtype",
        choices=("fp16", "bf16"),
        default="fp16",
        help="fp16 (fla's own test precision and tolerances) or bf16 (looser, stated)",
    )
    parser.add_argument("--json", action="store_true", help="one JSON line (the GPU smoke)")
    args = parser.parse_args(argv)
    if args.tokens < 1:
        parser.error("--tokens must be positive")
    return args


def cannot_run() -> str | None:
    """Why this machine cannot run the check, in one line; None when it can."""
    try:
        import torch
    except ImportError:
        return "the GDN check needs torch with CUDA (not installed here)"
    if not torch.cuda.is_available():
        return (
            "the GDN check needs a CUDA GPU and torch sees none (it compares fla's Triton kernels)"
        )
    try:
        import fla.ops.gated_delta_rule  # noqa: F401
    except ImportError as exc:
        return (
            f"the GDN check needs fla-core and einops (scripts/gdn_check.sh installs them): {exc}"
        )
    return None


def versions() -> dict[str, str]:
    import torch

    found = {}
    for name in ("torch", "triton", "fla-core", "flash-linear-attention", "einops"):
        try:
            found[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            found[name] = "absent"
    major, minor = torch.cuda.get_device_capability()
    found["gpu"] = f"{torch.cuda.get_device_name()} (SM{major}{minor})"
    found["cuda"] = str(torch.version.cuda)
    return found


DTYPES = {"fp16": "float16", "bf16": "bfloat16"}


def run_check(tokens: int, seed: int, dtype: str = "fp16") -> dict[str, Any]:
    """fla against the fp32 reference on the GPU; the figures as one dict."""
    from dataclasses import replace

    import torch
    from fla.ops.gated_delta_rule import chunk_gated_delta_rule

    from training.art.gdn_reference import QWEN35, compare, make_inputs, recurrent_reference

    def fla_kernel(q: Any, k: Any, v: Any, g: Any, beta: Any) -> Any:
        out, _ = chunk_gated_delta_rule(q, k, v, g, beta, use_qk_l2norm_in_kernel=True)
        return out

    shape = replace(QWEN35, tokens=tokens)
    torch_dtype = getattr(torch, DTYPES[dtype])
    inputs = make_inputs(shape, dtype=torch_dtype, device="cuda", seed=seed)
    started = time.monotonic()
    comparison = compare(fla_kernel, recurrent_reference, inputs)
    torch.cuda.synchronize()
    return {
        "shape": vars(shape),
        "dtype": DTYPES[dtype],
        **comparison.as_json(),
        "tolerances": comparison.tolerances,
        "lines": comparison.lines(),
        "seconds": round(time.monotonic() - started, 1),
        "versions": versions(),
    }


def render(result: dict[str, Any]) -> str:
    shape, v = result["shape"], result["versions"]
    lines = [
        f"GDN gradient check: fla chunk_gated_delta_rule vs fp32 recurrent reference, "
        f"{result['dtype']}, B={shape['batch']} T={shape['tokens']} "
        f"heads {shape['key_heads']}k/{shape['value_heads']}v x {shape['head_dim']}",
        f"  {v['gpu']}, CUDA {v['cuda']}; torch {v['torch']}, triton {v['triton']}, "
        f"fla-core {v['fla-core']}, einops {v['einops']}",
        "  relative error (RMS of difference / RMS of reference):",
        *result["lines"],
        f"  {result['seconds']} s",
    ]
    failed = result["failed"]
    lines.append(f"FAILED: {', '.join(failed)} past tolerance" if failed else "within tolerance")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = parse_args(argv)
    except UsageError as exc:
        return fail(exc)
    reason = cannot_run()
    if reason:
        return fail(reason)
    result = run_check(args.tokens, args.seed, args.dtype)
    print(json.dumps(result, sort_keys=True) if args.json else render(result))
    return EXIT_FAILED if result["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
