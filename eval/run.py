"""Evaluate one model on a split: k samples per scenario, graded, appended to a resumable JSONL.

    python eval/run.py --model reference --k 4            # the upper bound, in seconds
    python eval/run.py --model claude-sonnet --split eval --k 4 --concurrency 8
    python eval/run.py --base-url http://127.0.0.1:8000/v1 --model-name Qwen/Qwen3.5-4B
    python eval/run.py --model litellm:openai/NAME --base-url URL   # litellm, any api_base

Results go to `results/<model>-<split>-k<k>/` (episodes.jsonl, run.json, summary.json/.md);
rerunning the same command resumes. Exit codes: 0 done; 2 a user mistake (one line on stderr);
3 some episodes hit transient API errors in every attempt and were left out (rerun to resume).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import warnings
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as `python eval/run.py`: make the repo importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # before anything imports litellm
# litellm's own logging dumps its response objects with pydantic serializer warnings: not ours
warnings.filterwarnings("ignore", message="Pydantic serializer warnings")

from agent.cli import EXIT_INCOMPLETE, run_resumable  # noqa: E402
from agent.policy import Policy, PolicyError, TransientPolicyError  # noqa: E402
from agent.registry import (  # noqa: E402
    DEFAULT_REGISTRY,
    ModelTarget,
    build_policy,
    check_reachable,
    resolve_model,
)
from env.scenario import Scenario, reveal_truth  # noqa: E402
from env.splits import SPLITS, UnknownSplit, split_seeds  # noqa: E402
from eval.episode_log import (  # noqa: E402
    EPISODES,
    EpisodeLog,
    RunLogError,
    check_run_config,
    error_line,
    read_episodes,
    result_line,
)

REPO = Path(__file__).resolve().parents[1]


class UsageError(RuntimeError):
    """A command line that cannot run as given."""


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    # what to evaluate
    parser.add_argument(
        "--model",
        help="alias from agent/models.toml, reference, auditor, or litellm:<provider/model>",
    )
    parser.add_argument("--base-url", help="OpenAI-compatible server, e.g. http://host:8000/v1")
    parser.add_argument("--model-name", help="the served model name at --base-url")
    parser.add_argument("--registry", type=Path, default=DEFAULT_REGISTRY, help="models.toml")
    parser.add_argument("--temperature", type=float, help="overrides the registry's")
    parser.add_argument(
        "--thinking",
        choices=("auto", "on", "off"),
        default="auto",
        help="chat_template_kwargs.enable_thinking for OpenAI-compatible servers; auto = off "
        "for Qwen3.5 by name (say off for a LoRA served under another name)",
    )
    # on what
    parser.add_argument("--split", default="eval", choices=sorted(SPLITS))
    parser.add_argument("--limit", type=int, help="only the first N scenarios of the split")
    parser.add_argument("--k", type=int, default=4, help="samples per scenario")
    # how
    parser.add_argument("--concurrency", type=int, default=4, help="episodes in flight")
    parser.add_argument(
        "--episode-retries",
        type=int,
        default=2,
        help="extra rounds for episodes that failed on transient API errors",
    )
    parser.add_argument("--out", type=Path, help="run directory (default results/<model>-...)")
    parser.add_argument("--force", action="store_true", help="add to a run with another config")
    parser.add_argument("--seed", type=int, default=0, help="seed of the bootstrap intervals")
    args = parser.parse_args(argv)
    for name in ("k", "concurrency", "limit"):
        value = getattr(args, name)
        if value is not None and value < 1:
            parser.error(f"--{name} must be at least 1")
    return args


@dataclass(frozen=True)
class Job:
    scenario: Scenario
    sample: int


def git_commit() -> str:
    try:
        done = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True, timeout=10
        )
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return done.stdout.strip() if done.returncode == 0 and done.stdout.strip() else "unknown"


def run_config(target: ModelTarget, args: argparse.Namespace) -> dict[str, Any]:
    from env.versions import generator_hash, tool_contract_hash

    return {
        "model": target.name,
        "kind": target.kind,
        "model_id": target.model,
        "base_url": target.base_url,
        "split": args.split,
        "k": args.k,
        "limit": args.limit,
        "temperature": args.temperature if args.temperature is not None else target.temperature,
        "tool_contract": tool_contract_hash(),
        "generator": generator_hash(),
    }


async def _episode(policy: Policy, job: Job, log: EpisodeLog) -> bool:
    """Runs and records one episode; False when it should be tried again later."""
    from agent.rollout import run_episode
    from eval.grader import grade_episode

    try:
        result = await run_episode(policy, job.scenario)
    except TransientPolicyError:
        return False
    except PolicyError:
        raise
    except Exception as exc:  # a bug in one episode must not end the run: it is a failure
        log.append(error_line(job.scenario, job.sample, policy.name, exc))
        return True
    grade = grade_episode(reveal_truth(job.scenario), result.record, job.scenario.database)
    log.append(result_line(job.scenario, job.sample, result, grade))
    return True


async def run_jobs(
    policy: Policy, jobs: list[Job], log: EpisodeLog, *, concurrency: int, rounds: int
) -> list[Job]:
    """Bounded-concurrency rounds; returns the jobs that failed transiently in every round."""
    from tqdm import tqdm

    semaphore = asyncio.Semaphore(concurrency)
    progress = tqdm(total=len(jobs), desc=policy.name, unit="ep", file=sys.stderr, mininterval=0.5)

    async def one(job: Job, retry: list[Job]) -> None:
        async with semaphore:
            if await _episode(policy, job, log):
                progress.update(1)
            else:
                retry.append(job)

    pending = jobs
    try:
        for round_index in range(rounds):
            if round_index:
                await asyncio.sleep(min(60.0, 5.0 * 2**round_index))
            retry: list[Job] = []
            async with asyncio.TaskGroup() as group:
                for job in pending:
                    group.create_task(one(job, retry))
            pending = retry
            if not pending:
                break
    except* PolicyError as failure:
        raise failure.exceptions[0] from None  # the user's mistake: one line, not a group
    finally:
        progress.close()
        await policy.aclose()
    return pending


def _jobs(args: argparse.Namespace, done: set[tuple[str, int]]) -> list[Job]:
    from env.generator import generate

    scenarios = [generate(args.split, seed) for seed in split_seeds(args.split, args.limit)]
    return [
        Job(scenario, sample)
        for sample in range(args.k)
        for scenario in scenarios
        if (scenario.scenario_id, sample) not in done
    ]


def run(args: argparse.Namespace) -> int:
    target = resolve_model(
        args.model,
        base_url=args.base_url,
        model_name=args.model_name,
        registry_path=args.registry,
    )
    try:
        split_seeds(args.split, args.limit)
    except ValueError as exc:  # an open-ended split without --limit
        raise UsageError(str(exc)) from None
    thinking = {"auto": None, "on": True, "off": False}[args.thinking]
    policy = build_policy(target, temperature=args.temperature, enable_thinking=thinking)
    check_reachable(target)
    run_dir = args.out or Path("results") / f"{target.slug}-{args.split}-k{args.k}"
    config = run_config(target, args)
    for warning in check_run_config(run_dir, config, force=args.force):
        print(warning, file=sys.stderr)
    path = run_dir / EPISODES
    done = {line.key for line in read_episodes(path)}
    jobs = _jobs(args, done)
    if done:
        print(f"resuming {run_dir}: {len(done)} episodes done, {len(jobs)} to run", file=sys.stderr)
    left = _run_all(policy, jobs, path, args) if jobs else []
    print(f"summary: {_summarize(run_dir, config, args)}")
    if left:
        print(
            f"{len(left)} episodes failed on transient API errors in every attempt and are not "
            "recorded; rerun the same command to resume them",
            file=sys.stderr,
        )
        return EXIT_INCOMPLETE
    return 0


def _run_all(policy: Policy, jobs: list[Job], path: Path, args: argparse.Namespace) -> list[Job]:
    import agent.rollout  # noqa: F401  # slow (art, transformers): before the progress bar starts

    log = EpisodeLog(path)
    try:
        return asyncio.run(
            run_jobs(
                policy, jobs, log, concurrency=args.concurrency, rounds=1 + args.episode_retries
            )
        )
    finally:
        log.close()


def _summarize(run_dir: Path, config: dict[str, Any], args: argparse.Namespace) -> Path:
    from eval.summary import summarize, write_summary

    stamp = {
        **config,
        "commit": git_commit(),
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    lines = read_episodes(run_dir / EPISODES)
    return write_summary(run_dir, summarize(lines, k=args.k, stamp=stamp, seed=args.seed))


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    return run_resumable(lambda: run(args), (PolicyError, RunLogError, UnknownSplit, UsageError))


if __name__ == "__main__":
    sys.exit(main())
