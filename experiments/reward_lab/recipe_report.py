"""The recipe experiment's report: one markdown table per decision (each figure the mean over
seeds with its 95% Student-t interval), paired differences against each decision's reference
arm, and summary.json with every per-seed value. Written atomically under outputs/recipe/."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path

from experiments.reward_lab.intervals import Interval, interval, paired
from experiments.reward_lab.recipe_loop import Arm
from experiments.reward_lab.recipe_plan import DECISIONS, Decision, RecipeResults, identity
from experiments.reward_lab.report import ROOT, _atomic, _changed, _table, tree_state

__all__ = ["ROOT", "write"]

Column = tuple[str, str, str]  # header, metric, format: "pct" | "num" | "int"
COLUMNS: dict[str, tuple[Column, ...]] = {
    "cold_start": (
        ("val grounded before", "before_grounded", "pct"),
        ("after", "grounded", "pct"),
        ("hack episodes after", "hack_episodes", "pct"),
        ("hack share of reward after", "hack_reward", "pct"),
        ("calls after", "tool_calls", "num"),
        ("groups with spread", "spread_share", "pct"),
    ),
    "groups": (
        ("groups with spread", "spread_share", "pct"),
        ("gradient-carrying groups / step", "carrying_per_step", "num"),
        ("kept / step", "kept_per_step", "num"),
        ("dropped / step", "dropped_per_step", "num"),
        ("rollouts spent", "rollouts", "int"),
        ("train grounded at 8 × 8's rollouts", "train_grounded_at_budget", "pct"),
        ("val grounded after", "grounded", "pct"),
        ("hack episodes after", "hack_episodes", "pct"),
    ),
    "tool_cost": (
        ("val grounded", "grounded", "pct"),
        ("calls", "tool_calls", "num"),
        ("movement from tied groups", "tied_share", "pct"),
        ("steps clipped", "clipped_share", "pct"),
        ("optimiser steps / step", "updates_per_step", "num"),
    ),
    "std": (
        ("val grounded", "grounded", "pct"),
        ("calls", "tool_calls", "num"),
        ("val reward", "reward", "signed"),
        ("movement from tied groups", "tied_share", "pct"),
        ("steps clipped", "clipped_share", "pct"),
    ),
}
REFERENCE = {"cold_start": 0, "groups": 0, "tool_cost": 0, "std": 1}  # the arm others pair with


def _fmt(x: float, kind: str) -> str:
    if kind == "pct":
        return f"{100 * x:.0f}%"
    if kind == "int":
        return f"{x:,.0f}"
    if kind == "signed":
        return f"{x:+.3f}"
    return f"{x:.1f}"


def show(iv: Interval, kind: str) -> str:
    if iv.n < 2 or iv.high - iv.low < 1e-12:
        return _fmt(iv.mean, kind)
    if kind == "pct":  # a rate's interval is clipped to [0, 100]
        low, high = max(iv.low, 0.0), min(iv.high, 1.0)
        return f"{100 * iv.mean:.0f}% [{100 * low:.0f}, {100 * high:.0f}]"
    return f"{_fmt(iv.mean, kind)} [{_fmt(iv.low, kind)}, {_fmt(iv.high, kind)}]"


def _points(iv: Interval) -> str:
    """A paired difference of rates, in percentage points."""
    if iv.n < 2:
        return f"{100 * iv.mean:+.0f}"
    return f"{100 * iv.mean:+.0f} [{100 * iv.low:+.0f}, {100 * iv.high:+.0f}]"


def decision_table(results: RecipeResults, decision: Decision) -> list[str]:
    columns = COLUMNS[decision.key]
    reference = decision.arms[REFERENCE[decision.key]]
    ref_values = results.values(reference, "grounded")
    header = ["arm", *(c[0] for c in columns), f"grounded − {reference.name} (points)"]
    if decision.before:
        header.append("grounded after − before (points)")
    rows = []
    for arm in decision.arms:
        if not results.values(arm, "grounded"):
            continue
        row = [arm.name] + [show(interval(results.values(arm, m)), k) for _, m, k in columns]
        own = results.values(arm, "grounded")
        row.append("–" if arm == reference else _points(paired(own, ref_values)))
        if decision.before:
            row.append(_points(paired(own, results.values(arm, "before_grounded"))))
        rows.append(row)
    return [f"## {decision.title}", "", *_table(header, rows), ""]


def _cold_line(results: RecipeResults) -> str:
    kept = [c.kept for c in results.cold.values()]
    shown = [c.scenarios for c in results.cold.values()]
    return (
        f"Auditor cold start per seed: {min(kept)}–{max(kept)} of {shown[0]} demonstrations kept "
        f"(the seed's own train scenarios), fitted to a mean log-likelihood of "
        f"{min(c.log_likelihood_after for c in results.cold.values()):.2f}–"
        f"{max(c.log_likelihood_after for c in results.cold.values()):.2f} per decision."
    )


def markdown(results: RecipeResults, state: dict[str, object]) -> str:
    scale = results.scale
    loads = results.loads or [0.0]
    head = [
        f"# The training recipe (issue 37), {scale.name} scale, seeds {list(results.seeds)}",
        "",
        f"Measured on commit {state['commit']} plus the working tree: generator "
        f"{state['generator']}, tool contract {state['tool_contract']}, rewards/*.py "
        f"{state['rewards_source']}; {_changed(state)}.",
        f"Each arm: {scale.steps} steps on {scale.train_pool} train scenarios, evaluated on "
        f"{scale.val} val scenarios × {scale.eval_k} samples; ART optimiser lr {scale.lr_art:g}, "
        f"batch step lr {scale.lr_batch:g}. {len(results.runs)} runs, {results.episodes:,} "
        f"episodes in {results.seconds:.0f} s; 1-minute load average over the runs "
        f"{sum(loads) / len(loads):.1f} (max {max(loads):.1f}, {os.cpu_count()} cores).",
        "Figures: mean over seeds [95% Student-t interval over seeds; a rate's clipped to "
        "[0, 100]]; differences are paired by seed (same scenario order, same val samples).",
        _cold_line(results) if results.cold else "",
        "",
    ]
    body = [line for d in DECISIONS for line in decision_table(results, d)]
    return "\n".join(head + body)


def _arm_json(results: RecipeResults, arm: Arm) -> dict[str, object]:
    key = identity(arm)
    metrics = sorted({m for (a, _), ms in results.runs.items() if a == key for m in ms})
    return {
        "settings": {
            "reward": arm.reward.label,
            "estimator": arm.estimator,
            "optimiser": arm.optimiser,
            "groups": arm.groups,
            "group_size": arm.group_size,
            "gather": arm.gathered,
            "drop_tied": arm.drop_tied,
            "init": arm.init,
            "max_grad_norm": None if arm.max_grad_norm == float("inf") else arm.max_grad_norm,
        },
        "metrics": {m: _metric_json(results.values(arm, m)) for m in metrics},
    }


def _metric_json(values: list[float]) -> dict[str, object]:
    iv = interval(values)
    return {
        "per_seed": [round(v, 5) for v in values],
        "interval": {"mean": round(iv.mean, 5), "low": round(iv.low, 5), "high": round(iv.high, 5)},
    }


def _decision_json(results: RecipeResults, decision: Decision) -> dict[str, object]:
    arms = [a for a in decision.arms if results.values(a, "grounded")]
    return {"title": decision.title, "arms": {a.name: _arm_json(results, a) for a in arms}}


def summary_json(results: RecipeResults, state: dict[str, object]) -> dict[str, object]:
    return {
        "scale": results.scale.name,
        "seeds": list(results.seeds),
        "state": state,
        "seconds": round(results.seconds, 1),
        "episodes": results.episodes,
        "load_average": [round(x, 2) for x in results.loads],
        "interval": "95% Student-t over seeds",
        "decisions": {d.key: _decision_json(results, d) for d in DECISIONS},
        "cold_starts": {str(s): vars(c) for s, c in results.cold.items()},
    }


def write(results: RecipeResults, out: Path) -> Sequence[Path]:
    out.mkdir(parents=True, exist_ok=True)
    state = tree_state()
    paths = (out / "report.md", out / "summary.json")
    _atomic(paths[0], markdown(results, state))
    _atomic(paths[1], json.dumps(summary_json(results, state), indent=1) + "\n")
    return paths
