"""How fast LedgerGym is: generation, each tool, whole episodes, and rollouts.

RL wants thousands of episodes per step, so each figure is printed beside its target with
PASS/MISS (a report: a miss does not fail the command). The episode figures (issue 24's targets:
reset, one read tool call, reward, grader, the whole machinery of a reference episode) come from
fresh worker processes, judged on thread CPU time, each with its ratio to the baseline commit of
`checks/bench_baseline.txt` from interleaved rounds (`checks.bench_episodes`). `--compare REV`
runs only that comparison and exits 1 when the replay machinery's median ratio is above
`--max-ratio` (the CI guard); `--tau2 PATH` sets the machinery beside τ²-bench retail's. The
rollout part imports ART (torch) and costs ~10-20 s of import alone.
Run: `python -m checks.bench [--quick] [--no-rollout] [--no-baseline] [--json PATH]`,
`python -m checks.bench --compare [REV] [--rounds N] [--max-ratio 1.3]`, `... --tau2 PATH`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from checks import bench_episodes
from checks.bench_episodes import ROOT, EpisodeFigure, EpisodeSizes
from env.cli import Parser, UsageError, positive_int, run_command
from env.generation.generator import generate
from env.generation.splits import SPLITS, split_seeds
from env.ledger_env import LedgerEnv, open_database
from env.read_memo import forget_all
from env.scenario import Scenario, reveal_truth
from env.tools import TOOL_NAMES

MS = 1000.0


@dataclass(frozen=True)
class Sizes:
    """How much of each measurement to take; `quick` is for tests and smoke runs."""

    generated: int = 600
    scenarios: int = 24
    tool_repeats: int = 20
    episodes: int = 192  # rollouts per concurrency
    machinery: EpisodeSizes = field(default_factory=EpisodeSizes)
    rounds: int = 3  # interleaved rounds against the baseline commit

    @classmethod
    def quick(cls) -> Sizes:
        return cls(
            generated=40,
            scenarios=6,
            tool_repeats=3,
            episodes=16,
            machinery=EpisodeSizes.quick(),
            rounds=1,
        )


@dataclass
class Figure:
    name: str
    value: float
    unit: str
    target: float | None = None
    higher_is_better: bool = False
    extra: dict[str, float] = field(default_factory=dict)

    @property
    def passed(self) -> bool | None:
        if self.target is None:
            return None
        return self.value >= self.target if self.higher_is_better else self.value <= self.target

    def line(self) -> str:
        extra = ", ".join(f"{k} {v:.4g}" for k, v in self.extra.items())
        shown = f"{self.value:.4g} {self.unit}" + (f" ({extra})" if extra else "")
        if self.target is None:
            return f"{self.name:<34} {shown}"
        sign = ">=" if self.higher_is_better else "<="
        verdict = "PASS" if self.passed else "MISS"
        return f"{self.name:<34} {shown:<44} target {sign} {self.target:g}  {verdict}"


def p99(values: Sequence[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


def _timed_ms(values: list[float], name: str, target: float | None) -> Figure:
    return Figure(
        name, statistics.median(values) * MS, "ms median", target, extra={"p99": p99(values) * MS}
    )


# generation -----------------------------------------------------------------------------------


def bench_generation(count: int) -> tuple[Figure, ...]:
    """Fresh scenarios (the uncached function) from train seeds no other figure uses."""
    first = SPLITS["train"].first_seed + 50_000
    seeds = range(first, first + count)
    for seed in split_seeds("train", 30):  # warm up: the first scenarios load the data files
        generate.__wrapped__("train", seed)
    sizes = []
    wall, cpu = time.perf_counter(), time.process_time()
    for seed in seeds:
        sizes.append(len(generate.__wrapped__("train", seed).database))
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    # both clocks: on a busy machine the wall rate is the other jobs' business too
    rates = (
        Figure("generation (wall clock)", count / wall, "scenarios/s", 200, True),
        Figure("generation (cpu time)", count / cpu, "scenarios/s", 200, True),
    )
    size = Figure("database size", statistics.median(sizes), "bytes median",
                  extra={"max": max(sizes)})  # fmt: skip
    return (*rates, size)


# reset and tools ------------------------------------------------------------------------------


def tool_arguments(scenario: Scenario) -> dict[str, list[dict[str, Any]]]:
    """Calls worth timing: the reference's own, plus one plain call of every tool (on an invoice
    with room left for a credit: an earlier credit note may have returned a whole total)."""
    db = open_database(scenario.database)
    try:
        jurisdiction = db.execute("SELECT tax_jurisdiction FROM customers").fetchone()[0]
        invoice, sub, start = db.execute(
            "SELECT id, subscription_id, period_start FROM invoices i WHERE total_cents > ("
            "SELECT COALESCE(SUM(amount_cents), 0) + 100 FROM credit_notes n "
            "WHERE n.invoice_id = i.id) ORDER BY period_start"
        ).fetchone()
    finally:
        db.close()
    customer = scenario.customer_id
    calls: dict[str, list[dict[str, Any]]] = {
        "get_customer": [{"customer_id": customer}],
        "list_invoices": [{"customer_id": customer}],
        "get_invoice": [{"invoice_id": invoice}],
        "list_payments": [{"customer_id": customer}],
        "get_subscription_timeline": [{"subscription_id": sub}],
        "get_tax_rate": [{"jurisdiction": jurisdiction, "date": start}],
        "recompute_invoice": [{"invoice_id": invoice}],
        # a cent at a time: repeats must not run into the "exceeds uncredited" refusal
        "draft_credit_note": [{"invoice_id": invoice, "amount": "0.01", "reason": "bench"}],
        "submit_findings": [],
    }
    for step in reveal_truth(scenario).reference:
        if step.name != "draft_credit_note":
            calls[step.name].append(step.arguments)
    return calls


def bench_tools(scenarios: Sequence[Scenario], repeats: int) -> list[Figure]:
    """Each tool as on a scenario's first play: every read memo emptied before each call (a
    replay answers repeated reads from `env.read_memo`; the episode figures time that)."""
    times: dict[str, list[float]] = defaultdict(list)
    errors: dict[str, int] = defaultdict(int)
    for scenario in scenarios:
        calls = tool_arguments(scenario)
        for name in TOOL_NAMES:
            if name == "submit_findings":
                continue
            for arguments in calls[name]:
                text = json.dumps(arguments)
                for _ in range(repeats):
                    forget_all()
                    env = LedgerEnv(scenario, tool_budget=10**9)
                    start = time.perf_counter()
                    result = env.call(name, text)
                    times[name].append(time.perf_counter() - start)
                    errors[name] += '"error"' in result[:10]
                    env.close()
        for arguments in calls["submit_findings"]:  # ends an episode: a fresh one per call
            for _ in range(repeats):
                env = LedgerEnv(scenario)
                env.call("get_customer", json.dumps({"customer_id": scenario.customer_id}))
                start = time.perf_counter()
                result = env.call("submit_findings", json.dumps(arguments))
                times["submit_findings"].append(time.perf_counter() - start)
                errors["submit_findings"] += '"error"' in result[:10]
                env.close()
    figures = []
    for name in TOOL_NAMES:
        figure = _timed_ms(times[name], f"tool {name}", 0.1)
        figure.extra["calls"] = len(times[name])
        if errors[name]:
            figure.extra["error results"] = errors[name]
        figures.append(figure)
    return figures


# rollouts ------------------------------------------------------------------------------------


def bench_rollouts(scenarios: Sequence[Scenario], episodes: int) -> tuple[list[Figure], float]:
    """`run_episode` with the reference policy at 1, 8 and 64 concurrent episodes."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no network at import
    started = time.perf_counter()
    from agent.program_policy import reference_policy
    from agent.rollout import run_episode

    imported = time.perf_counter() - started
    policy = reference_policy()

    async def batch(concurrency: int) -> float:
        gate = asyncio.Semaphore(concurrency)

        async def one(n: int) -> None:
            async with gate:
                await run_episode(policy, scenarios[n % len(scenarios)])

        begin = time.perf_counter()
        await asyncio.gather(*(one(n) for n in range(episodes)))
        return episodes / (time.perf_counter() - begin)

    asyncio.run(batch(1))  # warm: first trajectories build pydantic validators
    figures = [
        Figure(f"run_episode at concurrency {c}", asyncio.run(batch(c)), "episodes/s")
        for c in (1, 8, 64)
    ]
    return figures, imported


