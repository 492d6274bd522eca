"""Difficulty filter: sample each scenario k times with a policy and record its success rate.

    python -m training.filter --model qwen3.5-4b-vllm --k 8 --split train --limit 2000
    python -m training.filter --base-url http://127.0.0.1:8000/v1 --model-name Qwen/Qwen3.5-4B ...

A scenario the policy always solves or never solves gives GRPO equal rewards in every group
(no gradient); runs with `data.filter = "<this file>"` keep only 0 < rate < 1. The filter is a
reader of an eval run: `eval.run.evaluate` plays and grades the episodes into `<out>` without
`.json` (episodes.jsonl, run.json, summary.json; a rerun resumes it), and the filter file is
written from that run's per-scenario successes (the grader's). Exit codes: 0 done; 2 a user
mistake; 3 rerun to finish.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agent.policy import PolicyError
from agent.registry import DEFAULT_REGISTRY, build_policy, check_reachable, resolve_model
from env.cli import EXIT_INCOMPLETE, Parser, run_resumable
from env.generation.generator import generate
from env.generation.splits import SPLITS, UnknownSplit, split_seeds
from eval.episode_log import EPISODES, RUN_CONFIG, EpisodeLine, read_episodes
from eval.summary import SUMMARY_JSON, SUMMARY_MD


class FilterError(RuntimeError):
    """A filter file that cannot be used as asked: one line for the user."""


class FilterHeader(BaseModel):
    """What was measured; a resumed file must match it, so rates are never mixed."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    model: str = Field(description="the policy's name, e.g. 'qwen3.5-4b-vllm'")
    split: str = Field(description="the split the seeds come from, e.g. 'train'")
    samples: int = Field(ge=1, description="episodes per scenario")
    tool_budget: int = Field(ge=1)
    tool_contract: str = Field(description="env.versions.tool_contract_hash()")
    generator: str = Field(description="env.versions.generator_hash()")


