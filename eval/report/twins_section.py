"""The report's evidence-dependence section: each twins run's pairs (`eval.twins`).

A run made with `python -m eval.run --twins` holds each scenario's episodes and its twin's
(scenario ids `<split>-twin-<seed>`); this pairs them, and renders the overall shares with
their intervals and the paired counts per class and per level. Runs without twins are skipped.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape
from typing import Any

from eval.report.load import RunData
from eval.stats import Interval
from eval.twins import MEASURES, pair_episodes, summarize_pairs

HEADER = ["pairs", "both right", "complaint-following", "evidence-blind", "twin false reversals"]


def is_twin_id(scenario_id: str) -> bool:
    return "-twin-" in scenario_id


def twins_numbers(runs: Sequence[RunData], seed: int = 0) -> list[dict[str, Any]]:
    """One entry per run that played twins: its name and `eval.twins.summarize_pairs`."""
    found = []
    for run in runs:
        twins = [line for line in run.lines if is_twin_id(line.scenario_id)]
        if not twins:
            continue
        originals = [line for line in run.lines if not is_twin_id(line.scenario_id)]
        found.append({"run": run.name, **summarize_pairs(pair_episodes(originals, twins), seed)})
    return found


def _table(first: str, cells: dict[str, dict[str, int]]) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in [first, *HEADER])
    rows = "".join(
        f"<tr><td>{escape(group)}</td>"
        + "".join(f"<td>{cell[m]}</td>" for m in ("pairs", *MEASURES))
        + "</tr>"
        for group, cell in cells.items()
    )
    return f"<table class='twins'><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>"


def twins_html(entries: Sequence[dict[str, Any]]) -> str:
    if not entries:
        return (
            "<p class='note'>No run played counterfactual twins "
            "(<code>python -m eval.run --twins</code>).</p>"
        )
    parts = [
        "<p class='note'>Each faulted scenario against its twin: the same world and complaint "
        "with the fault set right (truth no_error). Complaint-following: the same fault verdict "
        "on both; evidence-blind: the same answer on both; a twin false reversal drafts a "
        "credit where nothing is owed. Wilson 95% at k = 1, else a bootstrap over scenarios.</p>"
    ]
    for entry in entries:
        parts.append(f"<h3>{escape(entry['run'])}: {entry['pairs']} pairs</h3>")
        if not entry["pairs"]:
            continue
        shares = ", ".join(
            f"{m.replace('_', ' ')} {Interval(**entry['overall'][m]).format()}" for m in MEASURES
        )
        parts.append(f"<p data-twins='{escape(entry['run'])}'>{escape(shares)}</p>")
        parts.append(_table("class", entry["by"]["label"]))
        parts.append(_table("level", entry["by"]["difficulty"]))
    return "".join(parts)
