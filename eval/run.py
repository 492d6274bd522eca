"""Evaluate one model on a split: k samples per scenario, graded, appended to a resumable JSONL.

    python eval/run.py --model reference --k 4            # the upper bound, in seconds
    python eval/run.py --model claude-sonnet --split eval --k 4 --concurrency 8
    python eval/run.py --base-url http://127.0.0.1:8000/v1 --model-name Qwen/Qwen3.5-4B
    python eval/run.py --model litellm:openai/NAME --base-url URL   # litellm, any api_base

Results go to `results/<model>-<split>-k<k>/` (episodes.jsonl, run.json, summary.json/.md);
rerunning the same command resumes. Every planned episode ends graded, as an error line (with
its reason), or incomplete (no line; a rerun runs it). Failure rules: eval/README.md.
Exit codes: 0 every planned episode recorded; 2 a user mistake (one line on stderr); 3 some
episodes incomplete after transient failures (rerun to resume); 4 the server is unreachable
(rerun the same command once it is up); 130 interrupted.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import warnings
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # before anything imports litellm
# litellm's own logging dumps its response objects with pydantic serializer warnings: not ours
warnings.filterwarnings("ignore", message="Pydantic serializer warnings")

from agent.policy import (  # noqa: E402
    Policy,
    PolicyError,
    ServerUnreachable,
)
from agent.registry import (  # noqa: E402
    DEFAULT_REGISTRY,
    ModelTarget,
    api_key,
    build_policy,
    check_reachable,
    resolve_model,
    server_context_length,
)
from agent.retry import RetrySettings, ServerWatch  # noqa: E402
from env.cli import EXIT_INCOMPLETE, EXIT_UNREACHABLE, run_resumable  # noqa: E402
from env.splits import SPLITS, UnknownSplit, split_seeds  # noqa: E402
from eval.episode_log import (  # noqa: E402
    EPISODES,
    EpisodeLog,
    RunLock,
    RunLogError,
    check_run_config,
    read_episodes,
)
from eval.jobs import DEFAULT_RETRY_BUDGET_S, Job, Screen, run_jobs  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
__all__ = ["Job", "git_commit", "main", "run_jobs"]  # training/art/eval_checkpoint.py uses these


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
    parser.add_argument("--max-tokens", type=int, help="completion limit per turn (registry's)")
    parser.add_argument(
        "--context-length", type=int, help="the model's context (else registry, server)"
    )
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
    _failure_flags(parser)
    parser.add_argument("--no-transcript", action="store_true", help="omit transcripts")
    parser.add_argument("--out", type=Path, help="run directory (default results/<model>-...)")
    parser.add_argument("--force", action="store_true", help="add to a run with another config")
    parser.add_argument("--seed", type=int, default=0, help="seed of the bootstrap intervals")
    args = parser.parse_args(argv)
    _validate(parser, args)
    return args


def _failure_flags(parser: argparse.ArgumentParser) -> None:
    defaults = RetrySettings()
    add = parser.add_argument
    add("--timeout", type=float, help="seconds per request (registry's timeout_s, default 300)")
    add("--max-retries", type=int, default=defaults.max_retries, help="transient, per request")
    add(
        "--server-error-retries",
        type=int,
        default=defaults.server_error_retries,
        help="retries of a plain HTTP 5xx before the episode is recorded as an error",
    )
    add("--backoff", type=float, default=defaults.backoff_s, help="first retry pause, seconds")
    add(
        "--retry-budget",
        type=float,
        default=DEFAULT_RETRY_BUDGET_S,
        help="seconds of outage (failing requests, none succeeding) a run may retry through",
    )
    add(
        "--unreachable-after",
        type=float,
        default=defaults.unreachable_after_s,
        help="stop the run when every connection was refused this many seconds",
    )
    add(
        "--episode-retries",
        type=int,
        default=2,
        help="extra rounds for episodes left incomplete by transient failures",
    )


def _validate(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    at_least = {"k": 1, "concurrency": 1, "limit": 1, "max_tokens": 1, "context_length": 1}
    at_least |= {"max_retries": 0, "server_error_retries": 0, "episode_retries": 0}
    for name, low in at_least.items():
        value = getattr(args, name)
        if value is not None and value < low:
            parser.error(f"--{name.replace('_', '-')} must be at least {low}")
    for name in ("timeout", "retry_budget", "unreachable_after", "backoff"):
        value = getattr(args, name)
        if value is not None and not value > 0:
            parser.error(f"--{name.replace('_', '-')} must be a positive number of seconds")


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
        "max_tokens": target.max_tokens,
        "context_length": target.context_length,
        "timeout_s": target.timeout_s,
        "sampling": dict(target.sampling),
        "tool_contract": tool_contract_hash(),
        "generator": generator_hash(),
    }


def _jobs(args: argparse.Namespace, done: set[tuple[str, int]]) -> tuple[list[Job], int]:
    """The jobs still to run, and how many episodes the run plans in all."""
    from env.generator import generate

    scenarios = [generate(args.split, seed) for seed in split_seeds(args.split, args.limit)]
    jobs = [
        Job(scenario, sample)
        for sample in range(args.k)
        for scenario in scenarios
        if (scenario.scenario_id, sample) not in done
    ]
    return jobs, len(scenarios) * args.k


def _target(args: argparse.Namespace) -> ModelTarget:
    target = resolve_model(
        args.model,
        base_url=args.base_url,
        model_name=args.model_name,
        registry_path=args.registry,
    )
    overrides = {
        "max_tokens": args.max_tokens,
        "timeout_s": args.timeout,
        "context_length": args.context_length,
    }
    return replace(target, **{k: v for k, v in overrides.items() if v is not None})


def run(args: argparse.Namespace) -> int:
    target = _target(args)
    try:
        split_seeds(args.split, args.limit)
    except ValueError as exc:  # an open-ended split without --limit
        raise UsageError(str(exc)) from None
    run_dir = args.out or Path("results") / f"{target.slug}-{args.split}-k{args.k}"
    if run_dir.exists() and not run_dir.is_dir():
        raise UsageError(f"--out {run_dir} is a file; give a directory for the run")
    if target.kind in ("openai", "litellm"):
        api_key(target)  # a missing key is one line before anything touches the network
        check_reachable(target)
        if target.context_length is None:
            target = replace(target, context_length=server_context_length(target))
    config = run_config(target, args)
    for warning in check_run_config(run_dir, config, force=args.force, write=False):
        print(warning, file=sys.stderr)
    thinking = {"auto": None, "on": True, "off": False}[args.thinking]
    policy = build_policy(target, temperature=args.temperature, enable_thinking=thinking)
    with RunLock(run_dir):
        return _run_locked(policy, run_dir, config, args)


def _run_locked(
    policy: Policy, run_dir: Path, config: dict[str, Any], args: argparse.Namespace
) -> int:
    path = run_dir / EPISODES
    done = {line.key for line in read_episodes(path, repair=True)}
    jobs, planned = _jobs(args, done)
    if done:
        print(f"resuming {run_dir}: {len(done)} episodes done, {len(jobs)} to run", file=sys.stderr)
    incomplete: dict[tuple[str, int], str] = {}
    unreachable: ServerUnreachable | None = None
    try:
        left = _run_all(policy, jobs, path, config, args, incomplete) if jobs else []
    except ServerUnreachable as exc:
        unreachable, left = exc, []
    recorded = read_episodes(path, repair=True)
    if recorded:
        print(f"summary: {_summarize(run_dir, config, args, planned)}")
    if unreachable is not None:
        missing = planned - len(recorded)
        print(f"error: {unreachable} ({missing} of {planned} episodes to go)", file=sys.stderr)
        return EXIT_UNREACHABLE
    return _report_incomplete(left, incomplete, planned, len(recorded))


def _report_incomplete(
    left: list[Job], incomplete: dict[tuple[str, int], str], planned: int, recorded: int
) -> int:
    if not left:
        return 0
    causes = sorted({incomplete.get((j.scenario.scenario_id, j.sample), "?") for j in left})
    print(
        f"{len(left)} of {planned} episodes are incomplete ({recorded} recorded) after transient "
        f"failures ({'; '.join(causes)[:300]}); rerun the same command to resume them",
        file=sys.stderr,
    )
    return EXIT_INCOMPLETE


def _run_all(
    policy: Policy,
    jobs: list[Job],
    path: Path,
    config: dict[str, Any],
    args: argparse.Namespace,
    incomplete: dict[tuple[str, int], str],
) -> list[Job]:
    from agent.rollout import RolloutConfig  # slow (art): before the progress bar starts

    retry = RetrySettings(
        max_retries=args.max_retries,
        server_error_retries=args.server_error_retries,
        backoff_s=args.backoff,
        backoff_max_s=max(args.backoff, 30.0),
        unreachable_after_s=args.unreachable_after,
    )
    rollout = RolloutConfig(retry=retry, watch=ServerWatch(args.retry_budget), report=Screen())
    log = EpisodeLog(path, config, replace_config=args.force)
    try:
        return asyncio.run(
            run_jobs(
                policy,
                jobs,
                log,
                concurrency=args.concurrency,
                rounds=1 + args.episode_retries,
                rollout=rollout,
                keep_transcript=not args.no_transcript,
                incomplete=incomplete,
            )
        )
    finally:
        log.close()


def _summarize(
    run_dir: Path, config: dict[str, Any], args: argparse.Namespace, planned: int
) -> Path:
    from eval.summary import identical_samples_note, summarize, write_summary

    stamp = {
        **config,
        "commit": git_commit(),
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    lines = read_episodes(run_dir / EPISODES, repair=True)
    summary = summarize(lines, k=args.k, stamp=stamp, seed=args.seed, planned=planned)
    note = identical_samples_note(summary)
    if note:
        print(f"warning: {note}", file=sys.stderr)
    return write_summary(run_dir, summary)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    return run_resumable(lambda: run(args), (PolicyError, RunLogError, UnknownSplit, UsageError))


if __name__ == "__main__":
    sys.exit(main())
