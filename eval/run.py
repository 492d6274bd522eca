"""Evaluate one model on a split: k samples per scenario, graded, appended to a resumable JSONL.

    python -m eval.run --model reference --k 4            # the upper bound, in seconds
    python -m eval.run --model claude-sonnet --split eval --k 4 --concurrency 8
    python -m eval.run --base-url http://127.0.0.1:8000/v1 --model-name Qwen/Qwen3.5-4B
    python -m eval.run --model litellm:openai/NAME --base-url URL   # litellm, any api_base
    python -m eval.run --model auditor --split eval --twins --k 1  # + each twin (eval.twins)

Results go to `results/<model>-<split>-k<k>/` (episodes.jsonl, run.json, summary.json/.md);
rerunning the same command resumes (`python eval/run.py ...` works too). Every planned episode
ends graded, as an error line (with its reason), or incomplete (no line; a rerun runs it).
Failure rules: eval/README.md.
Exit codes: 0 every planned episode recorded; 2 a user mistake (one line on stderr); 3 some
episodes incomplete after transient failures (rerun to resume); 4 the server is unreachable
(rerun the same command once it is up); 130 interrupted: the first Ctrl-C starts no new episode
and lets those in flight finish, the second drops them; what finished is kept and summarised,
and the same command resumes.

`evaluate` is the one way to play a policy over scenarios and grade it: this command, checkpoint
eval, training's validation and cold start, the difficulty filter and the TRL report call it.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
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
from agent.rollout import RolloutConfig  # noqa: E402
from env.cli import (  # noqa: E402
    EXIT_INCOMPLETE,
    EXIT_INTERRUPTED,
    EXIT_UNREACHABLE,
    Parser,
    UsageError,
    run_resumable,
)
from env.generation.splits import SPLITS, UnknownSplit, split_seeds  # noqa: E402
from env.scenario import Scenario  # noqa: E402
from eval.episode_log import (  # noqa: E402
    EPISODES,
    EpisodeLog,
    RunLock,
    RunLogError,
    check_run_config,
    check_run_folder,
    read_episodes,
)
from eval.interrupt import Interrupt  # noqa: E402
from eval.jobs import DEFAULT_RETRY_BUDGET_S, EpisodeHook, Job, Screen, run_jobs  # noqa: E402
from eval.summary import (  # noqa: E402
    SUMMARY_MD,
    errors_note,
    headline,
    identical_samples_note,
    summarize,
    write_summary,
)
from ledgergym import __version__  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
DEFAULT_K = 4  # samples per scenario of a model; a scripted policy gets 1
__all__ = ["EvalRun", "RunStopped", "evaluate", "git_commit", "limit_note", "main"]


def limit_note(split: str, limit: int, size: int) -> str:
    """The line that says a --limit past the split's end plays the whole split."""
    return f"note: {split} holds {size} scenarios; --limit {limit} plays all {size}"


def git_commit() -> str:
    try:
        done = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True, timeout=10
        )
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return done.stdout.strip() if done.returncode == 0 and done.stdout.strip() else "unknown"


@dataclass(frozen=True)
class EvalRun:
    """What `evaluate` left in its run directory, and what it could not finish."""

    run_dir: Path
    summary: dict[str, Any] | None  # summary.json as written; None while no episode is recorded
    planned: int  # scenarios x k
    recorded: int  # episode lines in the run directory (graded or error lines)
    incomplete: tuple[Job, ...] = ()  # transient failures in every round: a rerun plays them
    causes: tuple[str, ...] = ()  # the last transient cause of each, deduplicated
    interrupted: bool = False  # Ctrl-C kept episodes from running (`stop_on_interrupt`)

    @property
    def summary_md(self) -> Path:
        return self.run_dir / SUMMARY_MD


class RunStopped(ServerUnreachable):
    """The server refused every connection for too long; `run` is what was recorded before."""

    def __init__(self, cause: ServerUnreachable, run: EvalRun) -> None:
        super().__init__(str(cause))
        self.run = run