# command --------------------------------------------------------------------------------------


def bench_machinery(
    sizes: Sizes, baseline: bool, say: Callable[[str], None]
) -> list[EpisodeFigure]:
    """The episode figures, with ratios to the baseline commit unless `baseline` is off."""
    if not baseline:
        return bench_episodes.figures([bench_episodes.run_worker(ROOT, sizes.machinery)])
    return bench_episodes.compare(
        bench_episodes.baseline_commit(), sizes.rounds, sizes.machinery, say=lambda _: None
    )


def run_bench(
    sizes: Sizes, *, rollouts: bool, baseline: bool = True, say: Callable[[str], None] = print
) -> dict[str, Any]:
    report: dict[str, Any] = {"load_average_1m": os.getloadavg()[0], "sizes": asdict(sizes)}
    say(f"load average (1 min) {report['load_average_1m']:.2f} on {os.cpu_count()} cpus")
    figures: list[Figure] = []

    def show(*new: Figure) -> None:
        for figure in new:
            figures.append(figure)
            say(figure.line())

    show(*bench_generation(sizes.generated))
    scenarios = [generate("eval", seed) for seed in split_seeds("eval")[: sizes.scenarios]]
    show(*bench_tools(scenarios, sizes.tool_repeats))
    against = f" (ratio: this tree / {bench_episodes.baseline_commit()[:7]})" if baseline else ""
    say(f"per reference episode on eval, median{against}:")
    machinery = bench_machinery(sizes, baseline, say)
    bench_episodes.show(machinery, say)
    if rollouts:
        rollout_figures, imported = bench_rollouts(scenarios, sizes.episodes)
        report["rollout_import_s"] = imported
        say(f"(agent.rollout import took {imported:.1f} s, not counted)")
        show(*rollout_figures)
    report["figures"] = {f.name: {**asdict(f), "passed": f.passed} for f in figures}
    report["episode_figures"] = {
        f.label: {**asdict(f), "passed": f.passed, "ratio": f.ratio} for f in machinery
    }
    misses = [f.name for f in figures if f.passed is False]
    misses += [f.label for f in machinery if f.passed is False]
    report["misses"] = misses
    targets = sum(f.target is not None for f in figures)
    targets += sum(f.target_ms is not None for f in machinery)
    say(f"{len(misses)} of {targets} targets missed")
    return report


