"""The CPU training path: tiny model, SFT warm start, TRL GRPO with LedgerEnv, eval before/after.

    python -m training.trl.runner --run cpu-smoke [--steps N] [--out DIR]
    torchrun --standalone --nproc_per_node 2 train.py cpu-smoke      # 2 processes (CPU: gloo)

A random model never emits a tool call, so a short supervised warm start on reference
investigations (cut to fit the tiny model's context, `training.trl.data`) comes first; then
GRPOTrainer drives `LedgerTrlEnv` through `environment_factory` with the LedgerGym reward and
trains a LoRA adapter (`training.trl.grpo`). The warm-started model and the trained adapter are
both evaluated on a few `val` scenarios through the eval path (`eval.run.evaluate`). Writes
metrics.jsonl, train.log (every metric dict; the console shows a bar per phase and short lines,
`training.trl.progress`), reward_curve.png, adapter/, summary.json, the eval runs eval-before/
and eval-after/ and their report (report/index.html, `python -m eval.report`) into
`outputs/<run>/`, which `training.trl.outputs` claims first (a changed run file needs --force).
Both phases checkpoint as they go and a rerun continues (`training.trl.checkpoints`). Under a
launcher's N processes each trains its share of every batch and rank 0 alone writes
(`training.trl.ranks`).
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from env.cli import EXIT_INTERRUPTED, EXIT_USER_ERROR, Parser, fail, run_command
from training.runs import RunConfig, RunConfigError, load_run_config
from training.trl import ranks
from training.trl.checkpoints import RunProgress
from training.trl.outputs import RunChanged, claim_outputs, effective_run
from training.trl.phases import Phases, trl_section
from training.trl.progress import close_bars, say
from training.trl.sft import per_device
from training.trl.summary import SUMMARY_FILE, TrlSummary, headline

REPO = Path(__file__).resolve().parents[2]


def cache_dir() -> Path:
    root = os.environ.get("LEDGERGYM_CACHE")
    return (Path(root) if root else REPO / ".cache") / "tiny-models"


def run_trl(
    run: RunConfig,
    *,
    out_dir: Path,
    steps: int | None = None,
    sft_steps: int | None = None,
    eval_scenarios: int | None = None,
    train_scenarios: int | None = None,
    model_cache: Path | None = None,
    progress: RunProgress | None = None,
) -> TrlSummary | None:
    """Run the whole CPU path for `run` and write its files into `out_dir`; continues what an
    earlier run of the same config left there. Returns the summary (None on ranks other than 0).

    The keyword overrides exist for short versions of the same run (tests, a quick look);
    `steps` defaults to `[trl] grpo_steps`. `progress` follows the phases for a Ctrl-C line.
    """
    run = _shortened(run, sft_steps, eval_scenarios)
    trl = trl_section(run)
    steps = trl.grpo_steps if steps is None else steps
    where = ranks.start(trl.device)
    per_device(trl.sft_batch_size, where.world, "sft_batch_size")  # refused before any work
    per_device(run.grpo.groups_per_step * trl.num_generations, where.world, "episodes a step")
    if (out_dir / SUMMARY_FILE).is_file():
        return _finished(out_dir, where.main)
    progress = progress or RunProgress(command=f"python train.py --run {run.name}")
    phases = Phases(run, out_dir, where, progress)
    data = phases.prepare(train_scenarios or run.data.limit, model_cache or cache_dir())
    warm, before = phases.warm_start(data)
    result = phases.grpo(data, warm, steps)
    summary = phases.finish(data, warm, before, result, steps) if where.main else None
    ranks.barrier()
    return summary


def _shortened(run: RunConfig, sft_steps: int | None, eval_scenarios: int | None) -> RunConfig:
    """`run` with `run_trl`'s keyword overrides applied (tests, a quick look)."""
    if sft_steps is None and eval_scenarios is None:
        return run
    trl = trl_section(run)
    trl = trl.model_copy(
        update={
            "sft_steps": trl.sft_steps if sft_steps is None else sft_steps,
            "eval_scenarios": trl.eval_scenarios if eval_scenarios is None else eval_scenarios,
        }
    )
    return run.model_copy(update={"trl": trl})


def _finished(out_dir: Path, main: bool) -> TrlSummary | None:
    if not main:
        return None
    say(
        f"{out_dir} holds a finished run of this config: nothing to continue (to train it "
        f"again from the start, move {out_dir} away first)"
    )
    return TrlSummary.read(out_dir / SUMMARY_FILE)


def train_and_report(
    run: RunConfig, out_dir: Path, *, steps: int | None, force: bool, command: str
) -> int:
    """What `python train.py --run <trl run>` and `python -m training.trl.runner` do: claim the
    outputs (rank 0; the resume rule), run or continue, print the summary and closing lines.
    A refused run file is one line (status 2); Ctrl-C one line saying what was kept and the
    command that continues (status 130). Under several processes only rank 0 prints."""
    progress = RunProgress(command=command, out_dir=out_dir)
    where = ranks.from_environment()
    try:
        where = ranks.start(trl_section(run).device)
        claim = functools.partial(claim_outputs, effective_run(run, steps), out_dir, force=force)
        note = ranks.from_main(claim)
        if note and where.main:
            print(note)
        summary = run_trl(run, out_dir=out_dir, steps=steps, progress=progress)
    except (RunChanged, RunConfigError) as exc:
        return fail(exc) if where.main else EXIT_USER_ERROR
    except KeyboardInterrupt:
        close_bars()
        if where.main:
            print(progress.interrupted_line(), file=sys.stderr)
        return EXIT_INTERRUPTED
    if summary is not None:
        print(summary.render())
        print("\n".join(headline(summary)))
    return 0


def _main(argv: Sequence[str] | None) -> int:
    parser = Parser(prog="python -m training.trl.runner", description=__doc__.splitlines()[0])
    parser.add_argument("--run", default="cpu-smoke", help="run name in runs/ or a .toml path")
    parser.add_argument("--steps", type=int, default=None, help="GRPO steps (default: the run's)")
    parser.add_argument("--out", type=Path, default=None, help="default: outputs/<run name>/")
    parser.add_argument("--force", action="store_true", help="keep another config's outputs aside")
    args = parser.parse_args(argv)
    run = load_run_config(args.run)
    if run.trainer != "trl":
        parser.error(f"run {run.name!r} has trainer {run.trainer!r}, not 'trl'")
    out = args.out or REPO / "outputs" / run.name
    command = " ".join(["python -m training.trl.runner", *(argv or sys.argv[1:])])
    command = command.replace(" --force", "")  # the ledger holds this config now
    return train_and_report(run, out, steps=args.steps, force=args.force, command=command)


def main(argv: Sequence[str] | None = None) -> int:
    return run_command("python -m training.trl.runner", _main, argv, (RunConfigError, RunChanged))


if __name__ == "__main__":
    sys.exit(main())
