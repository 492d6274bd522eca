"""How much a complaint's topic says about its class (issue 29 item 5, design §1.2).

A complaint body comes from one class's pool of words (or the generic pool). Read off the text
alone, by matching it against every pool's bodies, that topic should name the true class at L2
no more often than chance among the classes sharing the pool: precision("topic T -> class T")
<= TOPIC_PRECISION for every topic. Run: `python -m checks.probe_topics [--limit 1000]`.
"""

from __future__ import annotations

import re
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache

from env.cli import Parser, positive_int, run_command
from env.generation.builder import data
from env.generation.generator import generate
from env.generation.splits import split_seeds
from env.labels import ROOT_CAUSES
from env.scenario import reveal_truth

TOPIC_PRECISION = 0.35  # gate: at L2, no topic names its own class more often than this
MIN_TOPIC_SUPPORT = 10  # topics seen fewer times are listed, not gated
GENERIC = "generic"


@cache
def _patterns() -> tuple[tuple[str, re.Pattern[str]], ...]:
    """(topic, pattern) for every body of every pool, longest first (a short body may be
    the head of a longer one)."""
    found = []
    for topic in [*ROOT_CAUSES, GENERIC]:
        try:
            pools = data(f"complaints/{topic}.json")
        except FileNotFoundError:
            continue
        for levels in pools.values():
            for texts in levels.values():
                for body in texts:
                    pieces = re.split(r"\{[a-z_]+\}", body)
                    found.append((topic, re.compile(".+?".join(map(re.escape, pieces)))))
    return tuple(sorted(found, key=lambda tp: -len(tp[1].pattern)))


def topic_of(complaint: str) -> str | None:
    """The pool a complaint's body came from, read off its text (None: no body matches)."""
    return next((topic for topic, p in _patterns() if p.search(complaint)), None)


@dataclass(frozen=True)
class TopicRow:
    topic: str
    support: int  # L2 complaints on this topic
    own: int  # of those, scenarios of the topic's class

    @property
    def precision(self) -> float:
        return self.own / self.support if self.support else 0.0


def topic_table(pairs: Sequence[tuple[str, str, str]], level: str = "L2") -> list[TopicRow]:
    """Per topic at `level`: how often it is seen and how often its class is the truth.
    `pairs`: (label, difficulty, complaint) per scenario."""
    seen: Counter[str] = Counter()
    own: Counter[str] = Counter()
    for label, difficulty, complaint in pairs:
        topic = topic_of(complaint) if difficulty == level else None
        if topic is None or topic == GENERIC:
            continue
        seen[topic] += 1
        own[topic] += topic == label
    return [TopicRow(t, seen[t], own[t]) for t in sorted(seen)]


def worst_topic(rows: Sequence[TopicRow]) -> TopicRow | None:
    gated = [r for r in rows if r.support >= MIN_TOPIC_SUPPORT]
    return max(gated, key=lambda r: r.precision) if gated else None


def overall_precision(rows: Sequence[TopicRow]) -> float:
    """Of every L2 complaint with a class topic, the share whose topic is the truth."""
    support = sum(r.support for r in rows)
    return sum(r.own for r in rows) / support if support else 0.0


def pairs_of(split: str, limit: int | None) -> list[tuple[str, str, str]]:
    out = []
    for seed in split_seeds(split, limit):
        scenario = generate.__wrapped__(split, seed)
        out.append((reveal_truth(scenario).label, scenario.difficulty, scenario.complaint))
    return out


def report(name: str, rows: Sequence[TopicRow]) -> list[str]:
    worst = worst_topic(rows)
    head = (
        f"topic -> class at L2 ({name}): overall {overall_precision(rows):.2f}, worst "
        + (f"{worst.topic} {worst.precision:.2f} of {worst.support}" if worst else "-")
        + f" (gate <= {TOPIC_PRECISION}, margin "
        + (f"{TOPIC_PRECISION - worst.precision:+.2f})" if worst else "-)")
    )
    lines = [head]
    lines += [f"  {r.topic:<28} {r.own:>4}/{r.support:<4} {r.precision:.2f}" for r in rows]
    return lines


def topic_gates(
    rows_by_sample: dict[str, Sequence[object]],
) -> list[tuple[str, str, float, float, str]]:
    """checks.probe's text section: prints the table per sample and returns its gates as
    (name, sample, value, bound, worst): the worst topic (support >= MIN_TOPIC_SUPPORT) and
    the overall share, each <= TOPIC_PRECISION. Rows carry label, difficulty, complaint."""
    gates = []
    for name, rows in rows_by_sample.items():
        pairs = [(r.label, r.difficulty, r.complaint) for r in rows]  # type: ignore[attr-defined]
        table = topic_table(pairs)
        print("\n".join(report(name, table)))
        worst = worst_topic(table)
        if worst is not None:
            where = f"{worst.topic} ({worst.own}/{worst.support})"
            gates.append(("topic precision L2", name, worst.precision, TOPIC_PRECISION, where))
        overall = overall_precision(table)
        gates.append(("topic precision L2 overall", name, overall, TOPIC_PRECISION, "-"))
    return gates


def _main(argv: Sequence[str] | None) -> int:
    parser = Parser(prog="python -m checks.probe_topics", description=topic_table.__doc__)
    parser.add_argument("--limit", type=positive_int, default=1000, help="train scenarios")
    args = parser.parse_args(argv)
    worst = 0.0
    for split, limit in (("train", args.limit), ("eval", None)):
        rows = topic_table(pairs_of(split, limit))
        print("\n".join(report(split, rows)))
        top = worst_topic(rows)
        worst = max(worst, top.precision if top else 0.0)
    return 0 if worst <= TOPIC_PRECISION else 1


def main(argv: Sequence[str] | None = None) -> int:
    return run_command("python -m checks.probe_topics", _main, argv)


if __name__ == "__main__":
    sys.exit(main())
