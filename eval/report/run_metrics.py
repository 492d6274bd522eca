"""Per-run metrics: the run summary (eval/summary.py) plus what a reviewer of an RL result asks.

Added to the summary: grounded success, success by action type (credit vs no_error), the outcome
mix of the credit action, the confusion matrix of true vs reported root cause, and the cost per
scenario with the formula that produced it. Pure functions of the episode lines.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from typing import Any

from env.labels import ROOT_CAUSES
from eval.report.episode_view import (
    NO_ERROR,
    OUTCOMES,
    field,
    grounded,
    outcome,
    reported_label,
)
from eval.report.load import EpisodeLine, RunData
from eval.stats import wilson_interval
from eval.summary import pass_block, summarize

Verdict = Callable[[EpisodeLine], bool | None]


def outcomes_by_scenario(lines: Sequence[EpisodeLine], verdict: Verdict) -> dict[str, list[bool]]:
    """Scenario -> verdicts by sample (a repeated (scenario, sample) keeps its last line)."""
    by_key = {line.key: line for line in lines}
    table: dict[str, list[bool]] = defaultdict(list)
    for (scenario, _sample), line in sorted(by_key.items()):
        table[scenario].append(bool(verdict(line)))
    return dict(table)


def _success(line: EpisodeLine) -> bool:
    return line.success


def _grounded_block(lines: Sequence[EpisodeLine], k: int, seed: int) -> dict[str, Any] | None:
    if not any(grounded(line) is not None for line in lines if line.error is None):
        return None  # a log from before the grader reported grounded success
    table = outcomes_by_scenario(lines, lambda line: bool(grounded(line)))
    return pass_block(list(table.values()), k, seed)


def _action_types(lines: Sequence[EpisodeLine], k: int, seed: int) -> dict[str, Any]:
    credit = [line for line in lines if line.label != NO_ERROR]
    quiet = [line for line in lines if line.label == NO_ERROR]
    return {
        "credit": pass_block(list(outcomes_by_scenario(credit, _success).values()), k, seed),
        "no_error": pass_block(list(outcomes_by_scenario(quiet, _success).values()), k, seed),
    }


def _outcome_mix(lines: Sequence[EpisodeLine]) -> dict[str, Any]:
    counts = Counter(outcome(line) for line in lines)
    total = len(lines)
    return {
        "total": total,
        "counts": {name: counts.get(name, 0) for name in OUTCOMES},
        "shares": {
            name: _interval_dict(wilson_interval(counts.get(name, 0), total)) for name in OUTCOMES
        },
    }


def _interval_dict(value: Any) -> dict[str, float]:
    return {"estimate": value.estimate, "low": value.low, "high": value.high}


def confusion(lines: Sequence[EpisodeLine]) -> dict[str, Any]:
    """Rows: true root cause (contract order); columns: reported label, then what is not one."""
    counts = Counter((line.label, reported_label(line)) for line in lines)
    rows = [name for name in ROOT_CAUSES if any(key[0] == name for key in counts)]
    rows += sorted({key[0] for key in counts} - set(rows))
    reported = {key[1] for key in counts}
    columns = [name for name in ROOT_CAUSES if name in reported]
    columns += sorted(reported - set(columns))
    matrix = [[counts.get((row, column), 0) for column in columns] for row in rows]
    return {"rows": rows, "columns": columns, "matrix": matrix}


def cost_block(run: RunData, scenarios: int, gpu_price: float | None) -> dict[str, Any]:
    """Cost per scenario: the recorded API bill, or measured GPU time × the hourly price."""
    graded = [line for line in run.lines if line.error is None]
    bill = sum(line.cost_usd for line in graded)
    n = max(scenarios, 1)
    kind = str(run.config.get("kind") or "")
    if bill > 0 or kind == "litellm":
        return {
            "kind": "api",
            "per_scenario_usd": bill / n,
            "formula": f"recorded API bill ${bill:.4f} / {scenarios} scenarios",
        }
    if kind == "program":
        return {"kind": "program", "per_scenario_usd": 0.0, "formula": "scripted policy: no model"}
    seconds = sum(_gpu_seconds(line) for line in run.lines)
    per_scenario_s = seconds / n
    measured = (
        "generation_s" if any(field(line, "generation_s") for line in run.lines) else "wall_s"
    )
    resource = "GPU" if kind == "openai" else f"{kind or 'model'} machine"
    basis = (
        f"{resource} time per scenario {per_scenario_s:.1f} s (sum of episode {measured} "
        f"/ {scenarios} scenarios)"
    )
    if gpu_price is None:
        return {
            "kind": "self_hosted",
            "per_scenario_usd": None,
            "gpu_seconds_per_scenario": per_scenario_s,
            "formula": f"{basis}; pass --gpu-price USD_PER_HOUR for a dollar figure",
        }
    return {
        "kind": "self_hosted",
        "per_scenario_usd": per_scenario_s / 3600.0 * gpu_price,
        "gpu_seconds_per_scenario": per_scenario_s,
        "gpu_price_per_hour": gpu_price,
        "formula": f"{basis} / 3600 × ${gpu_price:g}/h; an upper bound when episodes "
        "shared the machine concurrently",
    }


def _gpu_seconds(line: EpisodeLine) -> float:
    generation = field(line, "generation_s")
    return float(generation) if generation else float(line.wall_s)


def run_numbers(run: RunData, *, gpu_price: float | None, seed: int = 0) -> dict[str, Any]:
    """Everything the report shows for one run, as plain JSON-able data."""
    stamp = {**run.config, "path": str(run.path)}
    summary = summarize(run.lines, k=run.k, stamp=stamp, seed=seed)
    graded = [line for line in run.lines if line.error is None]
    return {
        "name": run.name,
        "path": str(run.path),
        "split": run.split,
        "k": run.k,
        "summary": summary,
        "success_rate": _interval_dict(
            wilson_interval(sum(line.success for line in run.lines), len(run.lines))
        ),
        "grounded": _grounded_block(run.lines, run.k, seed),
        "action_type": _action_types(run.lines, run.k, seed),
        "outcome_mix": _outcome_mix(run.lines),
        "confusion": confusion(run.lines),
        "cost": cost_block(run, summary["scenarios"], gpu_price),
        "graded_episodes": len(graded),
        "has_transcripts": any(field(line, "transcript") for line in run.lines),
    }
