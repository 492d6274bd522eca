"""One-shot GPU smoke test of the ART path: the first command to run on a new GPU machine.

    python -m training.art.gpu_smoke --run binary-01 [--base-model Qwen/Qwen3.5-4B]

It trains a throw-away copy of the run (`<run>-smoke`, under --path, deleted first) and runs
these phases in order, each within its own budget (seconds) and the smoke's --timeout-s,
stopping at the first failure:
{phases}
and prints peak GPU memory (nvidia-smi, all processes; the long row's own peak) and the times;
the figures land in `<path>/<project>/models/<run>-smoke/ledgergym_smoke.json` with one line per
phase, and `train.py --check` takes its seconds per step from the long-row and concurrency
phases. Budget: --timeout-s (1800 s): a first run, which also builds ART's vLLM runtime and
downloads the model, stays under 30 minutes; a re-run skips `gdn` when the last one passed it
with the same torch, Triton and fla-core (and the builds and downloads are cached).
Exit 0: every check passed; 1: a check failed (the report says which); 2: this machine cannot
run it (no CUDA GPU, missing packages) or a bad argument, in one line.

Everything that can be checked without a GPU is a pure function tested on CPU: the arguments
here, the template check, the token comparison, nvidia-smi parsing and the report in
`training.art.gpu_smoke_checks` and `training.art.gpu_smoke_phases`. The GPU part is
`training.art.gpu_smoke_device` (and its long-run phases, `training.art.gpu_smoke_long_device`,
which also run on CPU with the backend double in the tests), imported only once the machine
has passed `training.art.backends.missing_requirements`.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from env.cli import EXIT_FAILED, Parser, UsageError, fail
from training.art import run_state
from training.art.gpu_smoke_checks import render_report, smoke_record
from training.art.gpu_smoke_phases import phase_help
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
        description=doc.split("\n\nEverything")[0].format(phases=phase_help()),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--run", required=True, help="a run in runs/ (its LoRA, loss, rollout)")
    parser.add_argument("--base-model", help="another base model than the run's (a HF id)")
    parser.add_argument(
        "--path", type=Path, default=Path(run_state.SMOKE_PATH), help="where the smoke model lives"
    )
    parser.add_argument(
        "--timeout-s", type=float, default=1800.0, help="the whole smoke's budget (1800 s)"
    )
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
