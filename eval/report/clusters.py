"""Failures of a run grouped two ways: by their first missing fact and by terminal error class.

Each diagnosed episode (`eval.report.diagnose`) lands in one cluster of each kind; a cluster has
its count and the first EXAMPLES episodes (in run order) as viewer ids. Episodes with no truth to
diagnose against cluster by error class and, by first missing fact, under their reason. Pure
functions of the runs; `diagnostics(runs)` is the report's "diagnostics" block.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict
from typing import Any

from eval.report.diagnose import diagnose, error_class, is_diagnosed, truth_for
from eval.report.episode_view import episode_id
from eval.report.load import EpisodeLine, RunData

EXAMPLES = 2
ALL_READ = "(every reference read made)"


def episode_diagnosis(run_index: int, run: RunData, line: EpisodeLine) -> dict[str, Any]:
    """One failed episode: its error class, first wrong step, evidence and first missing fact."""
    truth, why = truth_for(run, line)
    entry: dict[str, Any] = {
        "episode": episode_id(run_index, line),
        "run": run.name,
        "scenario_id": line.scenario_id,
        "sample": line.sample,
        "label": line.label,
        "difficulty": line.difficulty,
        "error_class": error_class(line),
        "step": None,
        "evidence": [],
        "first_missing": f"(not diagnosed: {why})",
    }
    if truth is None or line.tool_log is None:
        return entry
    found = diagnose(line.tool_log, truth)
    entry["step"] = asdict(found.step)
    entry["evidence"] = [asdict(item) for item in found.evidence]
    entry["first_missing"] = found.first_missing or ALL_READ
    return entry


def cluster(entries: Sequence[dict[str, Any]], key: Callable[[dict[str, Any]], str]) -> list:
    """[{key, count, examples}] largest first, ties by key; examples in entry order."""
    groups: dict[str, list[str]] = {}
    for entry in entries:
        groups.setdefault(key(entry), []).append(entry["episode"])
    return [
        {"key": name, "count": len(ids), "examples": ids[:EXAMPLES]}
        for name, ids in sorted(groups.items(), key=lambda item: (-len(item[1]), item[0]))
    ]


def run_diagnostics(run_index: int, run: RunData) -> dict[str, Any]:
    entries = [episode_diagnosis(run_index, run, line) for line in run.lines if is_diagnosed(line)]
    return {
        "run": run.name,
        "episodes": len(run.lines),
        "failures": len(entries),
        "by_missing_fact": cluster(entries, lambda e: e["first_missing"]),
        "by_error_class": cluster(entries, lambda e: e["error_class"]),
        "episodes_diagnosed": entries,
    }


def diagnostics(runs: Sequence[RunData]) -> dict[str, Any]:
    return {
        "definition": "failed = not a grounded success (not a success in logs before grounded "
        "success); first wrong step = the first credit note the truth does not hold, else the "
        "last read before the verdict (or the end); first missing fact = the first reference "
        "read not made by then, as tool(argument kind)",
        "runs": [run_diagnostics(index, run) for index, run in enumerate(runs)],
    }
