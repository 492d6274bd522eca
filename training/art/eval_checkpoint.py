"""Evaluate a run's latest checkpoint through its ART backend, into the files eval/run.py writes.

    python -m training.art.eval_checkpoint --run binary-01 --split eval --k 4 [--limit N]

On the GPU machine LocalBackend serves the newest LoRA (`<run>@<step>`) with the run's chat
settings (thinking off, the qwen3_coder tool parser), and each episode goes through eval/run.py's
job runner and grader. Results land in `results/<run>-step<N>-<split>-k<k>/` (episodes.jsonl,
summary.json/.md), resumable, ready for eval/compare.py. Another step: export it and serve it
with vLLM (docs/gpu.md).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from env.cli import EXIT_INCOMPLETE, EXIT_USER_ERROR
from env.splits import SPLITS, split_seeds
from training.runs import RunConfig, RunConfigError, load_run_config

if TYPE_CHECKING:
    from agent.art_import import art


async def evaluate(
    run: RunConfig,
    backend: art.Backend,
    *,
    split: str,
    k: int,
    limit: int | None = None,
    concurrency: int = 16,
    out: Path | None = None,
    force: bool = False,
) -> tuple[Path, int]:
    """Returns the results directory and how many episodes failed transiently in every round."""
    from env.generator import generate
    from env.versions import generator_hash, tool_contract_hash
    from eval.episode_log import EPISODES, EpisodeLog, check_run_config, read_episodes
    from eval.run import Job, git_commit, run_jobs
    from eval.summary import summarize, write_summary
    from training.art import run_state
    from training.art.backends import build_model, server_config
    from training.art.trainable_policy import TrainableModelPolicy

    if run.backend.kind == "local":  # a checkpoint killed mid-save must not be the one loaded
        directory, targets = run_state.model_dir(run), run.lora.target_modules
        for warning in run_state.set_aside_incomplete_checkpoints(directory, targets):
            print(warning)
    model = build_model(run)
    await model.register(backend, _openai_client_config=server_config(run))
    step = await model.get_step()
    policy = TrainableModelPolicy(model, run.rollout, step=step)
    run_dir = out or Path("results") / f"{run.name}-step{step}-{split}-k{k}"
    config: dict[str, Any] = {
        "model": policy.name,
        "kind": f"art-{run.backend.kind}",
        "model_id": run.base_model,
        "base_url": model.inference_base_url,
        "split": split,
        "k": k,
        "limit": limit,
        "temperature": run.rollout.temperature,
        "tool_contract": tool_contract_hash(),
        "generator": generator_hash(),
    }
    for warning in check_run_config(run_dir, config, force=force):
        print(warning, file=sys.stderr)
    done = {line.key for line in read_episodes(run_dir / EPISODES)}
    scenarios = [generate(split, seed) for seed in split_seeds(split, limit)]
    jobs = [
        Job(scenario, sample)
        for sample in range(k)
        for scenario in scenarios
        if (scenario.scenario_id, sample) not in done
    ]
    log = EpisodeLog(run_dir / EPISODES)
    try:
        left = await run_jobs(policy, jobs, log, concurrency=concurrency, rounds=3)
    finally:
        log.close()
    stamp = config | {
        "commit": git_commit(),
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    write_summary(run_dir, summarize(read_episodes(run_dir / EPISODES), k=k, stamp=stamp))
    return run_dir, len(left)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", required=True, help="a name in runs/ or a .toml path")
    parser.add_argument("--split", default="eval", choices=sorted(SPLITS))
    parser.add_argument("--limit", type=int, help="only the first N scenarios of the split")
    parser.add_argument("--k", type=int, default=4, help="samples per scenario")
    parser.add_argument("--concurrency", type=int, default=16, help="episodes in flight")
    parser.add_argument("--out", type=Path, help="default results/<run>-step<N>-<split>-k<k>/")
    parser.add_argument("--force", action="store_true", help="add to a directory of another run")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        run = load_run_config(args.run)
    except RunConfigError as exc:
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
        run_dir, left = await evaluate(
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
    print(f"summary: {run_dir / 'summary.md'}")
    if left:
        print(
            f"{left} episodes failed transiently in every round; rerun to finish", file=sys.stderr
        )
        return EXIT_INCOMPLETE
    return 0


if __name__ == "__main__":
    sys.exit(main())
