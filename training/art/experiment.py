"""The whole GPU experiment and what it costs: `python -m training.art.experiment`.

What fills the seed's acceptance table, in the order it is run (docs/gpu.md, section 7): the GPU
smoke; `binary-01` (it trains the shared cold start, probes it, then GRPO); `shaped-01` (the
same cold start and seed, so the two differ in the reward alone); the ablation `direct-grpo-01`
(GRPO on the base, no warm start); then the final evals of five models (the base, the warm
start, and each run's best checkpoint) on eval (100 x k=4) and heldout (50 x k=4). Optional runs
are priced beside, outside the total. Every figure comes from training.art.budget with the same
auditor-measured episode sizes; rates are assumed until a smoke measures them, so the table
also prices everything at half the assumed speed, and the plan must fit the budget there too.

    python -m training.art.experiment                       # $2.5/h and $4.3/h, budget $300
    python -m training.art.experiment --usd-per-hour 3.1 --budget-usd 250
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import dataclass

from env.cli import Parser, run_command
from training.art.budget import ASSUMED, PESSIMISM, SMOKE_HOURS, Rates, eval_seconds, run_cost
from training.art.episode_tokens import LevelSizes
from training.art.plan import level_sizes, phase_steps, validation_steps
from training.art.shared_cold_start import cold_start_key
from training.data_order import plan_data
from training.runs import RunConfigError, load_run_config

MAIN_RUNS = ("binary-01", "shaped-01", "direct-grpo-01")
OPTIONAL_RUNS = ("binary-lambda-01", "shaped-02")
FINAL_EVAL_MODELS = ("base", "warm start", "binary-01", "shaped-01", "direct-grpo-01")
FINAL_EVAL_EPISODES = 100 * 4 + 50 * 4  # eval x k=4 and heldout x k=4


@dataclass(frozen=True)
class Item:
    what: str
    hours: float  # at the assumed rates
    slow_hours: float  # at PESSIMISM x slower
    optional: bool = False


def experiment_items(sizes: dict[str, LevelSizes]) -> list[Item]:
    items = [Item("GPU smoke (python -m training.art.gpu_smoke)", SMOKE_HOURS, SMOKE_HOURS)]
    trained_keys: set[str] = set()
    for name in (*MAIN_RUNS, *OPTIONAL_RUNS):
        run = load_run_config(name)
        key = cold_start_key(run) if run.cold_start is not None else None
        trains = key is not None and key not in trained_keys
        if trains and key is not None and name in MAIN_RUNS:
            trained_keys.add(key)
        costs = [
            run_cost(
                run,
                phase_steps(plan_data(run)),
                sizes,
                rates=rates,
                trains_cold_start=trains,
                validations=len(validation_steps(run)),
            )
            for rates in (ASSUMED, ASSUMED.slower(PESSIMISM))
        ]
        what = f"{name}: {_what(run.cold_start is not None, trains)}"
        items.append(Item(what, costs[0].hours, costs[1].hours, name in OPTIONAL_RUNS))
    for model in FINAL_EVAL_MODELS:
        fast, slow = (eval_seconds(FINAL_EVAL_EPISODES, sizes, rates) / 3600 for rates in _rates())
        items.append(Item(f"final eval of {model}: eval 100 x k=4 + heldout 50 x k=4", fast, slow))
    return items


def _rates() -> tuple[Rates, Rates]:
    return ASSUMED, ASSUMED.slower(PESSIMISM)


def _what(warm: bool, trains: bool) -> str:
    if not warm:
        return "no warm start, probe of the base, 150 GRPO steps"
    if trains:
        return "trains the shared cold start (auditor SFT), probe, 150 GRPO steps"
    return "adopts the shared cold start, probe, 150 GRPO steps"


def render(items: Sequence[Item], prices: Sequence[float], budget: float) -> list[str]:
    head = " | ".join(f"${p:g}/h" for p in prices)
    slow = " | ".join(f"${p:g}/h {PESSIMISM:g}x slower" for p in prices)
    lines = [
        f"| step | GPU hours | {PESSIMISM:g}x slower | {head} | {slow} |",
        "|---|---:|---:|" + "---:|" * (2 * len(prices)),
    ]
    for item in items:
        label = f"{item.what} (optional, not in the total)" if item.optional else item.what
        cells = [f"{item.hours * p:,.0f}" for p in prices]
        cells += [f"{item.slow_hours * p:,.0f}" for p in prices]
        lines.append(
            f"| {label} | {item.hours:.1f} | {item.slow_hours:.1f} | " + " | ".join(cells) + " |"
        )
    core = [item for item in items if not item.optional]
    hours, slow_hours = sum(i.hours for i in core), sum(i.slow_hours for i in core)
    totals = [f"**{hours * p:,.0f}**" for p in prices] + [
        f"**{slow_hours * p:,.0f}**" for p in prices
    ]
    lines.append(
        f"| **total** | **{hours:.1f}** | **{slow_hours:.1f}** | " + " | ".join(totals) + " |"
    )
    worst = slow_hours * max(prices)
    verdict = "within" if worst <= budget else "OVER"
    lines.append(
        f"\nworst case ({PESSIMISM:g}x slower at ${max(prices):g}/h): ${worst:,.0f}, {verdict} "
        f"the ${budget:,.0f} budget"
    )
    return lines


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = Parser(prog="python -m training.art.experiment", description=__doc__.splitlines()[0])
    parser.add_argument("--usd-per-hour", type=float, nargs="+", default=[2.5, 4.3])
    parser.add_argument("--budget-usd", type=float, default=300.0)
    args = parser.parse_args(argv)
    if any(p < 0 for p in args.usd_per_hour) or args.budget_usd < 0:
        parser.error("prices and the budget must be non-negative")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    return run_command("python -m training.art.experiment", _command, argv, (RunConfigError,))


def _command(argv: Sequence[str] | None) -> int:
    args = parse_args(argv)
    run = load_run_config(MAIN_RUNS[0])
    sizes = level_sizes(run, plan_data(run))
    items = experiment_items(sizes)
    print("\n".join(render(items, args.usd_per_hour, args.budget_usd)))
    worst = sum(i.slow_hours for i in items if not i.optional) * max(args.usd_per_hour)
    return 0 if worst <= args.budget_usd else 1


if __name__ == "__main__":
    sys.exit(main())