async def evaluate(
    policy: Policy,
    scenarios: Sequence[Scenario],
    *,
    k: int,
    run_dir: Path,
    config: Mapping[str, Any],
    rollout: RolloutConfig | None = None,
    concurrency: int = 4,
    rounds: int = 3,
    keep_transcript: bool = True,
    force: bool = False,
    seed: int = 0,
    on_episode: EpisodeHook | None = None,
    label: str | None = None,
    stop_on_interrupt: bool = False,
    leave_bar: bool = True,
) -> EvalRun:
    """Plays every scenario k times, grades each episode (`eval.grader`) and records it.

    Resumable: (scenario, sample) pairs already in `run_dir/episodes.jsonl` are not played
    again. `config` says what the run is (model, split, k, hashes): it becomes run.json with the
    first line, and a directory holding another model, split or k is refused unless `force`.
    summary.json/.md are rewritten from every recorded line (`seed`: the bootstrap's); `label`
    names the progress bar (default "evaluating <policy> on <split>"; `leave_bar=False` clears
    it when done, for callers that run many). The policy is closed
    when its episodes are done. Raises `RunStopped` when the server stays unreachable, after
    summarising what was recorded. `stop_on_interrupt`: Ctrl-C stops the run (eval/interrupt.py)
    and the result says `interrupted`; without it Ctrl-C raises as usual.
    """
    with RunLock(run_dir):
        for warning in check_run_config(run_dir, dict(config), force=force, write=False):
            print(warning, file=sys.stderr)
        path = run_dir / EPISODES
        done = {line.key for line in read_episodes(path, repair=True)}
        jobs = [Job(s, n) for n in range(k) for s in scenarios if (s.scenario_id, n) not in done]
        if done:
            print(
                f"resuming {run_dir}: {len(done)} episodes done, {len(jobs)} to run",
                file=sys.stderr,
            )
        planned = len(scenarios) * k
        incomplete: dict[tuple[str, int], str] = {}
        interrupt = Interrupt() if stop_on_interrupt else None
        log = EpisodeLog(path, dict(config), replace_config=force)
        try:
            left: list[Job] = []
            if jobs:
                left = await run_jobs(
                    policy,
                    jobs,
                    log,
                    concurrency=concurrency,
                    rounds=rounds,
                    rollout=rollout,
                    keep_transcript=keep_transcript,
                    incomplete=incomplete,
                    on_episode=on_episode,
                    label=label,
                    interrupt=interrupt,
                    leave_bar=leave_bar,
                )
        except ServerUnreachable as exc:
            raise RunStopped(exc, _summarize(run_dir, config, k, seed, planned)) from None
        finally:
            log.close()
        causes = sorted({incomplete.get(job.key, "?") for job in left})
        run = _summarize(run_dir, config, k, seed, planned)
        stopped = interrupt is not None and interrupt.stopping and run.recorded < planned
        return replace(run, incomplete=tuple(left), causes=tuple(causes), interrupted=stopped)


