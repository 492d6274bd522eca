"""The report page: one self-contained HTML file (inline CSS, JS, data and PNGs; no CDN).

Every number on the page comes from the report dict that is also written as report.json; the
viewer's episodes travel as JSON in a script tag and `viewer.js` renders them in the browser.
"""

from __future__ import annotations

import base64
import json
from html import escape
from pathlib import Path
from typing import Any

from eval.report.confusion import confusion_table
from eval.report.diagnostics_page import diagnostics_html
from eval.report.flags import FLAGS
from eval.report.twins_section import twins_html

ASSETS = Path(__file__).resolve().parent
SECTIONS = (
    ("training", "Training curves"),
    ("before-after", "Before / after"),
    ("paired", "Paired comparison"),
    ("groups", "By root cause and difficulty"),
    ("action", "Action type and outcome mix"),
    ("confusion", "Confusion matrix"),
    ("twins", "Evidence dependence (twins)"),
    ("hacking", "Suspected reward hacking"),
    ("diagnostics", "Where failures go wrong"),
    ("reading", "Reading list"),
    ("viewer", "Trajectory viewer"),
)


def interval(value: dict[str, float] | None, digits: int = 2) -> str:
    if value is None:
        return "–"
    return f"{value['estimate']:.{digits}f} [{value['low']:.{digits}f}, {value['high']:.{digits}f}]"


def _number(value: float | None, digits: int = 2) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def _image(out: Path, name: str | None, alt: str) -> str:
    if name is None:
        return ""
    data = base64.b64encode((out / name).read_bytes()).decode("ascii")
    return f'<img class="figure" alt="{escape(alt)}" src="data:image/png;base64,{data}">'


def _table(header: list[str], rows: list[list[str]], cls: str = "") -> str:
    head = "".join(f"<th>{escape(cell)}</th>" for cell in header)
    body = "".join("<tr>" + "".join(f"<td>{cell}</td>" for cell in row) + "</tr>" for row in rows)
    return f'<table class="{cls}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def _link(episode: str, text: str) -> str:
    return f'<a class="ep-link" href="#ep={escape(episode)}">{escape(text)}</a>'


def _rate(block: dict[str, Any]) -> str:
    return f"{interval(block['rate'])} ({block['count']}/{block['total']})"


def _training(report: dict[str, Any], out: Path) -> str:
    parts = []
    for item in report["training"]:
        parts.append(f"<h3>{escape(item['name'])} ({escape(item['source'])})</h3>")
        parts.append(f"<p class='path'>{escape(item['path'])}, {len(item['steps'])} steps</p>")
        parts.append(_image(out, item["figure"], f"training curves {item['name']}"))
        rows = [
            [str(p["step"]), _number(p["pass1"]), interval(p["interval"]), str(p["episodes"])]
            for p in item["validation"]
        ]
        if rows:
            parts.append(_table(["step", "val pass^1", "95% Wilson", "episodes"], rows))
    return "".join(parts)


def _before_after(report: dict[str, Any], out: Path) -> str:
    runs = report["runs"]
    metrics: list[tuple[str, Any]] = [
        (
            "scenarios / episodes",
            lambda r: f"{r['summary']['scenarios']} / {r['summary']['episodes']} (k={r['k']})",
        ),
        ("pass^1", lambda r: interval(r["summary"]["overall"]["pass1"])),
        ("pass^k", lambda r: interval(r["summary"]["overall"]["passk"])),
        ("success rate (episodes, Wilson)", lambda r: interval(r["success_rate"])),
        (
            "grounded pass^1",
            lambda r: (
                interval((r["grounded"] or {}).get("pass1")) if r["grounded"] else "not in this log"
            ),
        ),
        (
            "grounded pass^k",
            lambda r: (
                interval((r["grounded"] or {}).get("passk")) if r["grounded"] else "not in this log"
            ),
        ),
        ("false-reversal rate", lambda r: _rate(r["summary"]["false_reversal"])),
        ("hallucination rate", lambda r: _rate(r["summary"]["hallucination"])),
        ("mean tool calls", lambda r: _number(r["summary"]["means"]["tool_calls"], 1)),
        (
            "cost per scenario (USD)",
            lambda r: (
                _number(r["cost"]["per_scenario_usd"], 4)
                + f"<div class='formula'>{escape(r['cost']['formula'])}</div>"
            ),
        ),
    ]
    header = ["metric", *[run["name"] for run in runs]]
    rows = [[escape(name), *[get(run) for run in runs]] for name, get in metrics]
    note = (
        "<p class='note'>pass^k: τ-bench estimator, 95% percentile bootstrap over scenarios; "
        "rates: Wilson 95%. Error episodes count as failures.</p>"
    )
    return (
        _table(header, rows, "metrics")
        + note
        + _image(out, report["figures"].get("before_after"), "before/after")
    )


