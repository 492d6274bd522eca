"""Difficulty filter: sample each scenario k times with a policy and record its success rate.

    python -m training.filter --model qwen3.5-4b-vllm --samples 8 --split train --limit 2000
    python -m training.filter --base-url http://127.0.0.1:8000/v1 --model-name Qwen/Qwen3.5-4B ...

A scenario the policy always solves or never solves gives GRPO equal rewards in every group
(no gradient); runs with `data.filter = "<this file>"` keep only 0 < rate < 1. Success is the
eval grader's. Progress is appended per scenario to `<out>.jsonl`, so a rerun resumes; the
summary JSON is rewritten at the end. Exit codes: 0 done; 2 a user mistake; 3 rerun to finish.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agent.policy import Policy, PolicyError, TransientPolicyError
from agent.registry import DEFAULT_REGISTRY, build_policy, check_reachable, resolve_model
from env.cli import EXIT_INCOMPLETE, run_resumable
from env.generator import generate
from env.scenario import Scenario, reveal_truth
from env.splits import SPLITS, UnknownSplit, split_seeds

if TYPE_CHECKING:
    from agent.rollout import RolloutConfig  # imports art (slow): only when measuring


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


def default_out(model_slug: str, split: str, samples: int) -> Path:
    return Path("results") / "filter" / f"{model_slug}-{split}-s{samples}.json"


def progress_path(out: Path) -> Path:
    return out.with_suffix(".jsonl")


def load_progress(out: Path, header: FilterHeader, *, force: bool = False) -> FilterFile:
    """Rows measured so far; a file measured under another header is refused (or reset)."""
    path = progress_path(out)
    if not path.is_file():
        return FilterFile(header=header)
    lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    try:
        old = FilterHeader.model_validate_json(lines[0]) if lines else None
        rows = [ScenarioRate.model_validate_json(line) for line in lines[1:]]
    except ValidationError:
        raise FilterError(f"{path} is damaged; delete it to start over") from None
    if old != header:
        if not force:
            raise FilterError(
                f"{path} was measured with {_differences(old, header)}; "
                "pass --force to start it over, or choose another --out"
            )
        path.unlink()
        return FilterFile(header=header)
    return FilterFile(header=header, scenarios={row.scenario_id: row for row in rows})


def _differences(old: FilterHeader | None, new: FilterHeader) -> str:
    if old is None:
        return "no header"
    before, after = old.model_dump(), new.model_dump()
    return ", ".join(
        f"{k}={before[k]!r} (now {after[k]!r})" for k in before if before[k] != after[k]
    )


class _Progress:
    """Appends one line per finished scenario, the header first; the summary is written last."""

    def __init__(self, out: Path, state: FilterFile) -> None:
        self.out = out
        self.state = state
        path = progress_path(out)
        path.parent.mkdir(parents=True, exist_ok=True)
        fresh = not path.is_file() or path.stat().st_size == 0
        self._file = path.open("a", encoding="utf-8")
        if fresh:
            self._write(state.header.model_dump_json())

    def add(self, row: ScenarioRate) -> None:
        self.state.scenarios[row.scenario_id] = row
        self._write(row.model_dump_json())

    def _write(self, line: str) -> None:
        self._file.write(line + "\n")
        self._file.flush()

    def close(self) -> None:
        self._file.close()
        tmp = self.out.with_suffix(".json.tmp")
        tmp.write_text(self.state.model_dump_json(indent=1), encoding="utf-8")
        os.replace(tmp, self.out)


@dataclass(frozen=True)
class FilterSettings:
    samples: int
    tool_budget: int
    max_turns: int
    concurrency: int


async def measure(
    policy: Policy, scenarios: Iterable[Scenario], settings: FilterSettings, progress: _Progress
) -> int:
    """Runs every scenario's samples; returns how many scenarios were left for a rerun."""
    from agent.rollout import RolloutConfig

    config = RolloutConfig(tool_budget=settings.tool_budget, max_turns=settings.max_turns)
    semaphore = asyncio.Semaphore(settings.concurrency)
    left = 0

    async def one(scenario: Scenario) -> None:
        nonlocal left
        outcomes = await asyncio.gather(
            *(_sample(policy, scenario, config, semaphore) for _ in range(settings.samples))
        )
        if any(outcome is None for outcome in outcomes):
            left += 1  # transient failures in every retry: measure it on the next run
            return
        progress.add(_row(scenario, [outcome for outcome in outcomes if outcome is not None]))

    try:
        async with asyncio.TaskGroup() as group:
            for scenario in scenarios:
                group.create_task(one(scenario))
    except* PolicyError as failure:
        raise failure.exceptions[0] from None
    return left


