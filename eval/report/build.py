"""Builds the report: read the runs and metrics, compute every number, draw, write the page.

`build_report` is what `python -m eval.report` and the TRL runner call. The output folder gets
`index.html` (self-contained), the PNGs it embeds and `report.json` with every number shown.
Files are written to temporary names and renamed, so a crash leaves the previous report whole.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from env.labels import HELDOUT_LABEL
from eval.report import figures
from eval.report.diagnostics import diagnostics_block, diversity_warnings, draw_diversity
from eval.report.episode_view import field
from eval.report.flags import FLAGS, flags_by_episode, run_flags
from eval.report.load import (
    RunData,
    TrainMetrics,
    load_run,
    load_train_metrics,
    unique_names,
)
from eval.report.page import render_page
from eval.report.paired import has_grounded, paired_comparison
from eval.report.reading import reading_list
from eval.report.run_metrics import run_numbers
from eval.report.twins_section import twins_numbers
from eval.report.viewer_data import viewer_payload
from eval.stats import wilson_interval
from ledgergym import __version__

PAGE = "index.html"
NUMBERS = "report.json"


def _warnings(runs: Sequence[RunData]) -> list[str]:
    notes = []
    splits = sorted({run.split for run in runs})
    if len(splits) > 1:
        notes.append(
            f"The runs are on different splits ({', '.join(splits)}): before/after and "
            "paired numbers compare different scenarios."
        )
    bare = [run.name for run in runs if not any(field(line, "transcript") for line in run.lines)]
    if bare:
        notes.append(
            f"No transcripts in {', '.join(bare)} (older logs or --no-transcript): the viewer "
            "shows their grades, rewards and findings only."
        )
    return notes


def _training_entry(metrics: TrainMetrics, figure: str) -> dict[str, Any]:
    validation = []
    for point in metrics.validation:
        ci = wilson_interval(round(point.pass1 * point.episodes), point.episodes)
        validation.append(
            {
                "step": point.step,
                "pass1": point.pass1,
                "episodes": point.episodes,
                "interval": {"estimate": ci.estimate, "low": ci.low, "high": ci.high},
            }
        )
    return {
        "name": metrics.name,
        "path": str(metrics.path),
        "source": metrics.source,
        "figure": figure,
        "steps": [vars(step) for step in metrics.steps],
        "validation": validation,
        "validation_interval": "Wilson 95% over validation episodes (round(pass1 × episodes) "
        "successes); ignores that samples of one scenario are correlated",
    }


def _draw(report: dict[str, Any], metrics: Sequence[TrainMetrics], out: Path) -> None:
    runs = report["runs"]
    names: dict[str, Any] = {}
    for item, source in zip(report["training"], metrics, strict=True):
        figures.training_figure(source, out / item["figure"])
    names["before_after"] = figures.before_after_figure(runs, out / "before_after.png").name
    names["by_root_cause"] = figures.group_figure(
        runs,
        "by_root_cause",
        HELDOUT_LABEL,
        out / "by_root_cause.png",
        "pass^1 by root cause, 95% bootstrap",
    ).name
    names["by_difficulty"] = figures.group_figure(
        runs,
        "by_difficulty",
        None,
        out / "by_difficulty.png",
        "pass^1 by difficulty, 95% bootstrap",
    ).name
    names["action"] = figures.action_figure(runs, out / "action_type.png").name
    draw_diversity(report["diagnostics"], out)
    report["figures"] = names


def compute(
    runs: Sequence[RunData],
    metrics: Sequence[TrainMetrics],
    *,
    gpu_price: float | None,
    seed: int,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """(report numbers, viewer payload): everything but the drawing."""
    flags = [run_flags(index, run) for index, run in enumerate(runs)]
    numbers = [run_numbers(run, gpu_price=gpu_price, seed=seed) for run in runs]
    warnings = _warnings(runs) + [
        f"{block['name']}: every scenario's {block['k']} samples are identical (sampling off or "
        "ignored): its pass^k is its pass^1"
        for block in numbers
        if block["summary"].get("identical_samples")  # eval/summary.py's check, when it has it
    ]
    diagnosed = diagnostics_block(runs, metrics)
    warnings += diversity_warnings(diagnosed)
    report = {
        "generated_by": "python -m eval.report",
        "ledgergym_version": __version__,
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "seed": seed,
        "gpu_price_per_hour": gpu_price,
        "warnings": warnings,
        "runs": numbers,
        "training": [
            _training_entry(item, f"training_{index}.png") for index, item in enumerate(metrics)
        ],
        "paired": [paired_comparison(runs[0], other, seed=seed) for other in runs[1:]],
        "paired_grounded": [
            paired_comparison(runs[0], other, seed=seed, verdict="grounded")
            for other in runs[1:]
            if has_grounded(runs[0]) and has_grounded(other)
        ],
        "flags": {
            "definitions": FLAGS,
            "runs": [
                {"run": run.name, "flags": found} for run, found in zip(runs, flags, strict=True)
            ],
        },
        "reading_list": reading_list(runs, seed=seed),
        "diagnostics": diagnosed,
        "twins": twins_numbers(runs, seed=seed),
        "figures": {},
    }
    return report, viewer_payload(runs, flags_by_episode(flags))


def _write(path: Path, text: str) -> None:
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(text, encoding="utf-8")
    os.replace(temporary, path)


def build_report(
    run_dirs: Sequence[Path],
    out: Path,
    *,
    train_metrics: Sequence[Path] = (),
    gpu_price: float | None = None,
    seed: int = 0,
) -> Path:
    """Reads the runs and metrics files, writes the report into `out`; returns the page."""
    runs = [load_run(path) for path in run_dirs]
    metrics = [load_train_metrics(path) for path in train_metrics]
    return write_report(runs, metrics, out, gpu_price=gpu_price, seed=seed)


def write_report(
    runs: Sequence[RunData],
    metrics: Sequence[TrainMetrics],
    out: Path,
    *,
    gpu_price: float | None = None,
    seed: int = 0,
) -> Path:
    """The report of runs already loaded (`build_report` without the reading)."""
    runs = unique_names(list(runs))
    report, viewer = compute(runs, metrics, gpu_price=gpu_price, seed=seed)
    out.mkdir(parents=True, exist_ok=True)
    _draw(report, metrics, out)
    _write(out / NUMBERS, json.dumps(report, indent=1) + "\n")
    page = out / PAGE
    _write(page, render_page(report, viewer, out))
    return page
