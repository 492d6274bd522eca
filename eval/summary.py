"""The run summary: episode lines -> `summary.json` (numbers) and `summary.md` (the table).

pass^1 and pass^k come with percentile-bootstrap 95% intervals over scenarios, overall, per root
cause, per difficulty and for the held-out class; false-reversal and hallucination rates come
with Wilson intervals over graded episodes. Error lines count as failures in pass^k and are left
out of rates and means (they have no grade). Formulas: `eval/stats.py`.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from env.labels import DIFFICULTIES, HELDOUT_LABEL, ROOT_CAUSES
from eval.episode_log import EpisodeLine, distinct
from eval.stats import Interval, bootstrap_ci, wilson_interval

SUMMARY_JSON = "summary.json"
SUMMARY_MD = "summary.md"


def _interval(value: Interval | None) -> dict[str, float] | None:
    if value is None:
        return None
    return {"estimate": value.estimate, "low": value.low, "high": value.high}


def as_interval(value: dict[str, float] | None) -> Interval | None:
    """The inverse of how summaries store intervals (compare.py reads them back)."""
    return None if value is None else Interval(value["low"], value["high"], value["estimate"])


def _grounded(line: EpisodeLine) -> bool:
    """Grounded success (design §6) from the grade; an error line or an old log has none."""
    return bool((line.grade or {}).get("grounded_success"))


def _outcomes(lines: Iterable[EpisodeLine], grounded: bool = False) -> dict[str, list[bool]]:
    """Scenario -> successes by sample (grounded successes if asked); a repeated (scenario,
    sample) keeps its last line."""
    by_key = {line.key: _grounded(line) if grounded else line.success for line in lines}
    outcomes: dict[str, list[bool]] = defaultdict(list)
    for (scenario, _sample), success in sorted(by_key.items()):
        outcomes[scenario].append(success)
    return dict(outcomes)


def pass_block(outcomes: Sequence[list[bool]], k: int, seed: int = 0) -> dict[str, Any]:
    """pass^1 over every scenario; pass^k over those with at least k samples."""
    if not outcomes:
        return {"n": 0, "pass1": None, "passk": None}
    full = [trials for trials in outcomes if len(trials) >= k]
    return {
        "n": len(outcomes),
        "pass1": _interval(bootstrap_ci(outcomes, 1, seed=seed)),
        "passk": _interval(bootstrap_ci(full, k, seed=seed)) if full else None,
    }


def _rate(flags: list[bool]) -> dict[str, Any]:
    count, total = sum(flags), len(flags)
    return {"count": count, "total": total, "rate": _interval(wilson_interval(count, total))}


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _groups(
    lines: Sequence[EpisodeLine], field: str, order: Sequence[str], k: int, seed: int
) -> dict[str, Any]:
    outcomes = _outcomes(lines)
    members: dict[str, list[list[bool]]] = defaultdict(list)
    seen = {line.scenario_id: getattr(line, field) for line in lines}
    for scenario, trials in outcomes.items():
        members[seen[scenario]].append(trials)
    names = [name for name in order if name in members] + sorted(set(members) - set(order))
    return {name: pass_block(members[name], k, seed) for name in names}


def _identical_samples(lines: Sequence[EpisodeLine], k: int) -> bool:
    """k > 1 and, in every scenario with several samples, the model said the same every time."""
    digests: dict[str, set[str | None]] = defaultdict(set)
    counts: dict[str, int] = defaultdict(int)
    for line in lines:
        digests[line.scenario_id].add(line.reply_digest)
        counts[line.scenario_id] += 1
    several = [scenario for scenario, count in counts.items() if count > 1]
    return (
        k > 1
        and bool(several)
        and all(len(digests[s]) == 1 and None not in digests[s] for s in several)
    )


def identical_samples_note(summary: dict[str, Any]) -> str | None:
    """The console's and summary.md's note when the k samples cannot differ: expected of a
    scripted policy (nothing is wrong; k = 1 gives the same figures), a question otherwise."""
    if not summary.get("identical_samples"):
        return None
    stamp, k = summary.get("stamp", {}), summary["k"]
    if stamp.get("kind") == "program":
        return (
            f"{stamp.get('model')} is a scripted, deterministic policy, so each scenario's {k} "
            f"samples are identical, as expected: pass^k is then pass^1 (--k 1 gives the same "
            "figures in 1/k of the time)"
        )
    return (
        f"every scenario's {k} samples are identical (a deterministic policy, a server that "
        "ignores temperature, or sampling off): pass^k is then pass^1"
    )


def _shared_error(lines: Sequence[EpisodeLine]) -> str | None:
    """The status every episode ended on, when all of them are error lines with one status."""
    heads = {(line.error or "").split(":", 1)[0] for line in lines}
    if len(lines) < 2 or any(line.error is None for line in lines) or len(heads) != 1:
        return None
    return heads.pop() or None


def errors_note(summary: dict[str, Any]) -> str | None:
    """Every episode ended on the same server error: the model's doing, or a request the
    server never accepts (a sampling key, a tool schema); only the user can tell which."""
    shared = summary.get("shared_error")
    if not shared:
        return None
    return (
        f"every episode ended on {shared} (see each line's `error`): if the server rejects "
        "every request whatever the model says, fix the request and rerun with a new --out"
    )


def _counts(lines: Sequence[EpisodeLine], planned: int | None) -> dict[str, Any]:
    """Planned vs recorded: every planned episode is graded, an error line, or incomplete."""
    graded = sum(1 for line in lines if line.error is None)
    reasons: dict[str, int] = defaultdict(int)
    for line in lines:
        reasons[line.end_reason or "unknown"] += 1
    return {
        "planned_episodes": planned,
        "recorded_episodes": len(lines),
        "graded_episodes": graded,
        "incomplete_episodes": None if planned is None else max(planned - len(lines), 0),
        "end_reasons": dict(sorted(reasons.items())),
    }


def summarize(
    lines: Sequence[EpisodeLine],
    *,
    k: int,
    stamp: dict[str, Any],
    seed: int = 0,
    planned: int | None = None,
) -> dict[str, Any]:
    """Everything the report prints, as plain JSON-able data; each (scenario, sample) once."""
    lines = distinct(list(lines))
    outcomes = _outcomes(lines)
    graded = [line for line in lines if line.error is None]
    scenarios = max(len(outcomes), 1)
    total_cost = sum(line.cost_usd for line in graded)
    heldout = [line for line in lines if line.label == HELDOUT_LABEL]
    trained = [line for line in lines if line.label != HELDOUT_LABEL]
    return {
        "stamp": stamp,
        "k": k,
        "scenarios": len(outcomes),
        "episodes": len(lines),
        "errors": len(lines) - len(graded),
        "incomplete_scenarios": sum(1 for trials in outcomes.values() if len(trials) < k),
        **_counts(lines, planned),
        "identical_samples": _identical_samples(lines, k),
        "shared_error": _shared_error(lines),
        "overall": pass_block(list(outcomes.values()), k, seed),
        "grounded": pass_block(list(_outcomes(lines, grounded=True).values()), k, seed),
        "heldout": pass_block(list(_outcomes(heldout).values()), k, seed),
        "trained_classes": pass_block(list(_outcomes(trained).values()), k, seed),
        "by_root_cause": _groups(lines, "label", ROOT_CAUSES, k, seed),
        "by_difficulty": _groups(lines, "difficulty", DIFFICULTIES, k, seed),
        "false_reversal": _rate([line.flag["false_reversal"] for line in graded]),
        "hallucination": _rate([line.flag["hallucinated_numbers"] for line in graded]),
        "submitted": _rate([line.flag["submitted"] for line in graded]),
        "means": {
            name: _mean([float(getattr(line, name)) for line in graded])
            for name in (
                *("tool_calls", "turns", "prompt_tokens", "completion_tokens", "wall_s"),
                *("generation_s", "queue_s", "peak_context_tokens"),
            )
        },
        "mean_reward": _mean([line.reward_total or 0.0 for line in graded]),
        "total_cost_usd": total_cost,
        "cost_per_scenario_usd": total_cost / scenarios,
    }


def _fmt(value: dict[str, float] | None) -> str:
    interval = as_interval(value)
    return "–" if interval is None else interval.format()


def _number(value: float | None, digits: int = 1) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def _rate_cell(rate: dict[str, Any]) -> str:
    if not rate["total"]:
        return "– (0/0)"
    return f"{_fmt(rate['rate'])} ({rate['count']}/{rate['total']})"


def _group_table(title: str, groups: dict[str, Any], k: int) -> list[str]:
    if k == 1:  # pass^1 twice says nothing new
        rows = [f"## By {title}", "", f"| {title} | n | pass^1 |", "|---|---:|---|"]
        rows += [f"| {name} | {b['n']} | {_fmt(b['pass1'])} |" for name, b in groups.items()]
        return [*rows, ""]
    rows = [f"## By {title}", "", f"| {title} | n | pass^1 | pass^{k} |", "|---|---:|---|---|"]
    for name, block in groups.items():
        rows.append(f"| {name} | {block['n']} | {_fmt(block['pass1'])} | {_fmt(block['passk'])} |")
    return [*rows, ""]


def _planned_note(summary: dict[str, Any]) -> str:
    if summary.get("planned_episodes") is None:
        return ""
    reasons = ", ".join(f"{n} {r}" for r, n in (summary.get("end_reasons") or {}).items())
    notes = [n for n in (identical_samples_note(summary), errors_note(summary)) if n]
    return (
        f"Recorded {summary['recorded_episodes']} of {summary['planned_episodes']} planned "
        f"episodes ({summary['graded_episodes']} graded, {summary['errors']} errors, "
        f"{summary['incomplete_episodes']} incomplete); end reasons: {reasons or '–'}. "
        + "".join(f"**Note: {note}.** " for note in notes)
    )


def render_markdown(summary: dict[str, Any]) -> str:
    stamp, k, means = summary["stamp"], summary["k"], summary["means"]
    overall, heldout = summary["overall"], summary["heldout"]
    lines = [
        f"# {stamp.get('model')} on {stamp.get('split')} (k={k})",
        "",
        f"{summary['scenarios']} scenarios, {summary['episodes']} episodes, "
        f"{summary['errors']} errors, "
        f"{summary['incomplete_scenarios']} scenarios with fewer than k samples. "
        f"{_planned_note(summary)}"
        f"LedgerGym {stamp.get('ledgergym_version', '–')}, "
        f"commit {stamp.get('commit')}, tool contract {stamp.get('tool_contract')}, "
        f"generator {stamp.get('generator')}, {stamp.get('date')}.",
        "",
        "| metric | value |",
        "|---|---|",
        f"| pass^1 | {_fmt(overall['pass1'])} |",
        *([f"| pass^{k} | {_fmt(overall['passk'])} |"] if k > 1 else []),
        f"| grounded success pass^1 | {_fmt(summary.get('grounded', {}).get('pass1'))} |",
        *(
            [f"| grounded success pass^{k} | {_fmt(summary.get('grounded', {}).get('passk'))} |"]
            if k > 1
            else []
        ),
        f"| held-out class pass^1 (n={heldout['n']}) | {_fmt(heldout['pass1'])} |",
        *(
            [f"| held-out class pass^{k} (n={heldout['n']}) | {_fmt(heldout['passk'])} |"]
            if k > 1
            else []
        ),
        f"| false reversal rate | {_rate_cell(summary['false_reversal'])} |",
        f"| hallucination rate | {_rate_cell(summary['hallucination'])} |",
        f"| submitted | {_rate_cell(summary['submitted'])} |",
        f"| mean tool calls | {_number(means['tool_calls'])} |",
        f"| mean turns | {_number(means['turns'])} |",
        f"| mean tokens, prompt / completion | {_number(means['prompt_tokens'], 0)} / "
        f"{_number(means['completion_tokens'], 0)} |",
        f"| mean wall time per episode (s) | {_number(means['wall_s'], 2)} "
        f"(model requests {_number(means.get('generation_s'), 2)}, failed attempts and "
        f"retry pauses {_number(means.get('queue_s'), 2)}) |",
        f"| mean peak context (tokens) | {_number(means.get('peak_context_tokens'), 0)} |",
        f"| mean shaped reward | {_number(summary['mean_reward'], 3)} |",
        f"| cost per scenario (USD) | {summary['cost_per_scenario_usd']:.4f} |",
        "",
        "Intervals: 95% percentile bootstrap over scenarios (pass^k), Wilson (rates).",
        "",
    ]
    lines += _group_table("root cause", summary["by_root_cause"], k)
    lines += _group_table("difficulty", summary["by_difficulty"], k)
    return "\n".join(lines)


def headline(summary: dict[str, Any]) -> list[str]:
    """The figures a run is made for, as the console's last lines (then the paths).

    pass^1 with its interval, pass^k when k > 1 and the samples can differ, grounded success,
    false reversals and hallucinated numbers with their counts: the rest is in summary.md.
    """
    k, overall = summary["k"], summary["overall"]
    grounded = summary.get("grounded", {}).get("pass1")
    lines = [
        f"pass^1 {_fmt(overall['pass1'])} over {summary['scenarios']} scenarios "
        f"({summary['episodes']} episodes, {summary['errors']} errors)",
    ]
    if k > 1 and not summary.get("identical_samples"):
        lines.append(f"pass^{k} {_fmt(overall['passk'])}")
    lines.append(f"grounded success pass^1 {_fmt(grounded)}")
    lines.append(
        f"false reversals {_rate_cell(summary['false_reversal'])}, "
        f"hallucinated numbers {_rate_cell(summary['hallucination'])}"
    )
    return lines


def write_summary(run_dir: Path, summary: dict[str, Any]) -> Path:
    (run_dir / SUMMARY_JSON).write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    markdown = run_dir / SUMMARY_MD
    markdown.write_text(render_markdown(summary), encoding="utf-8")
    return markdown


def load_summary(path: Path) -> dict[str, Any]:
    """A run directory or its summary.json."""
    file = path / SUMMARY_JSON if path.is_dir() else path
    return dict(json.loads(file.read_text(encoding="utf-8")))
