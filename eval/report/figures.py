"""The report's plots: matplotlib (Agg) to PNG files, drawn only from numbers in report.json.

Every bar with an interval draws that interval as its error bar; the page embeds the same PNGs
as data URIs so it stays one self-contained file.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from eval.report.diversity import COLLAPSE_BELOW, collapses
from eval.report.load import TrainMetrics
from eval.stats import wilson_interval

DPI = 90


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(fig: Any, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=DPI)
    _pyplot().close(fig)
    return path


def _bars(
    ax: Any,
    groups: Sequence[str],
    series: Sequence[tuple[str, Sequence[dict[str, float] | None]]],
) -> None:
    """Grouped bars, one series per run; a missing value is left out, not drawn as zero."""
    width = 0.8 / max(len(series), 1)
    for index, (name, values) in enumerate(series):
        xs: list[float] = []
        heights: list[float] = []
        errors: list[list[float]] = [[], []]
        for position, value in enumerate(values):
            if value is None:
                continue
            xs.append(position + (index - (len(series) - 1) / 2) * width)
            heights.append(value["estimate"])
            errors[0].append(value["estimate"] - value["low"])
            errors[1].append(value["high"] - value["estimate"])
        ax.bar(xs, heights, width, yerr=errors, capsize=2, label=name)
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels(groups, rotation=30, ha="right", fontsize=8)
    ax.set_ylim(0, 1.05)


def training_figure(metrics: TrainMetrics, path: Path) -> Path:
    plt = _pyplot()
    fig, axes = plt.subplots(2, 2, figsize=(11, 6.5))
    steps = [row.step for row in metrics.steps]
    reward_ax, val_ax, zero_ax, tools_ax = axes.flat
    reward_ax.plot(steps, [row.reward for row in metrics.steps], "k-o", ms=3, label="total")
    for term in sorted({name for row in metrics.steps for name in row.terms}):
        reward_ax.plot(steps, [row.terms.get(term) for row in metrics.steps], ms=2, label=term)
    reward_ax.set_title("reward per episode, total and by term")
    reward_ax.legend(fontsize=6, ncol=2)
    if metrics.validation:
        intervals = [
            wilson_interval(round(p.pass1 * p.episodes), p.episodes) for p in metrics.validation
        ]
        xs = [p.step for p in metrics.validation]
        ys = [p.pass1 for p in metrics.validation]
        val_ax.errorbar(
            xs,
            ys,
            yerr=[
                [y - i.low for y, i in zip(ys, intervals, strict=True)],
                [i.high - y for y, i in zip(ys, intervals, strict=True)],
            ],
            fmt="o-",
            capsize=3,
        )
        val_ax.set_ylim(0, 1.05)
    else:
        note = "no validation logged over steps"
        if metrics.source == "trl":
            note += "\n(TRL runs: see before / after)"
        val_ax.text(0.5, 0.5, note, ha="center", va="center")
    val_ax.set_title("val success (pass^1) by step, 95% Wilson")
    zero_ax.plot(steps, [row.zero_variance_share for row in metrics.steps], "o-", ms=3)
    zero_ax.set_ylim(0, 1.05)
    zero_ax.set_title("share of groups with zero reward variance")
    tools_ax.plot(steps, [row.tool_calls for row in metrics.steps], "o-", ms=3, label="tool calls")
    tools_ax.set_ylabel("tool calls per episode")
    tokens = tools_ax.twinx()
    tokens.plot(steps, [row.completion_tokens for row in metrics.steps], "r--", label="tokens")
    tokens.set_ylabel("completion tokens per episode", color="r")
    tools_ax.set_title("tool calls and completion tokens per episode")
    from matplotlib.ticker import MaxNLocator

    for ax in axes.flat:
        ax.set_xlabel("step")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    fig.suptitle(f"training: {metrics.name} ({metrics.source})")
    return _save(fig, path)


def before_after_figure(runs: Sequence[dict[str, Any]], path: Path) -> Path:
    plt = _pyplot()
    names = ["pass^1", "pass^k", "grounded pass^1", "grounded pass^k"]
    series = []
    for run in runs:
        overall, grounded = run["summary"]["overall"], run["grounded"] or {}
        series.append(
            (
                run["name"],
                [overall["pass1"], overall["passk"], grounded.get("pass1"), grounded.get("passk")],
            )
        )
    fig, ax = plt.subplots(figsize=(8, 3.6))
    _bars(ax, names, series)
    ax.set_title("before/after: pass^1 and pass^k (k per run), 95% bootstrap over scenarios")
    ax.legend(fontsize=7)
    return _save(fig, path)


def group_figure(
    runs: Sequence[dict[str, Any]], section: str, held_out: str | None, path: Path, title: str
) -> Path:
    """pass^1 per group with intervals; the held-out class gets its own panel."""
    plt = _pyplot()
    names: list[str] = []
    for run in runs:
        names += [name for name in run["summary"][section] if name not in names]
    trained = [name for name in names if name != held_out]
    apart = [name for name in names if name == held_out]
    ratios = [max(len(trained), 1), 1] if apart else [1]
    fig, axes = plt.subplots(
        1, len(ratios), figsize=(11, 3.8), gridspec_kw={"width_ratios": ratios}, squeeze=False
    )
    for ax, group in zip(axes[0], [trained, apart], strict=False):
        series = [
            (run["name"], [(run["summary"][section].get(g) or {}).get("pass1") for g in group])
            for run in runs
        ]
        _bars(ax, group, series)
    axes[0][0].set_title(title)
    axes[0][0].legend(fontsize=7)
    if apart:
        axes[0][1].set_title("held-out class")
    return _save(fig, path)


def action_figure(runs: Sequence[dict[str, Any]], path: Path) -> Path:
    plt = _pyplot()
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 3.6))
    series = [
        (
            run["name"],
            [run["action_type"]["credit"]["pass1"], run["action_type"]["no_error"]["pass1"]],
        )
        for run in runs
    ]
    _bars(left, ["right action: credit", "right action: none (no_error)"], series)
    left.set_title("success by action type (pass^1, 95% bootstrap)")
    left.legend(fontsize=7)
    bottoms = [0.0] * len(runs)
    outcomes = list(runs[0]["outcome_mix"]["counts"]) if runs else []
    for outcome in outcomes:
        shares = [
            run["outcome_mix"]["shares"][outcome]["estimate"]
            if run["outcome_mix"]["total"]
            else 0.0
            for run in runs
        ]
        right.barh([run["name"] for run in runs], shares, left=bottoms, label=outcome)
        bottoms = [b + s for b, s in zip(bottoms, shares, strict=True)]
    right.set_xlim(0, 1)
    right.set_title("outcome mix (share of episodes)")
    right.legend(fontsize=6, loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=3)
    return _save(fig, path)


def diversity_figure(name: str, points: Sequence[tuple[int, float | None]], path: Path) -> Path:
    """Distinct tool-call sequences / group size by step (eval.report.diversity), with the
    collapse threshold dashed and every collapsed span shaded."""
    plt = _pyplot()
    shown = [(step, value) for step, value in points if value is not None]
    fig, ax = plt.subplots(figsize=(8, 3.2))
    ax.plot([s for s, _ in shown], [v for _, v in shown], "o-", ms=3, label="mean over groups")
    ax.axhline(COLLAPSE_BELOW, color="r", ls="--", lw=1, label=f"collapse below {COLLAPSE_BELOW}")
    for first, last in collapses(points):
        ax.axvspan(first - 0.5, last + 0.5, color="r", alpha=0.12)
    ax.set_ylim(0, 1.05)
    ax.set_xlabel("step")
    ax.set_title(f"{name}: distinct tool-call sequences / group size, per step")
    ax.legend(fontsize=7)
    return _save(fig, path)
