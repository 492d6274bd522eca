"""The report's "diagnostics" block: failure clusters per run and exploration per training run.

`diagnostics_block` is the numbers (report.json's `diagnostics`), `draw_diversity` the PNGs they
name; the page section is `eval.report.diagnostics_page`. Failure clusters: eval.report.clusters;
diversity and its collapse rule: eval.report.diversity.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from eval.report import figures
from eval.report.clusters import diagnostics
from eval.report.diversity import COLLAPSE_BELOW, COLLAPSE_STEPS, collapse_warning, collapses
from eval.report.load import RunData, TrainMetrics


def diversity_entry(index: int, metrics: TrainMetrics) -> dict[str, Any]:
    points = [(step.step, step.tool_sequence_diversity) for step in metrics.steps]
    logged = any(value is not None for _, value in points)
    spans = collapses(points)
    return {
        "name": metrics.name,
        "figure": f"diversity_{index}.png" if logged else None,
        "points": [[step, value] for step, value in points],
        "collapses": [list(span) for span in spans],
        "warning": collapse_warning(metrics.name, spans),
        "rule": f"collapsed: mean below {COLLAPSE_BELOW} for {COLLAPSE_STEPS} or more logged "
        "steps in a row",
    }


def diagnostics_block(runs: Sequence[RunData], metrics: Sequence[TrainMetrics]) -> dict[str, Any]:
    block = diagnostics(runs)
    block["diversity"] = [diversity_entry(index, item) for index, item in enumerate(metrics)]
    return block


def diversity_warnings(block: dict[str, Any]) -> list[str]:
    return [item["warning"] for item in block["diversity"] if item["warning"]]


def draw_diversity(block: dict[str, Any], out: Path) -> None:
    for item in block["diversity"]:
        if item["figure"]:
            points = [(int(step), value) for step, value in item["points"]]
            figures.diversity_figure(item["name"], points, out / item["figure"])