def _paired(report: dict[str, Any]) -> str:
    if not report["paired"]:
        return "<p class='empty'>Give two or more runs for a paired comparison.</p>"
    parts = []
    for item in report["paired"] + report["paired_grounded"]:
        which = "grounded success" if item["verdict"] == "grounded" else "success"
        parts.append(f"<h3>{escape(item['second'])} vs {escape(item['first'])}: {which}</h3>")
        if item["difference"] is None:
            parts.append("<p class='empty'>No scenario in common.</p>")
            continue
        test, screen = item["mcnemar"], item["screen"]
        rows = [
            ["shared scenarios", str(item["shared_scenarios"])],
            [
                "pass^1 difference (second − first), paired bootstrap 95%",
                interval(item["difference"], 3),
            ],
            [
                f"solved only by {escape(item['first'])} / only by {escape(item['second'])}",
                f"{test['only_first']} / {test['only_second']} (both {test['solved_by_both']}, "
                f"neither {test['solved_by_neither']})",
            ],
            [
                "exact McNemar p (scenario solved = more than half its samples)",
                f"{test['p_value']:.4g}",
            ],
            [
                "non-overlap screen: unpaired pass^1 intervals",
                f"{interval(screen['first_pass1'])} vs {interval(screen['second_pass1'])}: "
                + ("overlap" if screen["intervals_overlap"] else "<b>no overlap</b>"),
            ],
        ]
        parts.append(_table(["", "value"], rows, "metrics"))
        per = [
            [
                escape(p["scenario_id"]),
                _number(p["first"]),
                _number(p["second"]),
                f"{p['difference']:+.2f}",
            ]
            for p in item["per_scenario"]
        ]
        parts.append(
            "<details><summary>per scenario</summary>"
            + _table(["scenario", "first pass^1", "second pass^1", "difference"], per)
            + "</details>"
        )
    return "".join(parts)


def _groups(report: dict[str, Any], out: Path) -> str:
    figures = report["figures"]
    held = [
        [
            escape(r["name"]),
            str(r["summary"]["heldout"]["n"]),
            interval(r["summary"]["heldout"]["pass1"]),
            interval(r["summary"]["heldout"]["passk"]),
            interval(r["summary"]["trained_classes"]["pass1"]),
        ]
        for r in report["runs"]
    ]
    return (
        _image(out, figures.get("by_root_cause"), "by root cause")
        + _image(out, figures.get("by_difficulty"), "by difficulty")
        + "<h3>Held-out class</h3>"
        + _table(["run", "n", "held-out pass^1", "held-out pass^k", "trained classes pass^1"], held)
    )


def _action(report: dict[str, Any], out: Path) -> str:
    runs = report["runs"]
    names = list(runs[0]["outcome_mix"]["counts"]) if runs else []
    rows = [
        [
            escape(name),
            *[
                f"{r['outcome_mix']['counts'][name]} ({interval(r['outcome_mix']['shares'][name])})"
                for r in runs
            ],
        ]
        for name in names
    ]
    rows += [
        [f"pass^1, right action {kind}", *[interval(r["action_type"][key]["pass1"]) for r in runs]]
        for kind, key in (("credit", "credit"), ("none (no_error)", "no_error"))
    ]
    return _image(out, report["figures"].get("action"), "action type") + _table(
        ["outcome", *[r["name"] for r in runs]], rows, "metrics"
    )


def _confusion(report: dict[str, Any]) -> str:
    return "".join(confusion_table(run) for run in report["runs"])


