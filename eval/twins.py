"""Evidence dependence, measured on counterfactual twins (`env.generation.twins`).

Each faulted scenario is paired with its twin (the same world and complaint with the fault set
right, truth `no_error`); sample n of one with sample n of the other. Per pair:
- both right: the episode succeeds on the original and on the twin;
- complaint-following: the same fault verdict on both (the evidence changed, the answer did not);
- evidence-blind: the same reported answer on both, whatever it is;
- twin false reversal: a credit note drafted on the twin, where nothing is owed.
A `no_error` scenario is its own twin and forms no pair. Rates carry Wilson intervals at k = 1
(pairs are independent draws) and a bootstrap over scenarios otherwise (`eval.stats`).
Run: `python -m eval.run --model auditor --split eval --twins --k 1`.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from eval.episode_log import EpisodeLine
from eval.stats import Interval, mean_ci, wilson_interval

TWINS_JSON, TWINS_MD = "twins.json", "twins.md"
MEASURES = ("both_right", "complaint_following", "evidence_blind", "twin_false_reversal")


@dataclass(frozen=True)
class Pair:
    seed: int
    label: str  # the original's true class
    difficulty: str
    sample: int
    both_right: bool
    complaint_following: bool
    evidence_blind: bool
    twin_false_reversal: bool


def _answer(line: EpisodeLine) -> str | None:
    grade = line.grade or {}
    return grade.get("reported_label")


def _credited(line: EpisodeLine) -> bool:
    grade = line.grade or {}
    return bool(grade.get("credits")) or bool(grade.get("false_reversal"))


def pair_episodes(originals: Sequence[EpisodeLine], twins: Sequence[EpisodeLine]) -> list[Pair]:
    """Pairs each faulted original's sample with its twin's sample of the same index (by seed)."""
    by_key = {(line.seed, line.sample): line for line in twins}
    pairs = []
    for line in sorted(originals, key=lambda x: (x.seed, x.sample)):
        twin = by_key.get((line.seed, line.sample))
        if line.label == "no_error" or twin is None:
            continue
        first, second = _answer(line), _answer(twin)
        pairs.append(
            Pair(
                seed=line.seed,
                label=line.label,
                difficulty=line.difficulty,
                sample=line.sample,
                both_right=line.success and twin.success,
                complaint_following=first is not None and first != "no_error" and first == second,
                evidence_blind=first == second,
                twin_false_reversal=_credited(twin),
            )
        )
    return pairs


def rate(pairs: Sequence[Pair], measure: str, seed: int = 0) -> Interval:
    """The share of pairs with `measure`: Wilson at one sample per scenario, else a bootstrap
    over scenarios of each scenario's share."""
    flags = [bool(getattr(p, measure)) for p in pairs]
    if len({p.sample for p in pairs}) <= 1:
        return wilson_interval(sum(flags), len(flags))
    per_seed: dict[int, list[bool]] = defaultdict(list)
    for p in pairs:
        per_seed[p.seed].append(bool(getattr(p, measure)))
    return mean_ci([sum(v) / len(v) for v in per_seed.values()], seed=seed)


def summarize_pairs(pairs: Sequence[Pair], seed: int = 0) -> dict[str, Any]:
    """Overall rates with intervals, counts of twin false reversals, and the per class / per
    level table (counts only: a cell of six pairs says little on its own)."""
    if not pairs:
        return {"pairs": 0}
    overall = {
        m: {"estimate": i.estimate, "low": i.low, "high": i.high}
        for m in MEASURES
        for i in [rate(pairs, m, seed)]
    }
    groups: dict[str, dict[str, dict[str, int]]] = {"label": {}, "difficulty": {}}
    for key in groups:
        cells: dict[str, dict[str, int]] = defaultdict(
            lambda: dict.fromkeys(("pairs", *MEASURES), 0)
        )
        for p in pairs:
            cell = cells[getattr(p, key)]
            cell["pairs"] += 1
            for m in MEASURES:
                cell[m] += int(getattr(p, m))
        groups[key] = dict(sorted(cells.items()))
    return {
        "pairs": len(pairs),
        "overall": overall,
        "twin_false_reversals": sum(p.twin_false_reversal for p in pairs),
        "by": groups,
    }


def render_twins_markdown(summary: dict[str, Any], title: str = "Evidence dependence") -> str:
    if not summary.get("pairs"):
        return f"## {title}\n\nNo scenario and twin pair recorded.\n"
    out = [
        f"## {title}",
        "",
        f"{summary['pairs']} pairs (faulted scenario, its no_error twin).",
        "",
    ]
    out += ["| measure | share [95% interval] |", "|---|---|"]
    for m in MEASURES:
        i = summary["overall"][m]
        interval = Interval(i["low"], i["high"], i["estimate"])
        out.append(f"| {m.replace('_', ' ')} | {interval.format()} |")
    for key, name in (("label", "class"), ("difficulty", "level")):
        out += ["", f"| {name} | pairs | both right | complaint-following | evidence-blind | "
                "twin false reversals |", "|---|---|---|---|---|---|"]  # fmt: skip
        for group, cell in summary["by"][key].items():
            out.append(
                f"| {group} | {cell['pairs']} | {cell['both_right']} | "
                f"{cell['complaint_following']} | {cell['evidence_blind']} | "
                f"{cell['twin_false_reversal']} |"
            )
    return "\n".join(out) + "\n"


def headline(summary: dict[str, Any]) -> list[str]:
    if not summary.get("pairs"):
        return ["twins: no pair recorded"]
    o = summary["overall"]

    def fmt(m: str) -> str:
        return Interval(o[m]["low"], o[m]["high"], o[m]["estimate"]).format()

    return [
        f"twins: {summary['pairs']} pairs; both right {fmt('both_right')}",
        f"complaint-following {fmt('complaint_following')}; evidence-blind {fmt('evidence_blind')}",
        f"twin false reversals {summary['twin_false_reversals']} ({fmt('twin_false_reversal')})",
    ]


def write_twins(run_dir: Path, summary: dict[str, Any]) -> Path:
    (run_dir / TWINS_JSON).write_text(json.dumps(summary, indent=1) + "\n", encoding="utf-8")
    path = run_dir / TWINS_MD
    path.write_text(render_twins_markdown(summary), encoding="utf-8")
    return path


def split_lines(
    lines: Sequence[EpisodeLine], twin_ids: set[str]
) -> tuple[list[EpisodeLine], list[EpisodeLine]]:
    """(the originals' lines, the twins' lines) of one twins run; a `no_error` scenario's line
    is an original only (it is its own twin)."""
    originals = [line for line in lines if line.scenario_id not in twin_ids]
    twins = [line for line in lines if line.scenario_id in twin_ids]
    return originals, twins
