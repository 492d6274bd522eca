"""The difficulty ladder: what each depth of investigation scores, i.e. what a model should score.

    python -m eval.ladder                         # eval + heldout (+ eval-twins where it exists)
    python -m eval.ladder --limit 30 --out results/ladder    # ladder.json + ladder.md

Plays every rung of `agent.ladder.LADDER` (scripted policies that use only the tools, from a
complaint-only guess to the auditor and the auditor without credit notes) on each split with
`eval.run.evaluate`, graded by `eval.grader` like any model, k = 1 (the rungs are deterministic).
Reports pass^1 per level and per class with 95% percentile-bootstrap intervals, false reversals
with Wilson intervals (`eval.stats`), and, on `no_error` scenarios, how often a rung credited
anyway and what it scored on those. `eval-twins` (each eval scenario with its fault's wrong input
set right, labelled `no_error`) is played when `env.generation.splits` has it, with its classes
read as the class of the eval scenario each twin comes from; otherwise the table says so.
Tests: `pytest tests/eval/test_ladder.py`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from agent.ladder import LADDER
from agent.program_policy import ladder_policy
from env.cli import Parser, UsageError, positive_int, run_command
from env.generation.generator import generate
from env.generation.splits import SPLITS, split_seeds
from env.labels import DIFFICULTIES, ROOT_CAUSES
from env.scenario import Scenario, reveal_truth
from eval.episode_log import EPISODES, EpisodeLine, read_episodes
from eval.stats import Interval, bootstrap_ci, wilson_interval

TWINS = "eval-twins"
DEFAULT_SPLITS = ("eval", "heldout", TWINS)
LADDER_JSON, LADDER_MD = "ladder.json", "ladder.md"
RUNG_NAMES = tuple(rung.name for rung in LADDER)
TWINS_ABSENT = (
    f"`{TWINS}` is not a split of this checkout (env.generation.splits.SPLITS): twins skipped; "
    "the `no_error` columns are eval's own no_error scenarios"
)


@dataclass(frozen=True)
class Played:
    """One rung's graded episodes on one split; `classes`: scenario id -> the class it is
    tallied under (its label; for a twin, the label of the eval scenario it comes from)."""

    rung: str
    split: str
    lines: tuple[EpisodeLine, ...]
    classes: dict[str, str]


def scenarios_of(split: str, limit: int | None) -> list[Scenario]:
    return [generate(split, seed) for seed in split_seeds(split, limit)]


def twin_classes(twins: Sequence[Scenario]) -> dict[str, str]:
    """A twin's class: the label of the eval scenario with its seed (the twin is `no_error`);
    a twin whose seed is not eval's keeps its own label."""
    eval_seeds = set(split_seeds("eval"))
    return {
        t.scenario_id: reveal_truth(generate("eval", t.seed)).label
        if t.seed in eval_seeds
        else reveal_truth(t).label
        for t in twins
    }


def play(
    rung: str, split: str, scenarios: Sequence[Scenario], run_dir: Path, *, concurrency: int = 4
) -> list[EpisodeLine]:
    """`eval.run.evaluate` with the rung's policy, k = 1; the episode lines it recorded."""
    from env.versions import generator_hash, tool_contract_hash
    from eval.run import evaluate

    config = {
        "model": rung,
        "kind": "program",
        "split": split,
        "k": 1,
        "scenarios": len(scenarios),
        "tool_contract": tool_contract_hash(),
        "generator": generator_hash(),
    }
    asyncio.run(
        evaluate(
            ladder_policy(rung),
            scenarios,
            k=1,
            run_dir=run_dir,
            config=config,
            concurrency=concurrency,
            keep_transcript=False,
            label=f"ladder: {rung} on {split}",
            leave_bar=False,  # fifteen finished bars would only push the table off the screen
        )
    )
    return read_episodes(run_dir / EPISODES)


# measuring ------------------------------------------------------------------------------------


def _cell(value: Interval | None, n: int) -> dict[str, Any]:
    if value is None:
        return {"n": n, "estimate": None, "low": None, "high": None}
    return {"n": n, "estimate": value.estimate, "low": value.low, "high": value.high}


def _pass1(lines: Sequence[EpisodeLine], seed: int) -> dict[str, Any]:
    if not lines:
        return _cell(None, 0)
    return _cell(bootstrap_ci([[line.success] for line in lines], 1, seed=seed), len(lines))


def _rate(count: int, total: int) -> dict[str, Any]:
    return {"count": count, **_cell(wilson_interval(count, total) if total else None, total)}


