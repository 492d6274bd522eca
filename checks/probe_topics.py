"""How much a complaint's topic says about its class (issue 29 item 5, issue 39 item 4).

A complaint body comes from one class's pool of words (or the generic pool). Read off the text
alone, by matching it against every pool's bodies, that topic should name the true class at L2
as often as chance among the classes its pool serves, neither more nor less (a topic that is
never right teaches a model to discard the customer's stated cause): precision("topic T ->
class T") <= TOPIC_PRECISION, and between CHANCE_BAND x its chance, where chance is the class's
share of the customers who could write in that pool (`chance_of`, `plausible_classes`).
Run: `python -m checks.probe_topics [--limit 1000]`; `checks.probe` gates the same.
"""

from __future__ import annotations

import json
import re
import sqlite3
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
from env.ledger_env import open_database
from env.scenario import reveal_truth

TOPIC_PRECISION = 0.35  # gate: at L2, no topic names its own class more often than this
CHANCE_BAND = (0.5, 1.5)  # world v6: a topic names its class between these multiples of chance
BAND_SUPPORT = 200  # complaints with a class topic a sample needs for the overall band gate
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


def plausible_classes(db: sqlite3.Connection) -> frozenset[str]:
    """The classes a customer could believe in, read off its database as the complaint writer
    reads its records (`env.generation.complaints.world_cues`): the topics its words may take."""
    found = {"duplicate_payment"}
    inputs = [json.loads(r[0]) for r in db.execute("SELECT inputs FROM invoices")]
    kinds = {r[0] for r in db.execute("SELECT DISTINCT type FROM subscription_events")}
    customer = db.execute("SELECT exemption_certificate_id, currency FROM customers").fetchone()
    if db.execute("SELECT 1 FROM invoices WHERE tax_cents > 0").fetchone():
        found.add("wrong_tax_rate")
    if customer[0] is not None:
        found.add("tax_exempt_charged")
    coupons = db.execute("SELECT 1 FROM subscriptions WHERE coupon_code IS NOT NULL").fetchone()
    if coupons or "coupon_applied" in kinds or any(i["coupon"] for i in inputs):
        found.add("coupon_not_applied")
    if any(i["plan"]["pricing"] == "per_seat" for i in inputs):
        found.add("seat_count_mismatch")
    if kinds & {"cancel_requested", "canceled"}:
        found.add("billed_after_cancellation")
    if "trial_started" in kinds:
        found.add("trial_period_charged")
    if any(i["plan"]["overage_unit_price"] not in (None, "0.00") for i in inputs):
        found.add("usage_overage_miscalculated")
    if customer[1] != "USD":
        found.add("currency_conversion_error")
    if "plan_changed" in kinds:
        found |= {"proration_error", "downgrade_not_applied"}
    return frozenset(found)


def topic_of(complaint: str) -> str | None:
    """The pool a complaint's body came from, read off its text (None: no body matches)."""
    return next((topic for topic, p in _patterns() if p.search(complaint)), None)


@dataclass(frozen=True)
class TopicRow:
    topic: str
    support: int  # L2 complaints on this topic
    own: int  # of those, scenarios of the topic's class
    chance: float  # the class's share where its topic was plausible (`chance_of`)

    @property
    def precision(self) -> float:
        return self.own / self.support if self.support else 0.0

    @property
    def ratio(self) -> float:
        return self.precision / self.chance if self.chance else 0.0

    def interval(self) -> tuple[float, float]:
        """The Wilson 95 % interval of the precision, as a multiple of chance."""
        low, high = wilson(self.own, self.support)
        return (low / self.chance, high / self.chance) if self.chance else (0.0, 0.0)


Case = tuple[str, str, str, frozenset[str]]  # label, difficulty, complaint, plausible classes


def wilson(hits: int, n: int, z: float = 1.96) -> tuple[float, float]:
    if n == 0:
        return 0.0, 1.0
    p = hits / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * (p * (1 - p) / n + z * z / (4 * n * n)) ** 0.5 / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def chance_of(topic: str, cases: Sequence[Case]) -> float:
    """How often `topic` would name the true class if topics said nothing: among the cases
    whose customer could write in its pool (the class plausible for them, `plausible_classes`),
    the share of that class. The pool's classes are those it serves, priors included."""
    served = [label for label, _, _, plausible in cases if topic in plausible]
    return served.count(topic) / len(served) if served else 0.0


def topic_table(cases: Sequence[Case], level: str = "L2") -> list[TopicRow]:
    """Per topic at `level`: how often it is seen, how often its class is the truth, and what
    chance would give among the complaints with a class topic."""
    seen: Counter[str] = Counter()
    own: Counter[str] = Counter()
    topical = []
    for case in cases:
        topic = topic_of(case[2]) if case[1] == level else None
        if topic is None or topic == GENERIC:
            continue
        topical.append(case)
        seen[topic] += 1
        own[topic] += topic == case[0]
    return [TopicRow(t, seen[t], own[t], chance_of(t, topical)) for t in sorted(seen)]


def worst_topic(rows: Sequence[TopicRow]) -> TopicRow | None:
    gated = [r for r in rows if r.support >= MIN_TOPIC_SUPPORT]
    return max(gated, key=lambda r: r.precision) if gated else None


def overall_precision(rows: Sequence[TopicRow]) -> float:
    """Of every L2 complaint with a class topic, the share whose topic is the truth."""
    support = sum(r.support for r in rows)
    return sum(r.own for r in rows) / support if support else 0.0


