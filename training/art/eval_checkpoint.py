"""Evaluate a run's latest checkpoint through its ART backend, into the files eval/run.py writes.

    python -m training.art.eval_checkpoint --run binary-01 --split eval --k 4 [--limit N]

On the GPU machine LocalBackend serves the newest LoRA (`<run>@<step>`) with the run's chat
settings (thinking off, the qwen3_coder tool parser), and `eval.run.evaluate` plays and grades
it as eval/run.py does. Results land in `results/<run>-step<N>-<split>-k<k>/` (episodes.jsonl,
run.json, summary.json/.md), resumable, ready for eval/compare.py. Another step: export it and
serve it with vLLM (docs/gpu.md).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from env.cli import EXIT_INCOMPLETE, EXIT_USER_ERROR, Parser, UsageError
from env.generation.splits import SPLITS, split_seeds
from training.runs import RunConfig, RunConfigError, load_run_config

if TYPE_CHECKING:
    import art

    from eval.run import EvalRun


async def evaluate_checkpoint(
    run: RunConfig,
    backend: art.Backend,
    *,
    split: str,
    k: int,
    limit: int | None = None,
    concurrency: int = 16,
    out: Path | None = None,
    force: bool = False,
) -> EvalRun:
    """The newest checkpoint through `eval.run.evaluate`; the result says what is incomplete."""
    from env.generation.generator import generate
    from eval.run import evaluate
    from training.art import run_state
    from training.art.backends import build_model, server_config
    from training.art.trainable_policy import TrainableModelPolicy, eval_run_config

    if run.backend.kind == "local":  # a checkpoint killed mid-save must not be the one loaded
        directory, targets = run_state.model_dir(run), run.lora.target_modules
        for warning in run_state.set_aside_incomplete_checkpoints(directory, targets):
            print(warning)
    model = build_model(run)
    await model.register(backend, _openai_client_config=server_config(run))
    step = await model.get_step()
    policy = TrainableModelPolicy(model, run.rollout, step=step)
    scenarios = [generate(split, seed) for seed in split_seeds(split, limit)]
    return await evaluate(
        policy,
        scenarios,
        k=k,
        run_dir=out or Path("results") / f"{run.name}-step{step}-{split}-k{k}",
        config=eval_run_config(run, policy, split=split, k=k, limit=limit),
        concurrency=concurrency,
        force=force,
    )


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = Parser(
        prog="python -m training.art.eval_checkpoint", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--run", required=True, help="a name in runs/ or a .toml path")
    parser.add_argument("--split", default="eval", choices=sorted(SPLITS))
    parser.add_argument("--limit", type=int, help="only the first N scenarios of the split")
    parser.add_argument("--k", type=int, default=4, help="samples per scenario")
    parser.add_argument("--concurrency", type=int, default=16, help="episodes in flight")
    parser.add_argument("--out", type=Path, help="default results/<run>-step<N>-<split>-k<k>/")
    parser.add_argument("--force", action="store_true", help="add to a directory of another run")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    try:
        args = parse_args(argv)
        run = load_run_config(args.run)
    except (UsageError, RunConfigError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USER_ERROR
    from training.art.backends import keep_wandb_off, make_backend, missing_requirements

    missing = missing_requirements(run)
    if missing:
        print(f"error: {missing}", file=sys.stderr)
        return EXIT_USER_ERROR
    wandb_note = keep_wandb_off(run)
    if wandb_note:
        print(wandb_note)
    from agent.policy import PolicyError
    from eval.episode_log import RunLogError

    try:
        return asyncio.run(_evaluate_and_close(run, make_backend(run), args))
    except (PolicyError, RunLogError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USER_ERROR


async def _evaluate_and_close(
    run: RunConfig, backend: art.Backend, args: argparse.Namespace
) -> int:
    try:
        result = await evaluate_checkpoint(
            run,
            backend,
            split=args.split,
            k=args.k,
            limit=args.limit,
            concurrency=args.concurrency,
            out=args.out,
            force=args.force,
        )
    finally:
        await backend.close()
    print(f"summary: {result.summary_md}")
    if result.incomplete:
        print(
            f"{len(result.incomplete)} episodes failed transiently in every round; rerun to finish",
            file=sys.stderr,
        )
        return EXIT_INCOMPLETE
    return 0


if __name__ == "__main__":
    sys.exit(main())