def credited(line: EpisodeLine) -> bool:
    """Whether the episode drafted any credit (the grader's per-invoice credits)."""
    return bool((line.grade or {}).get("credits"))


def _label_right(line: EpisodeLine) -> bool:
    return bool((line.grade or {}).get("label_correct"))


def measure(played: Played, seed: int = 0) -> dict[str, Any]:
    """pass^1 overall, per level and per class; false reversals; on no_error scenarios, the
    share credited anyway and pass^1 on those."""
    lines = list(played.lines)
    levels: dict[str, list[EpisodeLine]] = defaultdict(list)
    classes: dict[str, list[EpisodeLine]] = defaultdict(list)
    for line in lines:
        levels[line.difficulty].append(line)
        classes[played.classes.get(line.scenario_id, line.label)].append(line)
    no_error = [line for line in lines if line.label == "no_error"]
    wrongly = [line for line in no_error if credited(line)]
    order = [c for c in ROOT_CAUSES if c in classes] + sorted(set(classes) - set(ROOT_CAUSES))
    return {
        "rung": played.rung,
        "split": played.split,
        "pass1": _pass1(lines, seed),
        "by_level": {level: _pass1(levels[level], seed) for level in DIFFICULTIES},
        "by_class": {name: _pass1(classes[name], seed) for name in order},
        "false_reversal": _rate(
            sum(bool((line.grade or {}).get("false_reversal")) for line in lines), len(lines)
        ),
        "label_right_by_level": {
            level: _rate(sum(_label_right(line) for line in levels[level]), len(levels[level]))
            for level in DIFFICULTIES
        },
        "no_error_credited": _rate(len(wrongly), len(no_error)),
        "pass1_where_no_error_credited": _pass1(wrongly, seed),
        "mean_tool_calls": sum(line.tool_calls for line in lines) / len(lines) if lines else None,
    }


def ladder(
    splits: Sequence[str],
    *,
    limit: int | None = None,
    seed: int = 0,
    concurrency: int = 4,
    rungs: Sequence[str] = RUNG_NAMES,
) -> dict[str, Any]:
    """Plays `rungs` on `splits` (an absent `eval-twins` is skipped with a note)."""
    notes: list[str] = []
    if TWINS in splits and TWINS not in SPLITS:
        notes.append(TWINS_ABSENT)
    present = [s for s in splits if s in SPLITS]
    results: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="ladder-") as tmp:
        for split in present:
            scenarios = scenarios_of(split, limit)
            classes = twin_classes(scenarios) if split == TWINS else {}
            results[split] = {}
            for rung in rungs:
                run_dir = Path(tmp) / f"{rung}-{split}"
                lines = play(rung, split, scenarios, run_dir, concurrency=concurrency)
                results[split][rung] = measure(Played(rung, split, tuple(lines), classes), seed)
    from env.versions import generator_hash, tool_contract_hash
    from eval.run import git_commit
    from ledgergym import __version__

    return {
        "stamp": {
            "ledgergym_version": __version__,
            "commit": git_commit(),
            "generator": generator_hash(),
            "tool_contract": tool_contract_hash(),
            "date": datetime.now(UTC).isoformat(timespec="seconds"),
            "limit": limit,
            "seed": seed,
        },
        "rungs": [{"name": r.name, "depth": r.depth} for r in LADDER if r.name in rungs],
        "splits": results,
        "notes": notes,
    }


# rendering ------------------------------------------------------------------------------------


def _fmt(cell: dict[str, Any] | None) -> str:
    if not cell or cell.get("estimate") is None:
        return "–"
    return f"{cell['estimate']:.2f} [{cell['low']:.2f}, {cell['high']:.2f}]"


def _count(rate: dict[str, Any]) -> str:
    return f"{rate['count']}/{rate['n']}" if rate["n"] else "–"


