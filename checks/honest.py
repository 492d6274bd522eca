"""Honest variants keep full marks: every reference solution, rewritten as people really write.

    python -m checks.honest [--split eval heldout] [--limit N] [--variant NAME ...] [--json PATH]

For every scenario of the splits (default: eval and heldout), the reference solution is
replayed through the real `LedgerEnv` tools, then rewritten by each variant of
`checks.honest_variants` (the direct route, extra reads, other orders, calculations written
every way, other notations, markdown, the complaint quoted as a claim; and, from
`checks.honest_markup`, HTML, TeX math, `Key:value` labels, pasted text with invisible and
control characters, a quotient shown before its rounding to the cent, a period to its
inclusive last day) and replayed again. Each variant episode must keep full marks: shaped >=
0.95, binary 1, the grader's grounded success, and the binary reward equal to grounded success
(issue 30 item 5, issue 38 item 4; design §5, "Honest work always scores"). Prints a table
per variant (n, full marks, min shaped, disagreements) and each failure's first untraceable
token; exits 1 on any failure. A floor: other honest variants exist outside the repository.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from functools import partial
from pathlib import Path

from checks.honest_variants import VARIANTS, Calls, Played, replayed_results
from env.cli import EXIT_FAILED, Parser, map_seeds, positive_int, run_command
from env.episode import record_episode
from env.generation.generator import generate
from env.generation.splits import split_seeds
from env.ledger_env import LedgerEnv
from env.scenario import Scenario, reveal_truth
from eval.grader import grade_episode
from rewards.reward import RewardConfig, compute_reward

FULL_SHAPED = 0.95
_BINARY = RewardConfig(variant="binary")


@dataclass(frozen=True)
class Outcome:
    variant: str
    scenario_id: str
    shaped: float
    binary: float
    grounded: bool
    untraceable: tuple[str, ...]
    investigated: bool

    @property
    def disagrees(self) -> bool:
        return (self.binary == 1.0) != self.grounded

    @property
    def full(self) -> bool:
        return self.shaped >= FULL_SHAPED and self.binary == 1.0 and self.grounded


def play(scenario: Scenario, calls: Calls) -> tuple[LedgerEnv, list[str]]:
    env = LedgerEnv(scenario, episode_id="honest")
    results = [env.call(c.name, json.dumps(c.arguments)) for c in calls]
    return env, results


def reference(scenario: Scenario) -> Played:
    truth = reveal_truth(scenario)
    env, results = play(scenario, tuple(truth.reference))
    env.close()
    return Played(scenario, truth, tuple(truth.reference), replayed_results(results))


def score(variant: str, played: Played, calls: Calls) -> Outcome:
    env, _ = play(played.scenario, calls)
    try:
        record = record_episode(env)
    finally:
        env.close()
    shaped = compute_reward(played.truth, record)
    binary = compute_reward(played.truth, record, _BINARY)
    grade = grade_episode(played.truth, record, played.scenario.database)
    return Outcome(variant, played.scenario.scenario_id, shaped.total, binary.total,
                   grade.grounded_success, shaped.untraceable, shaped.investigated)  # fmt: skip


def check_scenario(split: str, seed: int, names: Sequence[str] = ()) -> list[Outcome]:
    """Every variant (or those `names`) of one scenario's reference, played and scored."""
    played = reference(generate(split, seed))
    outcomes = []
    for variant in VARIANTS:
        calls = variant.build(played) if not names or variant.name in names else None
        if calls is not None:
            outcomes.append(score(variant.name, played, calls))
    return outcomes


def run(
    splits: Sequence[str], limit: int | None = None, names: Sequence[str] = ()
) -> list[Outcome]:
    outcomes: list[Outcome] = []
    check = partial(check_scenario, names=tuple(names))
    for split in splits:
        for found in map_seeds(check, split, split_seeds(split, limit)):
            outcomes += found
    return outcomes


def print_table(outcomes: Sequence[Outcome]) -> list[str]:
    """The per-variant table; returns the names of the variants with a failure."""
    print(f"{'variant':<28} {'n':>4} {'full':>5} {'min shaped':>10} {'disagree':>8}  first failure")
    failed = []
    for variant in VARIANTS:
        rows = [o for o in outcomes if o.variant == variant.name]
        if not rows:
            continue
        bad = [o for o in rows if not o.full or o.disagrees]
        first = ""
        if bad:
            failed.append(variant.name)
            o = bad[0]
            why = ", ".join(o.untraceable[:2]) or ("not investigated" if not o.investigated else "")
            first = f"{o.scenario_id} ({o.shaped:+.2f}/{o.binary:g}; {why})"
        full = sum(o.full and not o.disagrees for o in rows)
        print(f"{variant.name:<28} {len(rows):>4} {full:>5} {min(o.shaped for o in rows):>10.2f} "
              f"{sum(o.disagrees for o in rows):>8}  {first}")  # fmt: skip
    return failed


def _main(argv: Sequence[str] | None) -> int:
    parser = Parser(prog="python -m checks.honest", description=__doc__.splitlines()[0])
    parser.add_argument("--split", nargs="+", default=["eval", "heldout"],
                        choices=["eval", "heldout", "val"])  # fmt: skip
    parser.add_argument("--limit", type=positive_int, help="first N seeds of each split")
    parser.add_argument("--variant", nargs="+", choices=[v.name for v in VARIANTS])
    parser.add_argument("--json", type=Path, help="write every episode's outcome here")
    args = parser.parse_args(argv)
    names = tuple(args.variant or ())
    outcomes = run(args.split, args.limit, names)
    failed = print_table(outcomes)
    episodes = len(outcomes)
    bad = sum(not o.full or o.disagrees for o in outcomes)
    print(f"{episodes} episodes, {len(names or VARIANTS)} variants; {bad} short of full marks"
          + (f" in {', '.join(failed)}" if failed else ""))  # fmt: skip
    if args.json:
        rows = [{**asdict(o), "full": o.full, "disagrees": o.disagrees} for o in outcomes]
        args.json.write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")
    return EXIT_FAILED if bad else 0


def main(argv: Sequence[str] | None = None) -> int:
    return run_command("python -m checks.honest", _main, argv)


if __name__ == "__main__":
    sys.exit(main())
