"""The base-rate probe: how often does this model already succeed, before GRPO spends anything?

GRPO learns only from groups whose outcomes differ. With 8 rollouts a group, a group has any
spread with probability 0.15 at a 2% success rate and 0.34 at 5% (1 - p^8 - (1 - p)^8), and a
tied group is dropped: a run that starts too low trains on almost nothing. So before a run (or
as the run's first phase, `[probe]`), k samples on a stratified set of train scenarios against
the served model (the base, or the warm start) say what GRPO will see: grounded success per
level and root cause, the share of groups with spread, how much of the success is the cheapest
mode (a `no_error` read), the format-error rate, and what that implies for the run.

    python -m training.probe --run binary-01 --base-url http://localhost:8000/v1 --model-name M
    python -m training.probe --run binary-01 --model auditor --k 2      # offline, on this CPU

It plays through `eval.run.evaluate` (the one way to play and grade), writes the episodes and
`probe.json` to --out, and prints the verdict. 96 scenarios x 8 = 768 rollouts: about ten GRPO
steps' worth of inference and no training; it replaces filtering the whole pool (docs/gpu.md).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from agent.messages import malformed_turns
from agent.policy import Policy, PolicyError
from agent.rollout import RolloutConfig, RolloutResult
from env.cli import Parser, UsageError, positive_int, run_resumable
from env.generation.generator import generate
from env.generation.splits import split_assignment
from env.scenario import Scenario
from eval.episode_log import EPISODES, RunLogError, read_episodes
from eval.grader import EpisodeGrade
from eval.jobs import Job
from eval.run import evaluate
from eval.stats import pass_hat_k
from training.data_order import DataPlan, plan_data
from training.runs import RunConfig, RunConfigError, load_run_config

PROBE_FILE = "probe.json"
# below it, gather more groups a step: the reward lab's recipe table (decision 2, from a start at
# 4% grounded success) found 8 x 8 gathering 12 groups ahead after 20 steps (66% against 51%),
# and 4 x 16 no better than 8 x 8 at equal rollouts (45%: fewer groups carry a gradient)
LOW_BASE_RATE = 0.20
LAZY_SHARE = 0.5  # more of the successes than this are no_error reads: the lazy mode dominates
FEW_SPREAD = 0.25  # fewer groups than this with spread: oversample more
SATURATED = 0.9  # above it most groups all succeed


@dataclass(frozen=True)
class ProbeResult:
    model: str
    k: int
    scenarios: int
    episodes: int
    success: float  # grounded success over every episode (errors count as failures)
    by_level: dict[str, float]
    by_label: dict[str, float]
    spread_share: float  # scenarios whose k samples differ in grounded success
    spread_at: dict[int, float]  # P(a group of n has spread): n <= k unbiased, larger plug-in
    no_error_share: float  # of the successes, those whose true label is no_error
    format_error_rate: float  # assistant turns that were not well-formed tool calls
    mean_tool_calls: float
    verdict: str
    advice: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        levels = ", ".join(f"{level} {rate:.1%}" for level, rate in self.by_level.items())
        labels = ", ".join(f"{label} {rate:.0%}" for label, rate in self.by_label.items())
        spread = ", ".join(f"n={n} {share:.2f}" for n, share in self.spread_at.items())
        return [
            f"probe of {self.model}: {self.scenarios} train scenarios x k={self.k} "
            f"({self.episodes} episodes)",
            f"  grounded success {self.success:.1%} ({levels})",
            f"  by root cause: {labels}",
            f"  groups with spread {self.spread_share:.2f} at n={self.k}; P(spread) {spread}",
            f"  no_error share of the successes {self.no_error_share:.0%}; format errors "
            f"{self.format_error_rate:.1%} of turns; {self.mean_tool_calls:.1f} tool calls",
            f"  verdict: {self.verdict}",
            *(f"  - {line}" for line in self.advice),
        ]


def probe_seeds(plan: DataPlan, count: int, split: str) -> list[int]:
    """`count` seeds of the GRPO pool spread over its (level, root cause) cells: levels in turn,
    each level walking the causes from its own offset (so a dozen picks already cover a dozen
    causes), each cell in the pool's own shuffled order."""
    cells: dict[tuple[str, str], list[int]] = defaultdict(list)
    for phase in plan.phases:
        for seed in phase.seeds:
            cells[(phase.difficulty, split_assignment(split, seed).label)].append(seed)
    levels = [phase.difficulty for phase in plan.phases]
    labels = sorted({label for _, label in cells})
    order = [
        (level, labels[(index * len(labels) // len(levels) + step) % len(labels)])
        for step in range(len(labels))
        for index, level in enumerate(levels)
    ]
    chosen: list[int] = []
    while len(chosen) < count and any(cells.values()):
        for cell in order:
            if cells.get(cell) and len(chosen) < count:
                chosen.append(cells[cell].pop(0))
    return chosen


def spread_probability(successes: int, k: int, n: int) -> float:
    """P(n rollouts do not all agree) from c of k: unbiased for n <= k (the pass^k estimator of
    all-succeed and all-fail, τ-bench), the plug-in 1 - p^n - (1-p)^n above k."""
    if n <= k:
        return 1.0 - pass_hat_k(k, successes, n) - pass_hat_k(k, k - successes, n)
    p = successes / k
    return 1.0 - p**n - (1.0 - p) ** n


def summarise(
    model: str, k: int, lines: Sequence[Any], turns: dict[tuple[str, int], tuple[int, int]]
) -> ProbeResult:
    """From the recorded episode lines (eval.episode_log) and each episode's malformed turns."""
    wins: dict[str, list[bool]] = defaultdict(list)
    level: dict[str, str] = {}
    label: dict[str, str] = {}
    calls: list[int] = []
    for line in lines:
        grounded = bool((line.grade or {}).get("grounded_success"))
        wins[line.scenario_id].append(grounded)
        level[line.scenario_id], label[line.scenario_id] = line.difficulty, line.label
        calls.append(line.tool_calls)
    episodes = [w for trials in wins.values() for w in trials]
    successes = sum(episodes)
    by_level = _rates(wins, level)
    by_label = _rates(wins, label)
    counts = {sid: sum(trials) for sid, trials in wins.items()}
    spread_share = _mean([0 < c < len(wins[sid]) for sid, c in counts.items()])
    spread_at = {
        n: _mean([spread_probability(c, len(wins[sid]), n) for sid, c in counts.items()])
        for n in (8, 16)
    }
    no_error = sum(counts[sid] for sid in counts if label[sid] == "no_error")
    bad, total = (sum(parts) for parts in zip(*turns.values(), strict=True)) if turns else (0, 0)
    return ProbeResult(
        model=model,
        k=k,
        scenarios=len(wins),
        episodes=len(episodes),
        success=successes / len(episodes) if episodes else 0.0,
        by_level=by_level,
        by_label=by_label,
        spread_share=spread_share,
        spread_at=spread_at,
        no_error_share=no_error / successes if successes else 0.0,
        format_error_rate=bad / total if total else 0.0,
        mean_tool_calls=_mean(calls),
        verdict="",  # judge() decides
    )


def judge(result: ProbeResult, min_success: float = 0.02) -> ProbeResult:
    """The verdict and what it implies for the run; the thresholds are stated in the module."""
    advice: list[str] = []
    if result.success < min_success:
        verdict = "warm start needed"
        advice.append(
            f"grounded success {result.success:.1%} < {min_success:.0%}: almost every group "
            "ties and is dropped; warm-start by SFT ([cold_start]) before GRPO"
        )
    elif result.success < LOW_BASE_RATE:
        verdict = "low base rate: oversample 2"
        advice.append(
            f"grounded success {result.success:.1%} < {LOW_BASE_RATE:.0%}: keep 8 x 8 and "
            f"gather more groups a step ([grpo] oversample = 2): P(spread) is "
            f"{result.spread_at[8]:.2f} a group of 8 ({result.spread_at[16]:.2f} at 16, but "
            "fewer groups of 16 carry a gradient at equal rollouts: the reward lab's recipe table)"
        )
    elif result.success < SATURATED:
        verdict = "ready: 8 x 8"
    else:
        verdict = "saturated"
        advice.append(
            f"grounded success {result.success:.1%}: most groups all succeed and teach nothing; "
            "train on harder levels (the curriculum's later phases) or evaluate instead"
        )
    if result.spread_share < FEW_SPREAD and min_success <= result.success < SATURATED:
        advice.append(
            f"only {result.spread_share:.0%} of groups have spread: oversample = 2 gathers "
            "enough informative groups per step"
        )
    if result.no_error_share > LAZY_SHARE:
        advice.append(
            f"{result.no_error_share:.0%} of the successes are no_error verdicts: the cheapest "
            "mode (a lazy read of the disputed invoice) carries the signal; consider "
            "[data] twins = true and watch the per-class curves"
        )
    return ProbeResult(**{**asdict(result), "verdict": verdict, "advice": advice})


def _rates(wins: dict[str, list[bool]], key: dict[str, str]) -> dict[str, float]:
    pooled: dict[str, list[bool]] = defaultdict(list)
    for sid, trials in wins.items():
        pooled[key[sid]] += trials
    return {name: _mean(values) for name, values in sorted(pooled.items())}


def _mean(values: Sequence[float | int | bool]) -> float:
    return sum(values) / len(values) if values else 0.0


async def run_probe(
    policy: Policy,
    scenarios: Sequence[Scenario],
    *,
    k: int,
    run_dir: Path,
    config: dict[str, Any],
    rollout: RolloutConfig,
    concurrency: int,
    min_success: float = 0.02,
) -> ProbeResult:
    """Plays k samples of each scenario into `run_dir` (resumable) and writes probe.json."""
    turns: dict[tuple[str, int], tuple[int, int]] = {}

    def count_turns(job: Job, result: RolloutResult, grade: EpisodeGrade | None) -> None:
        turns[job.key] = malformed_turns(result.messages)

    await evaluate(
        policy,
        scenarios,
        k=k,
        run_dir=run_dir,
        config=config,
        rollout=rollout,
        concurrency=concurrency,
        on_episode=count_turns,
        label=f"probing {policy.name}",
    )
    lines = read_episodes(run_dir / EPISODES)
    result = judge(summarise(policy.name, k, lines, turns), min_success)
    (run_dir / PROBE_FILE).write_text(json.dumps(asdict(result), indent=1), encoding="utf-8")
    return result


def probe_config(run: RunConfig, model: str, k: int, count: int) -> dict[str, Any]:
    from env.versions import generator_hash, tool_contract_hash

    return {
        "model": model,
        "kind": "probe",
        "run": run.name,
        "split": run.data.split,
        "k": k,
        "limit": count,
        "tool_contract": tool_contract_hash(),
        "generator": generator_hash(),
    }


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = Parser(prog="python -m training.probe", description=__doc__.splitlines()[0])
    parser.add_argument("--run", default="binary-01", help="the run whose data and rollout")
    parser.add_argument("--model", help="an alias (agent/models.toml, auditor, ...)")
    parser.add_argument("--base-url", help="OpenAI-compatible server (vLLM serving the model)")
    parser.add_argument("--model-name", help="the served model name at --base-url")
    parser.add_argument("--k", type=positive_int, help="samples per scenario (the run's [probe])")
    parser.add_argument("--scenarios", type=positive_int, help="how many (the run's [probe])")
    parser.add_argument("--concurrency", type=positive_int, default=32)
    parser.add_argument("--out", type=Path, help="default outputs/probe/<run>-<model>")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    return run_resumable(
        lambda: _command(parse_args(argv)), (PolicyError, RunConfigError, RunLogError)
    )


def _command(args: argparse.Namespace) -> int:
    from agent.registry import api_key, build_policy, check_reachable, resolve_model

    run = load_run_config(args.run)
    target = resolve_model(args.model, base_url=args.base_url, model_name=args.model_name)
    api_key(target)
    check_reachable(target)
    k = args.k or run.probe.k
    if k < 2:
        raise UsageError("--k must be at least 2: spread needs two samples")
    count = args.scenarios or run.probe.scenarios
    seeds = probe_seeds(plan_data(run), count, run.data.split)
    scenarios = [generate(run.data.split, seed) for seed in seeds]
    out = args.out or Path("outputs") / "probe" / f"{run.name}-{target.slug}"
    config = RolloutConfig(
        tool_budget=run.rollout.tool_budget, max_turns=run.rollout.max_turns, reward=run.reward
    )
    result = asyncio.run(
        run_probe(
            build_policy(target),
            scenarios,
            k=k,
            run_dir=out,
            config=probe_config(run, target.name, k, count),
            rollout=config,
            concurrency=args.concurrency,
            min_success=run.probe.min_success,
        )
    )
    print("\n".join(result.lines()))
    print(f"probe: {out / PROBE_FILE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
