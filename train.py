"""Train a LedgerGym agent: one named run from runs/, GRPO + LoRA with ART (GPU) or TRL (CPU).

    python train.py --run binary-01 --check      # the plan, its cost and budget, on any machine
    python train.py --run binary-01              # train; rerun the same command to resume
    python train.py --run binary-01 --export exports/binary-01 [--step 120]
    python train.py --run cpu-smoke              # the TRL path: a real run on a laptop CPU
    torchrun --standalone --nproc_per_node 2 train.py cpu-smoke   # the TRL path on 2 processes

The recipe, top to bottom: load the run -> order its data -> check this machine -> backend and
model -> resume -> (cold start) -> GRPO steps with validation -> stop at max_steps or at the
wall clock, after a checkpoint. The loop itself is `training.art.loop.train` (the tests drive
it with a fake backend). docs/gpu.md: GPU setup, a full experiment, evaluating a checkpoint.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import os
import sys
from collections.abc import Sequence
from pathlib import Path

# Only light imports up here: --check and --export must run without torch, ART or a GPU.
# `training.art` installs ART's import guards (no ART import): here at the top because a process
# ART spawns re-imports this file before it imports art (training/art/guard.py).
import training.art  # noqa: F401
from env.cli import Parser, fail, run_command
from training.data_order import DataPlan, DataPlanError, plan_data
from training.runs import RunConfig, RunConfigError, load_run_config

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # ART imports litellm: stay offline

TRL_MODULES = ("torch", "transformers", "trl", "peft", "datasets")


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = Parser(prog="python train.py", description=__doc__.splitlines()[0])
    # which run (also as the one positional argument: torchrun reads `--run` as its `--run-path`)
    parser.add_argument("--run", help="a name in runs/ (e.g. binary-01) or a .toml")
    parser.add_argument("run_name", nargs="?", metavar="RUN", help="the same, without --run")
    # what to do instead of training
    parser.add_argument("--check", action="store_true", help="print the plan and budget; exit")
    parser.add_argument("--export", type=Path, metavar="DIR", help="copy a checkpoint's adapter")
    parser.add_argument("--step", type=int, help="with --export: this checkpoint, not the latest")
    # what --check prices the run at
    parser.add_argument(
        "--usd-per-hour", type=float, default=4.3, help="with --check: the GPU's price (4.3)"
    )
    parser.add_argument(
        "--budget-usd", type=float, default=300.0, help="with --check: warn past this (300)"
    )
    # how far, and on what terms
    parser.add_argument("--max-steps", type=int, help="stop at this GRPO step (below the run's)")
    parser.add_argument(
        "--force",
        action="store_true",
        help="go on although the run file changed (TRL: the old outputs are kept beside)",
    )
    args = parser.parse_args(argv)
    if (args.run is None) == (args.run_name is None):
        parser.error("name one run: --run NAME (or NAME alone)")
    args.run = args.run or args.run_name
    if args.step is not None and args.export is None:
        parser.error("--step goes with --export")
    if args.max_steps is not None and args.max_steps < 1:
        parser.error("--max-steps must be at least 1")
    if not (args.usd_per_hour >= 0 and args.budget_usd >= 0):
        parser.error("--usd-per-hour and --budget-usd must be non-negative numbers")
    return args


def main(argv: list[str] | None = None) -> int:
    """User mistakes and missing machinery end in one line (`fail`), never a traceback."""
    return run_command("python train.py", recipe, argv)


def recipe(argv: Sequence[str] | None) -> int:
    args = parse_args(argv)

    # 1. The run: everything that defines it is one file in runs/.
    try:
        run = load_run_config(args.run)
    except RunConfigError as exc:
        return fail(exc)

    # 2. Exporting a checkpoint needs only its files.
    if args.export is not None:
        return export(run, args.export, args.step)

    # 3. The CPU path has its own runner (tiny model, SFT warm start, TRL GRPO).
    if run.trainer == "trl":
        return train_trl(run, args)

    # 4. The data order: which scenarios each step takes, fixed by the run alone.
    try:
        data = plan_data(run)
    except DataPlanError as exc:
        return fail(exc)

    # 5. --check: the plan and what it costs, then stop.
    if args.check:
        from training.art.plan import render_plan

        print(render_plan(run, data, usd_per_hour=args.usd_per_hour, budget_usd=args.budget_usd))
        return 0

    # 6. This machine: packages, GPU, API keys, before anything heavy is imported.
    from training.art.backends import keep_wandb_off, missing_requirements

    missing = missing_requirements(run)
    if missing:
        return fail(missing)
    wandb_note = keep_wandb_off(run)  # a set WANDB_API_KEY would start a W&B run regardless
    if wandb_note:
        print(wandb_note)

    # 7. Train. ART is imported with its transformers patch here (training/art/guard.py).
    from training.art.guard import import_art_for_training

    import_art_for_training()
    return asyncio.run(train_art(run, data, max_steps=args.max_steps, force=args.force))


async def train_art(run: RunConfig, data: DataPlan, *, max_steps: int | None, force: bool) -> int:
    """The backend is made here and handed to the loop, which owns everything else."""
    from agent.policy import PolicyError
    from training.art.backends import BackendUnavailable, make_backend
    from training.art.chat_template import TemplateUnavailable, resolve_chat_template
    from training.art.cold_start import ColdStartError
    from training.art.loop import train
    from training.art.run_state import RunChanged

    try:
        template = resolve_chat_template(run.base_model)  # decides the chat-template settings
        backend = make_backend(run)
    except (BackendUnavailable, TemplateUnavailable) as exc:
        return fail(exc)
    try:
        summary = await train(
            run, backend, data, max_steps=max_steps, force=force, chat_template=template
        )
    except (RunChanged, PolicyError, ColdStartError, BackendUnavailable) as exc:
        return fail(f"{exc} (rerun the same command to resume)")
    finally:
        await backend.close()
    for note in summary.notes:
        print(note)
    validated = summary.validations[-1] if summary.validations else None
    print(
        f"{run.name}: checkpoints {summary.first_step:04d} -> {summary.last_step:04d}, "
        f"stopped by {summary.stopped_by}"
        + (f"; val pass^1 {validated.pass1:.3f} at step {validated.step}" if validated else "")
    )
    print(f"export: python train.py --run {run.name} --export exports/{run.name}")
    return 0


def train_trl(run: RunConfig, args: argparse.Namespace) -> int:
    """The TRL runner is imported only here: it needs torch, transformers and trl."""
    out_dir = Path("outputs") / run.name
    if args.check:
        assert run.trl is not None  # RunConfig guarantees it for trainer "trl"
        print(
            f"run {run.name} (trainer trl): {run.base_model}, SFT {run.trl.sft_steps} steps, "
            f"GRPO {args.max_steps or run.trl.grpo_steps} steps x {run.trl.num_generations} "
            f"generations, on {run.trl.device.upper()}; writes {out_dir}/"
        )
        return 0
    missing = [name for name in TRL_MODULES if importlib.util.find_spec(name) is None]
    if missing:
        return fail(f"the TRL path needs pip install -e '.[trl]' (missing: {', '.join(missing)})")
    from training.trl.runner import train_and_report

    several = int(os.environ.get("WORLD_SIZE", 1)) > 1  # started by torchrun / accelerate
    command = ("<the same launcher> train.py " if several else "python train.py --run ") + args.run
    command += f" --max-steps {args.max_steps}" if args.max_steps is not None else ""
    # the resume rule of both paths (training/run_ledger.py) holds before anything is trained
    return train_and_report(run, out_dir, steps=args.max_steps, force=args.force, command=command)


def export(run: RunConfig, destination: Path, step: int | None) -> int:
    from training.art.export import ExportError, export_checkpoint

    try:
        result = export_checkpoint(run, destination, step)
    except ExportError as exc:
        return fail(exc)
    print(f"exported checkpoint {result.step:04d} of {run.name} to {result.destination}:")
    print("  " + ", ".join(result.files))
    print(f"serve and evaluate it: see {destination / 'README.md'} or docs/gpu.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
