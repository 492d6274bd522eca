"""Two runs side by side: `python -m eval.compare RUN_A RUN_B` (run directories or summary.json).

Prints one markdown table of pass^1, pass^k, per root cause, per difficulty and the rates, and
marks with `*` each row whose two 95% intervals do not overlap: a screening flag for a real
difference, not a significance test (overlapping intervals do not prove there is none). When
both arguments are run directories with their episodes, it adds the paired figures over the
scenarios both ran: the pass^1 difference with a paired bootstrap interval and an exact McNemar
test (`eval/report/paired.py`), the comparison to trust when both saw the same scenarios.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from env.cli import EXIT_USER_ERROR, Parser, run_command
from eval.report.load import ReportInputError, load_run, unique_names
from eval.report.paired import describe, has_grounded, paired_comparison
from eval.stats import intervals_overlap
from eval.summary import as_interval, load_summary

Row = tuple[str, dict[str, float] | None, dict[str, float] | None]


def _pass_rows(name: str, a: dict[str, Any] | None, b: dict[str, Any] | None, k: str) -> list[Row]:
    empty: dict[str, Any] = {"pass1": None, "passk": None, "n": 0}
    a, b = a or empty, b or empty
    label = f"{name} (n={a['n']}/{b['n']})"
    rows: list[Row] = [(f"{label} pass^1", a["pass1"], b["pass1"])]
    if k != "1":  # at k = 1 on both sides pass^k is pass^1: one row, not the same row twice
        rows.append((f"{label} pass^{k}", a["passk"], b["passk"]))
    return rows


def comparison_rows(a: dict[str, Any], b: dict[str, Any]) -> list[Row]:
    """Rows in report order; a group missing from one run shows as '–' there."""
    k = str(a["k"]) if a["k"] == b["k"] else "k"
    rows = _pass_rows("overall", a["overall"], b["overall"], k)
    rows += _pass_rows("held-out class", a["heldout"], b["heldout"], k)
    for section in ("by_root_cause", "by_difficulty"):
        names = list(a[section]) + [name for name in b[section] if name not in a[section]]
        for name in names:
            rows += _pass_rows(name, a[section].get(name), b[section].get(name), k)
    for rate in ("false_reversal", "hallucination", "submitted"):
        rows.append((f"{rate.replace('_', ' ')} rate", a[rate]["rate"], b[rate]["rate"]))
    return rows


def differs(left: dict[str, float] | None, right: dict[str, float] | None) -> bool:
    first, second = as_interval(left), as_interval(right)
    return first is not None and second is not None and not intervals_overlap(first, second)


def _cell(value: dict[str, float] | None) -> str:
    interval = as_interval(value)
    return "–" if interval is None else interval.format()


def _heading(summary: dict[str, Any]) -> str:
    stamp = summary["stamp"]
    return f"{stamp.get('model')} ({stamp.get('split')}, k={summary['k']})"


def render(a: dict[str, Any], b: dict[str, Any]) -> str:
    lines = [f"| metric | A: {_heading(a)} | B: {_heading(b)} | |", "|---|---|---|:-:|"]
    for name, left, right in comparison_rows(a, b):
        mark = "*" if differs(left, right) else ""
        lines.append(f"| {name} | {_cell(left)} | {_cell(right)} | {mark} |")
    means = [
        ("mean tool calls", a["means"]["tool_calls"], b["means"]["tool_calls"]),
        ("cost per scenario (USD)", a["cost_per_scenario_usd"], b["cost_per_scenario_usd"]),
    ]
    for name, left_value, right_value in means:
        lines.append(f"| {name} | {_plain(left_value)} | {_plain(right_value)} | |")
    lines += ["", "`*`: the two 95% intervals do not overlap."]
    lines += _warnings(a, b)
    return "\n".join(lines)


def _plain(value: float | None) -> str:
    return "–" if value is None else f"{value:.4g}"


def _warnings(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    notes = []
    for key in ("split", "ledgergym_version", "tool_contract", "generator"):
        left, right = a["stamp"].get(key), b["stamp"].get(key)
        if left != right:
            notes.append(f"Note: the runs differ in {key}: {left} vs {right}.")
    if a["k"] != b["k"]:
        notes.append(f"Note: the runs use different k: {a['k']} vs {b['k']}.")
    return notes


def _main(argv: Sequence[str] | None) -> int:
    parser = Parser(prog="python -m eval.compare", description=__doc__.splitlines()[0])
    parser.add_argument("run_a", type=Path, metavar="RUN_A", help="run directory or summary.json")
    parser.add_argument("run_b", type=Path, metavar="RUN_B", help="run directory or summary.json")
    args = parser.parse_args(argv)
    try:
        first, second = load_summary(args.run_a), load_summary(args.run_b)
    except (OSError, ValueError) as exc:
        print(f"error: cannot read a summary: {exc}", file=sys.stderr)
        return EXIT_USER_ERROR
    print(render(first, second))
    print()
    print("\n".join(paired_lines(args.run_a, args.run_b)))
    print()
    print("\n".join(headline_lines(first, second, args.run_a, args.run_b)))
    return 0


def headline_lines(a: dict[str, Any], b: dict[str, Any], path_a: Path, path_b: Path) -> list[str]:
    """The last lines: per run, the figures it is compared for, then where each run is."""
    lines = []
    for tag, summary, path in (("A", a, path_a), ("B", b, path_b)):
        grounded = (summary.get("grounded") or {}).get("pass1")
        reversals = summary["false_reversal"]
        lines.append(
            f"{tag} {_heading(summary)}: pass^1 {_cell(summary['overall']['pass1'])}, "
            f"grounded {_cell(grounded)}, false reversals "
            f"{reversals['count']}/{reversals['total']}  ({path})"
        )
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    return run_command("python -m eval.compare", _main, argv)


def paired_lines(first: Path, second: Path) -> list[str]:
    """The paired figures, or why there are none (summary.json files hold no episodes)."""
    try:
        runs = unique_names([load_run(first), load_run(second)])
    except ReportInputError as exc:
        return [f"No paired figures: {exc}"]
    lines = describe(paired_comparison(runs[0], runs[1]))
    if all(map(has_grounded, runs)):
        lines += describe(paired_comparison(runs[0], runs[1], verdict="grounded"))
    return lines


if __name__ == "__main__":
    sys.exit(main())
