"""The paired comparison of two runs on the same scenarios: the test a before/after deserves.

Both models saw the same scenarios, so the per-scenario difference in pass^1 (second minus
first) gets a paired bootstrap interval and scenario-level success an exact McNemar test
(`eval/stats.py`). A scenario counts as solved when more than half of its samples succeeded
(its only sample when k = 1). The non-overlap screen of the two unpaired pass^1 intervals is
kept beside them: it is what the plan's acceptance table asks for.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from eval.report.episode_view import grounded
from eval.report.load import EpisodeLine, RunData
from eval.report.run_metrics import outcomes_by_scenario
from eval.stats import (
    bootstrap_ci,
    intervals_overlap,
    mcnemar_exact,
    paired_bootstrap_ci,
)


def _pass1(trials: list[bool]) -> float:
    return sum(trials) / len(trials)


def _solved(trials: list[bool]) -> bool:
    return sum(trials) * 2 > len(trials)


def _interval(value: Any) -> dict[str, float]:
    return {"estimate": value.estimate, "low": value.low, "high": value.high}


def _verdict(name: str) -> Callable[[EpisodeLine], bool]:
    if name == "grounded":
        return lambda line: bool(grounded(line))
    return lambda line: line.success


def has_grounded(run: RunData) -> bool:
    return any(grounded(line) is not None for line in run.lines if line.error is None)


def paired_comparison(
    first: RunData, second: RunData, *, seed: int = 0, verdict: str = "success"
) -> dict[str, Any]:
    """Numbers for `second` against `first` over the scenarios both ran (a shared key).

    `verdict` is "success" (the grader's) or "grounded" (grounded success).
    """
    a = outcomes_by_scenario(first.lines, _verdict(verdict))
    b = outcomes_by_scenario(second.lines, _verdict(verdict))
    shared = sorted(set(a) & set(b))
    result: dict[str, Any] = {
        "verdict": verdict,
        "first": first.name,
        "second": second.name,
        "shared_scenarios": len(shared),
        "only_first": len(set(a) - set(b)),
        "only_second": len(set(b) - set(a)),
    }
    if not shared:
        return {**result, "difference": None, "mcnemar": None, "screen": None, "per_scenario": []}
    left = [_pass1(a[name]) for name in shared]
    right = [_pass1(b[name]) for name in shared]
    only_first = sum(_solved(a[n]) and not _solved(b[n]) for n in shared)
    only_second = sum(_solved(b[n]) and not _solved(a[n]) for n in shared)
    both = sum(_solved(a[n]) and _solved(b[n]) for n in shared)
    first_ci = bootstrap_ci([a[n] for n in shared], 1, seed=seed)
    second_ci = bootstrap_ci([b[n] for n in shared], 1, seed=seed)
    return {
        **result,
        "difference": _interval(paired_bootstrap_ci(left, right, seed=seed)),
        "mcnemar": {
            "solved_by_both": both,
            "solved_by_neither": len(shared) - both - only_first - only_second,
            "only_first": only_first,
            "only_second": only_second,
            "p_value": mcnemar_exact(only_first, only_second),
        },
        "screen": {
            "first_pass1": _interval(first_ci),
            "second_pass1": _interval(second_ci),
            "intervals_overlap": intervals_overlap(first_ci, second_ci),
        },
        "per_scenario": [
            {"scenario_id": name, "first": x, "second": y, "difference": y - x}
            for name, x, y in zip(shared, left, right, strict=True)
        ],
    }


def describe(comparison: dict[str, Any]) -> list[str]:
    """Plain lines for a terminal (compare.py prints them)."""
    name = f"{comparison['second']} vs {comparison['first']}"
    if comparison.get("verdict") == "grounded":
        name += ", grounded success"
    if comparison["difference"] is None:
        return [f"Paired ({name}): no scenario in common."]
    diff, test = comparison["difference"], comparison["mcnemar"]
    screen = comparison["screen"]
    return [
        f"Paired over {comparison['shared_scenarios']} shared scenarios ({name}):",
        f"- pass^1 difference {diff['estimate']:+.3f} [{diff['low']:+.3f}, {diff['high']:+.3f}]"
        " (95% paired bootstrap over scenarios)",
        f"- scenario solved (> half of its samples): only by {comparison['first']} "
        f"{test['only_first']}, only by {comparison['second']} {test['only_second']}, both "
        f"{test['solved_by_both']}, neither {test['solved_by_neither']}; exact McNemar "
        f"p = {test['p_value']:.3g}",
        "- non-overlap screen of the unpaired pass^1 intervals: "
        + ("overlap (no flag)" if screen["intervals_overlap"] else "no overlap (flag)"),
    ]