async def _sample(
    policy: Policy, scenario: Scenario, config: RolloutConfig, semaphore: asyncio.Semaphore
) -> str | None:
    """'success', 'failure' or 'error'; None when the API failed transiently throughout."""
    from agent.rollout import run_episode
    from eval.grader import grade_episode

    async with semaphore:
        try:
            result = await run_episode(policy, scenario, config)
        except TransientPolicyError:
            return None
        except PolicyError:
            raise
        except Exception:  # a bug in one episode is a failed sample, not a failed run
            return "error"
    grade = grade_episode(reveal_truth(scenario), result.record, scenario.database)
    return "success" if grade.success else "failure"


def _row(scenario: Scenario, outcomes: list[str]) -> ScenarioRate:
    return ScenarioRate(
        scenario_id=scenario.scenario_id,
        seed=scenario.seed,
        difficulty=scenario.difficulty,
        label=reveal_truth(scenario).label,
        samples=len(outcomes),
        successes=outcomes.count("success"),
        errors=outcomes.count("error"),
    )


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    # the policy (resolved like eval/run.py)
    parser.add_argument("--model", help="alias from agent/models.toml, reference, auditor, ...")
    parser.add_argument("--base-url", help="OpenAI-compatible server, e.g. http://host:8000/v1")
    parser.add_argument("--model-name", help="the served model name at --base-url")
    parser.add_argument("--registry", type=Path, default=DEFAULT_REGISTRY)
    parser.add_argument("--temperature", type=float, help="overrides the registry's")
    # what to measure
    parser.add_argument("--split", default="train", choices=sorted(SPLITS))
    parser.add_argument("--limit", type=int, required=True, help="the first N seeds of the split")
    parser.add_argument("--samples", type=int, default=8, help="episodes per scenario")
    parser.add_argument("--tool-budget", type=int, default=30, help="as the run's [rollout]")
    parser.add_argument("--max-turns", type=int, default=40, help="as the run's [rollout]")
    # how
    parser.add_argument("--concurrency", type=int, default=8, help="episodes in flight")
    parser.add_argument("--out", type=Path, help="default results/filter/<model>-<split>-s<k>.json")
    parser.add_argument("--force", action="store_true", help="restart a file measured otherwise")
    args = parser.parse_args(argv)
    for name in ("limit", "samples", "concurrency", "tool_budget", "max_turns"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1")
    return args


def run(args: argparse.Namespace) -> int:
    from env.versions import generator_hash, tool_contract_hash

    target = resolve_model(
        args.model, base_url=args.base_url, model_name=args.model_name, registry_path=args.registry
    )
    seeds = split_seeds(args.split, args.limit)
    policy = build_policy(target, temperature=args.temperature)
    check_reachable(target)
    header = FilterHeader(
        model=target.name,
        split=args.split,
        samples=args.samples,
        tool_budget=args.tool_budget,
        tool_contract=tool_contract_hash(),
        generator=generator_hash(),
    )
    out = args.out or default_out(target.slug, args.split, args.samples)
    state = load_progress(out, header, force=args.force)
    todo = [
        generate(args.split, seed)
        for seed in seeds
        if f"{args.split}-{seed}" not in state.scenarios
    ]
    if state.scenarios:
        print(
            f"resuming {out}: {len(state.scenarios)} measured, {len(todo)} to go", file=sys.stderr
        )
    settings = FilterSettings(args.samples, args.tool_budget, args.max_turns, args.concurrency)
    progress = _Progress(out, state)
    try:
        left = asyncio.run(_measure_and_close(policy, todo, settings, progress))
    finally:
        progress.close()
    kept = len(state.informative())
    print(f"{out}: {len(state.scenarios)} scenarios, {kept} with 0 < rate < 1")
    if left:
        print(f"{left} scenarios hit transient API errors; rerun to finish them", file=sys.stderr)
        return EXIT_INCOMPLETE
    return 0


async def _measure_and_close(
    policy: Policy, todo: list[Scenario], settings: FilterSettings, progress: _Progress
) -> int:
    try:
        return await measure(policy, todo, settings, progress)
    finally:
        await policy.aclose()


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    return run_resumable(lambda: run(args), (PolicyError, FilterError, UnknownSplit))


if __name__ == "__main__":
    sys.exit(main())