def _summarize(
    run_dir: Path, config: Mapping[str, Any], k: int, seed: int, planned: int
) -> EvalRun:
    """summary.json/.md from every recorded line; none while nothing is recorded."""
    lines = read_episodes(run_dir / EPISODES, repair=True)
    if not lines:
        return EvalRun(run_dir, None, planned, 0)
    stamp = {
        **config,
        "ledgergym_version": __version__,
        "commit": git_commit(),
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    summary = summarize(lines, k=k, stamp=stamp, seed=seed, planned=planned)
    write_summary(run_dir, summary)
    return EvalRun(run_dir, summary, planned, len(lines))


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = Parser(prog="python -m eval.run", description=__doc__.splitlines()[0])
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
    parser.add_argument(
        "--k",
        type=int,
        help="samples per scenario (default 4; 1 for a scripted policy: its samples are identical)",
    )
    parser.add_argument(
        "--twins",
        action="store_true",
        help="play each scenario and its counterfactual twin; report evidence dependence",
    )
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


def run_config(target: ModelTarget, args: argparse.Namespace) -> dict[str, Any]:
    from env.versions import generator_hash, tool_contract_hash

    return {
        "model": target.name,
        "kind": target.kind,
        "model_id": target.model,
        "base_url": target.base_url,
        "split": args.split,
        "twins": args.twins,
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


def _rollout_config(args: argparse.Namespace) -> RolloutConfig:
    retry = RetrySettings(
        max_retries=args.max_retries,
        server_error_retries=args.server_error_retries,
        backoff_s=args.backoff,
        backoff_max_s=max(args.backoff, 30.0),
        unreachable_after_s=args.unreachable_after,
    )
    return RolloutConfig(retry=retry, watch=ServerWatch(args.retry_budget), report=Screen())


def run(args: argparse.Namespace) -> int:
    """The command: resolve the model and the split, then `evaluate`; returns the exit code."""
    from env.generation.generator import generate

    target = _target(args)
    if args.k is None:  # a scripted policy is deterministic: more samples repeat the first
        args.k = 1 if target.kind == "program" else DEFAULT_K
    try:
        seeds = split_seeds(args.split, args.limit)
    except ValueError as exc:  # an open-ended split without --limit
        raise UsageError(str(exc)) from None
    if args.limit is not None and len(seeds) < args.limit:
        print(limit_note(args.split, args.limit, len(seeds)), file=sys.stderr)
    tag = f"{args.split}-twins" if args.twins else args.split
    run_dir = args.out or Path("results") / f"{target.slug}-{tag}-k{args.k}"
    if run_dir.exists() and not run_dir.is_dir():
        raise UsageError(f"--out {run_dir} is a file; give a directory for the run")
    check_run_folder(run_dir)
    if target.kind in ("openai", "litellm"):
        api_key(target)  # a missing key is one line before anything touches the network
        check_reachable(target)
        if target.context_length is None:
            target = replace(target, context_length=server_context_length(target))
    thinking = {"auto": None, "on": True, "off": False}[args.thinking]
    policy = build_policy(target, temperature=args.temperature, enable_thinking=thinking)
    scenarios = [generate(args.split, seed) for seed in seeds]
    twin_ids: set[str] = set()
    if args.twins:  # a no_error scenario is its own twin: played once
        from env.generation.twins import twin

        pairs = [twin(args.split, seed) for seed in seeds]
        twin_ids = {t.scenario_id for t, s in zip(pairs, scenarios, strict=True) if t is not s}
        scenarios += [t for t in pairs if t.scenario_id in twin_ids]
    try:
        result = asyncio.run(
            evaluate(
                policy,
                scenarios,
                k=args.k,
                run_dir=run_dir,
                config=run_config(target, args),
                rollout=_rollout_config(args),
                concurrency=args.concurrency,
                rounds=1 + args.episode_retries,
                keep_transcript=not args.no_transcript,
                force=args.force,
                seed=args.seed,
                stop_on_interrupt=True,
            )
        )
    except RunStopped as stopped:
        _print_summary(stopped.run)
        missing = stopped.run.planned - stopped.run.recorded
        print(
            f"error: {stopped} ({missing} of {stopped.run.planned} episodes to go)", file=sys.stderr
        )
        return EXIT_UNREACHABLE
    if result.interrupted:
        return _report_interrupted(result)
    _print_summary(result)
    if args.twins:
        _print_twins(result, twin_ids, args.seed)
    return _report_incomplete(result)


def _print_twins(result: EvalRun, twin_ids: set[str], seed: int) -> None:
    """Pairs each scenario's episodes with its twin's (`eval.twins`): twins.json/.md."""
    from eval import twins

    originals, played = twins.split_lines(read_episodes(result.run_dir / EPISODES), twin_ids)
    summary = twins.summarize_pairs(twins.pair_episodes(originals, played), seed=seed)
    path = twins.write_twins(result.run_dir, summary)
    print("\n".join(twins.headline(summary)))
    print(f"twins: {path}")


def _print_summary(result: EvalRun) -> None:
    """The headline figures, then where the rest is (summary.md, the episodes)."""
    if result.summary is None:
        return
    for note in (identical_samples_note(result.summary), errors_note(result.summary)):
        if note:
            print(f"note: {note}", file=sys.stderr)
    print("\n".join(headline(result.summary)))
    print(f"summary: {result.summary_md}")
    print(f"episodes: {result.run_dir / EPISODES}")


def _report_interrupted(result: EvalRun) -> int:
    """One line: what Ctrl-C left recorded, and how to go on."""
    where = f"{result.run_dir}" + (f", summary {result.summary_md}" if result.summary else "")
    print(
        f"interrupted: {result.recorded} of {result.planned} episodes kept ({where}); "
        "rerun the same command to resume",
        file=sys.stderr,
    )
    return EXIT_INTERRUPTED


def _report_incomplete(result: EvalRun) -> int:
    if not result.incomplete:
        return 0
    print(
        f"{len(result.incomplete)} of {result.planned} episodes are incomplete "
        f"({result.recorded} recorded) after transient failures "
        f"({'; '.join(result.causes)[:300]}); rerun the same command to resume them",
        file=sys.stderr,
    )
    return EXIT_INCOMPLETE


def main(argv: list[str] | None = None) -> int:
    return run_resumable(
        lambda: run(parse_args(argv)), (PolicyError, RunLogError, UnknownSplit, UsageError)
    )


if __name__ == "__main__":
    sys.exit(main())
