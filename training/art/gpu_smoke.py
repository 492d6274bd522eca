"""One-shot GPU smoke test of the ART path: the first command to run on a new GPU machine.

    python -m training.art.gpu_smoke --run binary-01 [--base-model Qwen/Qwen3.5-4B]

It trains a throw-away copy of the run (`<run>-smoke`, under --path, deleted first) and checks,
in order, stopping at the first failure:
  kernels    transformers' Gated-DeltaNet layers (Qwen3.5, Qwen3-Next) take the fast path:
             flash-linear-attention and causal-conv1d, not the pure-torch fallback
  gdn        fla's Gated-DeltaNet forward and backward at Qwen3.5's shapes against an fp32
             reference (python -m training.art.gdn_check): every gradient within tolerance
  register   LocalBackend starts (Unsloth + ART's vLLM) and the model registers
  template   the chat template: whether it mentions preserve_thinking / enable_thinking, what
             ART will force when it renders training tokens, and whether vLLM requests get
             the same chat-template settings
  rollout    one group of 2 rollouts on the run's first training scenario; at least one
             assistant turn must carry a tool_call that vLLM's tool parser parsed
  tokens     for one trajectory: vLLM's prompt token ids of every turn (its /tokenize with the
             same messages, tools and settings) plus the sampled ids, against the tokens ART
             packs for training; they must agree position for position
  train      one backend.train step (a gradient step even when the group's rewards are equal)
  precision  the base Unsloth trained on is the run's `[model] load_in_4bit` (bf16 or 4-bit)
  checkpoint vLLM serves `<run>-smoke@1` and samples from it
and prints peak GPU memory (nvidia-smi, all processes) and the train step's time; the figures
land in `<path>/<project>/models/<run>-smoke/ledgergym_smoke.json`, whose step time
`train.py --check` uses for its budget. Budget: --timeout-s (600 s); the very first run on a
machine also builds ART's vLLM runtime and downloads the model: pass --timeout-s 1800.
Exit 0: every check passed; 1: a check failed (the report says which); 2: this machine cannot
run it (no CUDA GPU, missing packages) or a bad argument, in one line.

Everything that can be checked without a GPU is a pure function tested on CPU: the arguments
here, the template check, the token comparison, nvidia-smi parsing and the report in
`training.art.gpu_smoke_checks`. The GPU part is `training.art.gpu_smoke_device`, imported
only once the machine has passed `training.art.backends.missing_requirements`.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from env.cli import EXIT_FAILED, Parser, UsageError, fail
from training.art import run_state
from training.art.gpu_smoke_checks import render_report, smoke_record
from training.runs import RunConfig, RunConfigError, load_run_config

SMOKE_SUFFIX = run_state.SMOKE_SUFFIX
# one group of this many rollouts, each cut short: enough to see tool calls, not a whole episode
SMOKE_GROUP_SIZE = 2
SMOKE_MAX_TURNS = 6
SMOKE_MAX_TOKENS = 1024


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    doc = __doc__ or ""
    parser = Parser(
        prog="python -m training.art.gpu_smoke",
        description=doc.split("\n\nEverything")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--run", required=True, help="a run in runs/ (its LoRA, loss, rollout)")
    parser.add_argument("--base-model", help="another base model than the run's (a HF id)")
    parser.add_argument(
        "--path", type=Path, default=Path(run_state.SMOKE_PATH), help="where the smoke model lives"
    )
    parser.add_argument("--timeout-s", type=float, default=600.0, help="the whole smoke's budget")
    args = parser.parse_args(argv)
    if args.timeout_s <= 0:
        parser.error("--timeout-s must be positive")
    return args


def smoke_run(run: RunConfig, base_model: str | None, path: Path) -> RunConfig:
    """The run's settings under another name and path: the smoke never touches the run itself."""
    if run.trainer != "art":
        raise RunConfigError(f"run {run.name} uses trainer {run.trainer!r}; the smoke checks 'art'")
    if run.backend.kind != "local":
        raise RunConfigError(
            f"run {run.name} uses backend {run.backend.kind!r}; the smoke checks 'local' "
            "(one GPU on this machine)"
        )
    backend = run.backend.model_copy(update={"path": str(path), "wandb": False})
    rollout = run.rollout.model_copy(
        update={
            "max_turns": min(run.rollout.max_turns, SMOKE_MAX_TURNS),
            "max_tokens": min(run.rollout.max_tokens, SMOKE_MAX_TOKENS),
        }
    )
    grpo = run.grpo.model_copy(update={"group_size": SMOKE_GROUP_SIZE, "groups_per_step": 1})
    return run.model_copy(
        update={
            "name": run.name + SMOKE_SUFFIX,
            "base_model": base_model or run.base_model,
            "backend": backend,
            "rollout": rollout,
            "grpo": grpo,
            "cold_start": None,
        }
    )


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = parse_args(argv)
        run = smoke_run(load_run_config(args.run), args.base_model, args.path)
    except (UsageError, RunConfigError) as exc:
        return fail(exc)
    from training.art.backends import keep_wandb_off, missing_requirements

    missing = missing_requirements(run)
    if missing:
        return fail(f"the GPU smoke cannot run here: {missing}")
    keep_wandb_off(run)  # the smoke's copy has [backend] wandb = false
    from training.art.guard import import_art_for_training

    import_art_for_training()  # before anything imports art, as train.py does
    from training.art.gpu_smoke_device import run_smoke  # the GPU side: ART, torch, vLLM

    report = run_smoke(run, timeout_s=args.timeout_s)
    print(render_report(report, f"GPU smoke of {args.run} ({run.base_model}) as {run.name}"))
    record = run_state.write_smoke_record(run_state.model_dir(run), smoke_record(run, report))
    print(f"figures saved to {record} (train.py --check reads the step time)")
    return EXIT_FAILED if report.failed else 0


if __name__ == "__main__":
    sys.exit(main())
