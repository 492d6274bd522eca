"""The page section "Where failures go wrong": clusters, first wrong steps, diversity curves.

Renders report.json's `diagnostics` block (eval.report.diagnostics): per run, failures by first
missing fact and by terminal error class (count, share, two episodes linked into the viewer the
way every table of the page links them, `#ep=ID`), then each failed episode's first wrong step
and evidence; per training run, the group diversity curve and its collapse warning.
"""

from __future__ import annotations

import base64
from html import escape
from pathlib import Path
from typing import Any

EPISODE_ROWS = 200  # the page lists this many failed episodes per run; report.json has all


def _link(episode: str) -> str:
    return f'<a class="ep-link" href="#ep={escape(episode)}">{escape(episode)}</a>'


def _table(header: list[str], rows: list[list[str]], cls: str) -> str:
    head = "".join(f"<th>{escape(cell)}</th>" for cell in header)
    body = "".join("<tr>" + "".join(f"<td>{cell}</td>" for cell in row) + "</tr>" for row in rows)
    return f'<table class="{cls}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def _clusters(kind: str, title: str, clusters: list[dict[str, Any]], failures: int) -> str:
    rows = [
        [
            escape(item["key"]),
            str(item["count"]),
            f"{item['count'] / failures:.0%}",
            " ".join(_link(episode) for episode in item["examples"]),
        ]
        for item in clusters
    ]
    return f"<h4>{escape(title)}</h4>" + _table(
        [title.removeprefix("by ").capitalize(), "failures", "share", "episodes"],
        rows,
        f"clusters {kind}",
    )


def _step(step: dict[str, Any] | None) -> str:
    if step is None:
        return "–"
    if step["index"] is None:
        return escape(step["kind"]) + " (no call)"
    return f"call {step['index'] + 1}: {escape(str(step['tool']))} ({escape(step['kind'])})"


def _evidence(items: list[dict[str, Any]]) -> str:
    if not items:
        return "–"
    marks = "".join(
        f"<li class='{'made' if item['made'] else 'missing'}'>"
        f"{'✓' if item['made'] else '✗'} {escape(item['fact'])}</li>"
        for item in items
    )
    made = sum(item["made"] for item in items)
    summary = f"<summary>{made}/{len(items)}</summary>"
    return f"<details>{summary}<ul class='evidence'>{marks}</ul></details>"


def _episodes(entries: list[dict[str, Any]]) -> str:
    rows = [
        [
            _link(entry["episode"]),
            escape(entry["label"]),
            escape(entry["difficulty"]),
            escape(entry["error_class"]),
            _step(entry["step"]),
            _evidence(entry["evidence"]),
            escape(entry["first_missing"]),
        ]
        for entry in entries[:EPISODE_ROWS]
    ]
    more = (
        f"<p class='note'>First {EPISODE_ROWS} of {len(entries)}; all are in report.json.</p>"
        if len(entries) > EPISODE_ROWS
        else ""
    )
    header = ["episode", "class", "level", "error class", "first wrong step"]
    header += ["reference reads made by then", "first missing fact"]
    return (
        "<details class='failed-episodes'><summary>each failed episode</summary>"
        + _table(header, rows, "diagnosed")
        + more
        + "</details>"
    )


def _run(block: dict[str, Any]) -> str:
    counts = f"{block['failures']} of {block['episodes']} episodes failed"
    head = f"<h3>{escape(block['run'])}: {counts}</h3>"
    if not block["failures"]:
        return head + "<p class='empty'>No failed episode.</p>"
    return (
        head
        + _clusters(
            "missing-fact", "by first missing fact", block["by_missing_fact"], block["failures"]
        )
        + _clusters("error-class", "by error class", block["by_error_class"], block["failures"])
        + _episodes(block["episodes_diagnosed"])
    )


def _diversity(items: list[dict[str, Any]], out: Path) -> str:
    if not items:
        return "<p class='empty'>No training metrics given (--train-metrics PATH).</p>"
    parts = []
    for item in items:
        parts.append(f"<h4>{escape(item['name'])}</h4>")
        if item["figure"] is None:
            parts.append(
                "<p class='empty'>No tool-call sequences in these metrics (logged by training "
                "since LedgerGym's group diversity; see eval/report/diversity.py).</p>"
            )
            continue
        data = base64.b64encode((out / item["figure"]).read_bytes()).decode("ascii")
        parts.append(
            f'<img class="figure diversity" alt="tool-call diversity {escape(item["name"])}" '
            f'src="data:image/png;base64,{data}">'
        )
        if item["warning"]:
            parts.append(f"<p class='warning diversity-collapse'>{escape(item['warning'])}</p>")
        parts.append(f"<p class='note'>{escape(item['rule'])}.</p>")
    return "".join(parts)


def diagnostics_html(report: dict[str, Any], out: Path) -> str:
    block = report["diagnostics"]
    diversity = ""
    if report["training"]:  # an eval-only page says once, in its header, what metrics add
        diversity = "<h3>Tool-call diversity within training groups</h3>" + _diversity(
            block["diversity"], out
        )
    return (
        f"<p class='note'>{escape(block['definition'])}.</p>"
        + "".join(_run(run) for run in block["runs"])
        + diversity
    )