class ScenarioRate(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    scenario_id: str = Field(description="e.g. 'train-1000042'")
    seed: int
    difficulty: str
    label: str
    samples: int = Field(ge=0)
    successes: int = Field(ge=0)
    errors: int = Field(0, ge=0, description="episodes that raised; counted as failures")

    @property
    def rate(self) -> float:
        return self.successes / self.samples if self.samples else 0.0


class FilterFile(BaseModel):
    """The summary `data.filter` points at."""

    model_config = ConfigDict(extra="forbid")

    header: FilterHeader
    scenarios: dict[str, ScenarioRate] = Field(default_factory=dict)

    def informative(self) -> set[str]:
        """Scenario ids a GRPO group can learn from: solved sometimes, not always."""
        return {sid for sid, row in self.scenarios.items() if 0.0 < row.rate < 1.0}


def read_filter(path: Path) -> FilterFile:
    try:
        return FilterFile.model_validate_json(path.read_bytes())
    except OSError as exc:
        raise FilterError(f"cannot read the filter file {path}: {exc.strerror}") from None
    except ValidationError as exc:
        raise FilterError(
            f"{path} is not a training.filter output: {exc.errors()[0]['msg']}"
        ) from None


def default_out(model_slug: str, split: str, k: int) -> Path:
    return Path("results") / "filter" / f"{model_slug}-{split}-k{k}.json"


def eval_run_dir(out: Path) -> Path:
    """The eval run the filter file is read from: `<out>` without `.json`, a directory."""
    return out.with_suffix("") if out.suffix else out.with_name(f"{out.name}-run")


def check_header(run_dir: Path, header: FilterHeader, *, force: bool = False) -> None:
    """Refuses an eval run measured under another header (with `force`: starts it over)."""
    path = run_dir / RUN_CONFIG
    if not path.is_file():
        return
    try:
        old: FilterHeader | None = _header_of(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, KeyError, ValidationError):
        old = None
    if old == header:
        return
    if not force:
        raise FilterError(
            f"{run_dir} was measured with {_differences(old, header)}; "
            "pass --force to start it over, or choose another --out"
        )
    for name in (EPISODES, RUN_CONFIG, SUMMARY_JSON, SUMMARY_MD):
        (run_dir / name).unlink(missing_ok=True)


def _header_of(config: dict[str, Any]) -> FilterHeader:
    """The filter header an eval run's run.json records."""
    return FilterHeader(
        model=config["model"],
        split=config["split"],
        samples=config["k"],
        tool_budget=config["tool_budget"],
        tool_contract=config["tool_contract"],
        generator=config["generator"],
    )


def _differences(old: FilterHeader | None, new: FilterHeader) -> str:
    if old is None:
        return "no filter header"
    before, after = old.model_dump(), new.model_dump()
    return ", ".join(
        f"{k}={before[k]!r} (now {after[k]!r})" for k in before if before[k] != after[k]
    )


def scenario_rates(lines: Iterable[EpisodeLine], k: int) -> dict[str, ScenarioRate]:
    """Each scenario with all k samples recorded: its successes (the grader's) out of k.

    An error line is a failed sample (`errors` counts the episodes that raised); a scenario
    with a sample still incomplete is left out until a rerun records it."""
    samples: dict[str, list[EpisodeLine]] = defaultdict(list)
    for line in lines:
        if line.sample < k:
            samples[line.scenario_id].append(line)
    return {
        sid: ScenarioRate(
            scenario_id=sid,
            seed=group[0].seed,
            difficulty=group[0].difficulty,
            label=group[0].label,
            samples=len(group),
            successes=sum(line.success for line in group),
            errors=sum(line.end_reason == "error" for line in group),
        )
        for sid, group in sorted(samples.items(), key=lambda item: item[1][0].seed)
        if len(group) == k
    }


def write_filter(out: Path, measured: FilterFile) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".json.tmp")
    tmp.write_text(measured.model_dump_json(indent=1), encoding="utf-8")
    os.replace(tmp, out)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = Parser(prog="python -m training.filter", description=__doc__.splitlines()[0])
    # the policy (resolved like eval/run.py)
    parser.add_argument("--model", help="alias from agent/models.toml, reference, auditor, ...")
    parser.add_argument("--base-url", help="OpenAI-compatible server, e.g. http://host:8000/v1")
    parser.add_argument("--model-name", help="the served model name at --base-url")
    parser.add_argument("--registry", type=Path, default=DEFAULT_REGISTRY)
    parser.add_argument("--temperature", type=float, help="overrides the registry's")
    # what to measure
    parser.add_argument("--split", default="train", choices=sorted(SPLITS))
    parser.add_argument("--limit", type=int, required=True, help="the first N seeds of the split")
    parser.add_argument("--k", type=int, default=8, help="episodes per scenario")
    parser.add_argument("--tool-budget", type=int, default=30, help="as the run's [rollout]")
    parser.add_argument("--max-turns", type=int, default=40, help="as the run's [rollout]")
    # how
    parser.add_argument("--concurrency", type=int, default=8, help="episodes in flight")
    parser.add_argument("--out", type=Path, help="default results/filter/<model>-<split>-k<k>.json")
    parser.add_argument("--force", action="store_true", help="restart a run measured otherwise")
    args = parser.parse_args(argv)
    for name in ("limit", "k", "concurrency", "tool_budget", "max_turns"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1")
    return args


def run(args: argparse.Namespace) -> int:
    """Measures (or resumes) the eval run, then writes the filter file from its episodes."""
    from agent.rollout import RolloutConfig
    from env.versions import generator_hash, tool_contract_hash
    from eval.run import evaluate

    target = resolve_model(
        args.model, base_url=args.base_url, model_name=args.model_name, registry_path=args.registry
    )
    seeds = split_seeds(args.split, args.limit)
    policy = build_policy(target, temperature=args.temperature)
    check_reachable(target)
    header = FilterHeader(
        model=target.name,
        split=args.split,
        samples=args.k,
        tool_budget=args.tool_budget,
        tool_contract=tool_contract_hash(),
        generator=generator_hash(),
    )
    out = args.out or default_out(target.slug, args.split, args.k)
    run_dir = eval_run_dir(out)
    check_header(run_dir, header, force=args.force)
    result = asyncio.run(
        evaluate(
            policy,
            [generate(args.split, seed) for seed in seeds],
            k=args.k,
            run_dir=run_dir,
            config=_run_config(header, target.kind, args),
            rollout=RolloutConfig(tool_budget=args.tool_budget, max_turns=args.max_turns),
            concurrency=args.concurrency,
        )
    )
    lines = read_episodes(run_dir / EPISODES)
    measured = FilterFile(header=header, scenarios=scenario_rates(lines, args.k))
    write_filter(out, measured)
    kept = len(measured.informative())
    print(f"{out}: {len(measured.scenarios)} scenarios, {kept} with 0 < rate < 1")
    left = len({job.scenario.scenario_id for job in result.incomplete})
    if left:
        print(f"{left} scenarios hit transient API errors; rerun to finish them", file=sys.stderr)
        return EXIT_INCOMPLETE
    return 0


def _run_config(header: FilterHeader, kind: str, args: argparse.Namespace) -> dict[str, Any]:
    """The eval run's run.json: what eval/run.py records, and the filter header (`_header_of`)."""
    return {
        "model": header.model,
        "kind": kind,
        "split": header.split,
        "k": header.samples,
        "limit": args.limit,
        "temperature": args.temperature,
        "tool_budget": header.tool_budget,
        "max_turns": args.max_turns,
        "tool_contract": header.tool_contract,
        "generator": header.generator,
    }


def main(argv: list[str] | None = None) -> int:
    return run_resumable(lambda: run(parse_args(argv)), (PolicyError, FilterError, UnknownSplit))


if __name__ == "__main__":
    sys.exit(main())