def _hacking(report: dict[str, Any]) -> str:
    parts = []
    for name, meaning in FLAGS.items():
        hits = [hit for run in report["flags"]["runs"] for hit in run["flags"][name]]
        parts.append(
            f"<h3 data-flag='{name}'>{escape(name)}: {len(hits)}</h3>"
            f"<p class='note'>{escape(meaning)}</p>"
        )
        rows = [
            [
                _link(hit["episode"], hit["episode"]),
                escape(hit["run"]),
                escape(hit["label"]),
                _number(hit["reward"]),
                escape(hit["why"]),
            ]
            for hit in hits[:200]
        ]
        if rows:
            parts.append(_table(["episode", "run", "class", "reward", "why"], rows))
        if len(hits) > len(rows):
            parts.append(
                f"<p class='note'>First {len(rows)} of {len(hits)}; all are in report.json and "
                "behind the viewer's flag filter.</p>"
            )
    return "".join(parts)


def _reading(report: dict[str, Any]) -> str:
    reading = report["reading_list"]
    head = (
        f"<p class='note'>Seed {reading['seed']}: {reading['available']['high_reward']} "
        f"high-reward (≥ {reading['high_reward_threshold']}) and "
        f"{reading['available']['failures']} failed episodes available; targets "
        f"{reading['targets']['high_reward']} and {reading['targets']['failures']}, "
        "stratified by class.</p>"
        "<button id='export-notes'>Export notes (JSON)</button> "
        "<textarea id='notes-out' readonly rows='3'></textarea>"
    )
    rows = [
        [
            f"<input type='checkbox' class='read-box' data-ep='{escape(item['episode'])}'>",
            escape(item["kind"]),
            _link(item["episode"], item["episode"]),
            escape(item["run"]),
            escape(item["label"]),
            escape(item["difficulty"]),
            _number(item["reward"]),
            "yes" if item["success"] else "no",
            f"<input type='text' class='read-note' data-ep='{escape(item['episode'])}'>",
        ]
        for item in reading["items"]
    ]
    return head + _table(
        ["read", "kind", "episode", "run", "class", "difficulty", "reward", "success", "note"],
        rows,
        "reading",
    )


def _viewer() -> str:
    return (ASSETS / "viewer.html").read_text(encoding="utf-8")


def _script_json(value: Any) -> str:
    """JSON safe inside a script element: no '<' at all, so no '</script>' or '<!--' in it."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).replace("<", "\\u003c")


def render_page(report: dict[str, Any], viewer: dict[str, Any], out: Path) -> str:
    trained = bool(report["training"])  # an eval-only page has no training section at all
    shown = [(key, title) for key, title in SECTIONS if trained or key != "training"]
    bodies = {
        "training": _training(report, out) if trained else "",
        "before-after": _before_after(report, out),
        "paired": _paired(report),
        "groups": _groups(report, out),
        "action": _action(report, out),
        "confusion": _confusion(report),
        "twins": twins_html(report.get("twins", [])),
        "hacking": _hacking(report),
        "diagnostics": diagnostics_html(report, out),
        "reading": _reading(report),
        "viewer": _viewer(),
    }
    nav = "".join(f"<a href='#{key}'>{escape(title)}</a>" for key, title in shown)
    sections = "".join(
        f"<section class='panel' id='{key}'><h2>{escape(title)}</h2>{bodies[key]}</section>"
        for key, title in shown
    )
    runs = "".join(
        f"<li>{escape(run['name'])}: <code>{escape(run['path'])}</code>, split "
        f"{escape(run['split'])}, LedgerGym "
        f"{escape(str(run['summary'].get('stamp', {}).get('ledgergym_version', '–')))}</li>"
        for run in report["runs"]
    )
    warnings = "".join(f"<p class='warning'>{escape(w)}</p>" for w in report["warnings"])
    kind = "training report" if trained else "evaluation report"
    if not trained:
        warnings += (
            "<p class='note'>Evaluation runs only: training curves and tool-call diversity "
            "join the page with <code>--train-metrics PATH</code>.</p>"
        )
    css = (ASSETS / "report.css").read_text(encoding="utf-8")
    js = (ASSETS / "viewer.js").read_text(encoding="utf-8")
    return (
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
        f"<title>LedgerGym {kind}</title>"
        f"<style>{css}</style></head><body>"
        f"<header><h1>LedgerGym {kind}</h1>"
        f"<p>Built by LedgerGym {escape(str(report.get('ledgergym_version', '–')))}.</p>"
        f"<ul class='runs'>{runs}</ul>{warnings}"
        f"<nav>{nav}</nav></header>{sections}"
        f"<script id='viewer-data' type='application/json'>{_script_json(viewer)}</script>"
        f"<script>{js}</script></body></html>"
    )