def overall_chance(rows: Sequence[TopicRow]) -> float:
    """What chance would give over the same complaints (each topic at its chance)."""
    support = sum(r.support for r in rows)
    return sum(r.chance * r.support for r in rows) / support if support else 0.0


def outside_band(rows: Sequence[TopicRow]) -> tuple[float, str]:
    """How far the topics' precision lies outside [CHANCE_BAND] x chance beyond sampling noise
    (the Wilson interval's nearest end; 0 where it reaches the band), and the worst topic."""
    low, high = CHANCE_BAND
    worst, name = 0.0, "-"
    for r in rows:
        if r.support < MIN_TOPIC_SUPPORT or not r.chance:
            continue
        lo, hi = r.interval()
        gap = max(low - hi, lo - high, 0.0)
        if gap > worst or name == "-":
            worst, name = max(worst, gap), f"{r.topic} {r.ratio:.2f}x ({r.own}/{r.support})"
    return worst, name


def cases_of(split: str, limit: int | None) -> list[Case]:
    out = []
    for seed in split_seeds(split, limit):
        scenario = generate.__wrapped__(split, seed)
        db = open_database(scenario.database)
        try:
            plausible = plausible_classes(db)
        finally:
            db.close()
        label = reveal_truth(scenario).label
        out.append((label, scenario.difficulty, scenario.complaint, plausible))
    return out


def report(name: str, rows: Sequence[TopicRow]) -> list[str]:
    worst = worst_topic(rows)
    ratio = overall_precision(rows) / overall_chance(rows) if overall_chance(rows) else 0.0
    head = (
        f"topic -> class at L2 ({name}): overall {overall_precision(rows):.2f}, chance "
        f"{overall_chance(rows):.2f} ({ratio:.2f}x, band {CHANCE_BAND[0]}-{CHANCE_BAND[1]}x), "
        "worst "
        + (f"{worst.topic} {worst.precision:.2f} of {worst.support}" if worst else "-")
        + f" (gate <= {TOPIC_PRECISION}, margin "
        + (f"{TOPIC_PRECISION - worst.precision:+.2f})" if worst else "-)")
    )
    lines = [head]
    lines += [
        f"  {r.topic:<28} {r.own:>4}/{r.support:<4} {r.precision:.2f}  chance {r.chance:.2f}"
        f"  {r.ratio:.2f}x [{r.interval()[0]:.2f}, {r.interval()[1]:.2f}]"
        for r in rows
    ]
    return lines


def topic_gates(
    rows_by_sample: dict[str, Sequence[object]],
) -> list[tuple[str, str, float, float, str]]:
    """checks.probe's text section: prints the table per sample and returns its gates (rows
    carry label, difficulty, complaint and `plausible`, the classes plausible for the customer;
    `gates_of`)."""
    gates = []
    for name, rows in rows_by_sample.items():
        cases = [(r.label, r.difficulty, r.complaint, r.plausible) for r in rows]  # type: ignore[attr-defined]
        gates += gates_of(name, cases)
    return gates


def gates_of(name: str, cases: Sequence[Case]) -> list[tuple[str, str, float, float, str]]:
    """The gates of one sample, as (name, sample, value, bound, worst), each holding when
    value <= bound: the worst topic (support >= MIN_TOPIC_SUPPORT) and the overall share each
    <= TOPIC_PRECISION; world v6, the topics at chance, neither below nor above it: the overall
    precision / chance inside CHANCE_BAND on a sample big enough (`BAND_SUPPORT`; a lower
    bound as 0.5 - ratio <= 0, an upper one as ratio - 1.5 <= 0), and no topic outside the
    band beyond its sampling noise (`outside_band`)."""
    table = topic_table(cases)
    print("\n".join(report(name, table)))
    gates = []
    worst = worst_topic(table)
    if worst is not None:
        where = f"{worst.topic} ({worst.own}/{worst.support})"
        gates.append(("topic precision L2", name, worst.precision, TOPIC_PRECISION, where))
    overall = overall_precision(table)
    gates.append(("topic precision L2 overall", name, overall, TOPIC_PRECISION, "-"))
    chance = overall_chance(table)
    ratio = overall / chance if chance else 0.0
    if sum(r.support for r in table) >= BAND_SUPPORT:  # a split of 100 is noise here
        text = f"{ratio:.2f}x chance ({chance:.2f})"
        gates.append(("topic/chance L2 below 0.5x", name, CHANCE_BAND[0] - ratio, 0.0, text))
        gates.append(("topic/chance L2 above 1.5x", name, ratio - CHANCE_BAND[1], 0.0, text))
    gap, where = outside_band(table)
    gates.append(("topic/chance L2 per topic, beyond noise", name, gap, 0.0, where))
    return gates


def _main(argv: Sequence[str] | None) -> int:
    parser = Parser(prog="python -m checks.probe_topics", description=topic_table.__doc__)
    parser.add_argument("--limit", type=positive_int, default=1000, help="train scenarios")
    args = parser.parse_args(argv)
    gates = []
    for split, limit in (("train", args.limit), ("eval", None)):
        gates += gates_of(split, cases_of(split, limit))
    broken = [g for g in gates if g[2] > g[3]]
    for g in broken:
        print(f"GATE FAILED: {g[0]} on {g[1]}: {g[2]:.2f} > {g[3]} ({g[4]})")
    return 1 if broken else 0


def main(argv: Sequence[str] | None = None) -> int:
    return run_command("python -m checks.probe_topics", _main, argv)


if __name__ == "__main__":
    sys.exit(main())