def render_markdown(report: dict[str, Any]) -> str:
    """The ladder table (levels of eval, or of the first split played when eval was not),
    then a per-class table for eval and for the twins."""
    splits, stamp = report["splits"], report["stamp"]
    main = "eval" if "eval" in splits else next(iter(splits), "eval")
    extra = [s for s in ("heldout", TWINS) if s in splits and s != main]
    head = ["rung", "depth", f"{main} pass^1", *DIFFICULTIES]
    for split in extra:
        head += [f"{split} pass^1"] + (["twins credited"] if split == TWINS else [])
    head += ["label right L1 · L2 · L3", f"{main} false reversals"]
    head += [f"{main} no_error credited (pass^1 there)", "calls"]
    rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for rung in report["rungs"]:
        name = rung["name"]
        block = splits.get(main, {}).get(name)
        if block is None:
            continue
        cells = [f"`{name}`", rung["depth"], _fmt(block["pass1"])]
        cells += [_fmt(block["by_level"][level]) for level in DIFFICULTIES]
        for split in extra:
            other = splits[split][name]
            cells.append(_fmt(other["pass1"]))
            if split == TWINS:
                cells.append(_count(other["no_error_credited"]))
        wrong = block["pass1_where_no_error_credited"]
        where = f" ({wrong['estimate']:.2f})" if wrong["n"] else ""
        calls = block["mean_tool_calls"]
        labels = block["label_right_by_level"]
        cells += [
            " · ".join(_count(labels[level]) for level in DIFFICULTIES),
            f"{_fmt(block['false_reversal'])} ({_count(block['false_reversal'])})",
            _count(block["no_error_credited"]) + where,
            "–" if calls is None else f"{calls:.1f}",
        ]
        rows.append("| " + " | ".join(cells) + " |")
    lines = [
        "# Difficulty ladder: what each depth of investigation scores",
        "",
        f"LedgerGym {stamp['ledgergym_version']}, commit {stamp['commit']}, generator "
        f"{stamp['generator']}, tool contract {stamp['tool_contract']}, {stamp['date']}"
        + (f", first {stamp['limit']} scenarios per split" if stamp.get("limit") else "")
        + ". k = 1 (deterministic rungs); pass^1 with 95% percentile-bootstrap intervals over "
        "scenarios, false reversals with Wilson intervals.",
        "",
        *rows,
        "",
    ]
    for split in ("eval", TWINS):
        if split in splits:
            lines += _class_table(report, split)
    lines += [f"Note: {note}." for note in report["notes"]]
    return "\n".join(lines).rstrip() + "\n"


def _class_table(report: dict[str, Any], split: str) -> list[str]:
    names = [r["name"] for r in report["rungs"] if r["name"] in report["splits"][split]]
    blocks = report["splits"][split]
    classes = list(blocks[names[0]]["by_class"]) if names else []
    what = "class (of the eval scenario twinned)" if split == TWINS else "class"
    rows = [
        f"## {split}: pass^1 per class",
        "",
        f"| {what} | n | " + " | ".join(f"`{n}`" for n in names) + " |",
        "|---|---:|" + "---|" * len(names),
    ]
    for name in classes:
        n = blocks[names[0]]["by_class"][name]["n"]
        cells = [_fmt(blocks[rung]["by_class"][name]) for rung in names]
        rows.append(f"| {name} | {n} | " + " | ".join(cells) + " |")
    return [*rows, ""]


# the command ----------------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = Parser(prog="python -m eval.ladder", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--splits",
        nargs="+",
        default=list(DEFAULT_SPLITS),
        help=f"splits to play (default: {' '.join(DEFAULT_SPLITS)}; {TWINS} only where it exists)",
    )
    parser.add_argument("--limit", type=positive_int, help="only the first N scenarios of each")
    parser.add_argument("--out", type=Path, help=f"directory for {LADDER_JSON} and {LADDER_MD}")
    parser.add_argument("--seed", type=int, default=0, help="seed of the bootstrap intervals")
    parser.add_argument("--concurrency", type=positive_int, default=4, help="episodes in flight")
    return parser.parse_args(argv)


def _main(argv: Sequence[str] | None) -> int:
    args = parse_args(argv)
    unknown = [s for s in args.splits if s not in SPLITS and s != TWINS]
    if unknown:
        raise UsageError(f"unknown split {unknown[0]!r}; choose from {', '.join(SPLITS)}")
    if not any(s in SPLITS for s in args.splits):
        raise UsageError(f"none of {', '.join(args.splits)} is a split of this checkout")
    if args.limit is not None:
        from eval.run import limit_note

        for split in (s for s in args.splits if s in SPLITS):
            if (size := len(split_seeds(split, args.limit))) < args.limit:
                print(limit_note(split, args.limit, size), file=sys.stderr)
    report = ladder(args.splits, limit=args.limit, seed=args.seed, concurrency=args.concurrency)
    markdown = render_markdown(report)
    print(markdown, end="")
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / LADDER_JSON).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
        (args.out / LADDER_MD).write_text(markdown, encoding="utf-8")
        print(f"written: {args.out / LADDER_JSON}, {args.out / LADDER_MD}", file=sys.stderr)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    return run_command("python -m eval.ladder", _main, argv)


if __name__ == "__main__":
    sys.exit(main())