def _compare(args: argparse.Namespace) -> int:
    """`--compare REV`: the episode figures against REV, and the guard's exit status."""
    sizes = EpisodeSizes.quick() if args.quick else EpisodeSizes()
    if args.compare == "baseline":
        args.compare = bench_episodes.baseline_commit()
    found = bench_episodes.compare(args.compare, args.rounds, sizes)
    status = bench_episodes.guard(found, args.max_ratio, print)
    if args.json:
        report = {
            "compare": args.compare,
            "rounds": args.rounds,
            "figures": {f.label: {**asdict(f), "ratio": f.ratio} for f in found},
            "status": status,
        }
        args.json.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    return status


def _main(argv: Sequence[str] | None) -> int:
    parser = Parser(prog="python -m checks.bench", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small samples (seconds)")
    parser.add_argument("--no-rollout", action="store_true", help="skip the ART rollout part")
    parser.add_argument(
        "--no-baseline", action="store_true", help="episode figures without baseline ratios"
    )
    parser.add_argument("--json", type=Path, help="write the figures to this file")
    # the regression guard and the side-by-side
    parser.add_argument(
        "--compare",
        metavar="REV",
        nargs="?",
        const="baseline",
        help="only: this tree against REV (default: checks/bench_baseline.txt's commit)",
    )
    parser.add_argument("--rounds", type=positive_int, default=8, help="--compare/--tau2 rounds")
    parser.add_argument("--max-ratio", type=float, default=1.3, help="--compare fails above")
    parser.add_argument("--tau2", type=Path, metavar="PATH", help="only: beside tau2 retail")
    args = parser.parse_args(argv)
    if args.json and not args.json.parent.is_dir():
        raise UsageError(f"--json: folder {args.json.parent} does not exist")
    if args.compare and args.tau2:
        raise UsageError("--compare and --tau2 are separate runs: give one")
    if args.compare:
        return _compare(args)
    if args.tau2:
        tau2_sizes = EpisodeSizes.quick() if args.quick else EpisodeSizes()
        bench_episodes.side_by_side(args.tau2, args.rounds, tau2_sizes)
        return 0
    sizes = Sizes.quick() if args.quick else Sizes()
    started = time.perf_counter()
    report = run_bench(sizes, rollouts=not args.no_rollout, baseline=not args.no_baseline)
    report["wall_s"] = time.perf_counter() - started
    print(f"bench took {report['wall_s']:.1f} s")
    if args.json:
        args.json.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    return run_command("python -m checks.bench", _main, argv)


if __name__ == "__main__":
    sys.exit(main())
