"""Replays each scenario's reference solution and checks the end state against its truth, and
checks the world's invariants (`checks.invariants`, design §1.1) on its initial database.

A scenario its own reference cannot solve is a generator bug, so every split must pass whole:
credits, findings, no tool error, every overcharge shown by a read tool, a grounded success
under the reward (every number in the summary traceable), nothing else written.
Run: `python -m checks.validate --split eval` (or val, heldout; `--split train --limit 2000`;
`--split eval-twins` also diffs each twin against its scenario, `checks.twin_diff`).
Prints each failure with its reasons, then `passed/total`; exits 1 on any failure.
"""

from __future__ import annotations

import json
import re
import sqlite3
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal

from checks.invariants import world_problems
from checks.realism import CHECKS as REALISM
from checks.realism import realism_problems
from checks.twin_diff import twin_problems
from env.cli import EXIT_FAILED, Parser, UsageError, map_seeds, positive_int, run_command
from env.engine.money import format_cents
from env.episode import drafted_credits, record_episode
from env.generation.generator import generate
from env.generation.splits import SPLITS, TWIN_SPLITS, split_assignment, split_seeds
from env.ledger_env import LedgerEnv, open_database
from env.scenario import Scenario, reveal_truth
from env.tools import READ_TOOLS
from rewards.derived import calculations
from rewards.reward import compute_reward

EPISODE_ID = "validate"


@dataclass(frozen=True)
class ScenarioCheck:
    split: str
    seed: int
    label: str
    problems: tuple[str, ...]
    realism: tuple[str, ...] = ()  # the realism checks (`checks.realism`) this world breaks

    @property
    def ok(self) -> bool:
        return not self.problems


def table_contents(connection: sqlite3.Connection) -> dict[str, str]:
    """Each table's rows in storage order, as text that tells 1 from 1.0 and '1'."""
    names = [
        row[0]
        for row in connection.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name"
        )
    ]
    schema = connection.execute("SELECT * FROM sqlite_master ORDER BY name").fetchall()
    contents = {"sqlite_master": repr([tuple(row) for row in schema])}
    for name in names:
        rows = connection.execute(f'SELECT * FROM "{name}"').fetchall()
        contents[name] = repr([tuple(row) for row in rows])
    return contents


def untouched_problems(initial: bytes, final: bytes) -> list[str]:
    """Everything but credit_notes is unchanged, and credit_notes only gained this episode's."""
    before, after = open_database(initial), open_database(final)
    try:
        old, new = table_contents(before), table_contents(after)
        problems = [
            f"table {name} changed during the replay"
            for name in sorted(old.keys() | new.keys())
            if name != "credit_notes" and old.get(name) != new.get(name)
        ]
        kept = after.execute(
            "SELECT * FROM credit_notes WHERE episode_id IS NOT ? ORDER BY rowid", (EPISODE_ID,)
        ).fetchall()
        original = before.execute("SELECT * FROM credit_notes ORDER BY rowid").fetchall()
        if [tuple(r) for r in kept] != [tuple(r) for r in original]:
            problems.append("credit notes not drafted by this episode were added or changed")
    finally:
        before.close()
        after.close()
    return problems


def check_scenario(scenario: Scenario) -> list[str]:
    """The reasons `scenario` is unsound: its reference replay falls short, its world breaks
    an invariant of design §1.1 or a realism check. Empty when it is sound."""
    realism = [f"realism {name}: {line}" for name, lines in realistic(scenario) for line in lines]
    return replay_problems(scenario) + invariant_problems(scenario) + realism


def realistic(scenario: Scenario) -> list[tuple[str, list[str]]]:
    """Each realism check (`checks.realism`) with what it reports on the scenario's world. A
    counterfactual twin keeps its scenario's dispute: its window is the scenario's."""
    connection = open_database(scenario.database)
    try:
        found = realism_problems(connection)
    finally:
        connection.close()
    if scenario.split in TWIN_SPLITS or "-twin-" in scenario.scenario_id:
        found.pop("dispute_window")
    return list(found.items())


def replay_problems(scenario: Scenario) -> list[str]:
    """The reasons the reference replay of `scenario` falls short; empty when it is sound."""
    truth = reveal_truth(scenario)
    env = LedgerEnv(scenario, episode_id=EPISODE_ID)  # the budget an agent gets
    try:
        for step in truth.reference:
            env.call(step.name, json.dumps(step.arguments))
        log, findings = env.tool_log, env.findings
        final = env.final_database()
        scored = compute_reward(truth, record_episode(env))
    finally:
        env.close()
    problems = []
    if len(truth.reference) > env.tool_budget:
        problems.append(f"reference has {len(truth.reference)} calls, budget {env.tool_budget}")
    problems += [
        f"tool error at call {n + 1} ({r.name}): {json.loads(r.result).get('error', r.result)}"
        for n, r in enumerate(log)
        if r.is_error
    ]
    credits = drafted_credits(final, EPISODE_ID)
    if credits != truth.expected_credits:
        problems.append(f"credits {_money(credits)} != expected {_money(truth.expected_credits)}")
    if findings is None:
        problems.append("the reference never submitted findings")
    else:
        if findings.root_cause != truth.label:
            problems.append(f"findings label {findings.root_cause} != truth {truth.label}")
        reported = {item.invoice_id: item.overcharge_cents for item in findings.affected_invoices}
        if reported != truth.overcharges:
            problems.append(f"findings {_money(reported)} != truth {_money(truth.overcharges)}")
    # evidence is what the read tools showed: a credit note only echoes the amount it was given
    shown = "\n".join(r.result for r in log if r.name in READ_TOOLS and not r.is_error)
    derived = derived_amounts(findings.summary if findings else "", shown)
    for invoice, cents in truth.overcharges.items():
        amount = format_cents(cents)
        if not shows_amount(shown, amount) and amount not in derived:
            problems.append(f"overcharge {amount} of {invoice} is in no tool output")
    if findings is not None and not scored.grounded:  # full marks need every number traceable
        untraceable = ", ".join(scored.untraceable) or "none"
        problems.append(f"the reference is not a grounded success (untraceable: {untraceable})")
    problems += untouched_problems(scenario.database, final)
    return problems


def invariant_problems(scenario: Scenario) -> list[str]:
    """Design §1.1 on the initial database: the only deviation from the rules is the fault."""
    connection = open_database(scenario.database)
    try:
        faulted = set(reveal_truth(scenario).overcharges)
        return [f"world: {p}" for p in world_problems(connection, faulted)]
    finally:
        connection.close()


def derived_amounts(summary: str, shown: str) -> set[str]:
    """Results of the summary's right `a - b` / `a + b` calculations whose operands the read
    tools showed (rewards/README.md G10: an amount no tool prints, derived in one step)."""
    return {
        f"{Decimal(c.result.value):.2f}"
        for c in calculations(summary)
        if c.holds
        and c.op in ("+", "-")
        and all(shows_amount(shown, f"{Decimal(t.value):.2f}") for t in (c.left, c.right))
    }


def shows_amount(text: str, amount: str) -> bool:
    """ "12.40" as a whole number in `text`: not the tail of "112.40" nor the head of "12.405"."""
    return re.search(rf"(?<![\d.]){re.escape(amount)}(?![\d])", text) is not None


def _money(amounts: dict[str, int]) -> str:
    return "{" + ", ".join(f"{k}: {format_cents(v)}" for k, v in sorted(amounts.items())) + "}"


def validate_seed(split: str, seed: int) -> ScenarioCheck:
    label = split_assignment(split, seed).label
    try:
        scenario = generate.__wrapped__(split, seed)  # uncached: a long run must not hoard
    except Exception as exc:  # a builder bug is a failure to report, not the end of the run
        return ScenarioCheck(split, seed, label, (f"generation failed: {exc!r}",))
    problems = tuple(check_scenario(scenario))
    if split in TWIN_SPLITS:  # the twin against its scenario: only the fault's records moved
        original = generate.__wrapped__(TWIN_SPLITS[split], seed)
        problems += tuple(f"twin: {p}" for p in twin_problems(original, scenario))
    broken = tuple(p.split(":", 1)[0].removeprefix("realism ") for p in problems)
    return ScenarioCheck(split, seed, label, problems, tuple(n for n in REALISM if n in broken))


def validate_split(split: str, limit: int | None = None) -> list[ScenarioCheck]:
    return map_seeds(validate_seed, split, split_seeds(split, limit))


def _main(argv: Sequence[str] | None) -> int:
    parser = Parser(prog="python -m checks.validate", description=__doc__.splitlines()[0])
    parser.add_argument("--split", required=True, choices=list(SPLITS))
    parser.add_argument("--limit", type=positive_int, help="first N seeds (required for train)")
    args = parser.parse_args(argv)
    if SPLITS[args.split].size is None and args.limit is None:
        raise UsageError(f"split {args.split!r} is open-ended: pass --limit N")
    checks = validate_split(args.split, args.limit)
    failed = [c for c in checks if not c.ok]
    for check in failed:
        print(f"FAIL {check.split} seed {check.seed} ({check.label}):")
        for problem in check.problems:
            print(f"  - {problem}")
    counts = ", ".join(f"{name} {sum(name in c.realism for c in checks)}" for name in REALISM)
    print(f"realism (scenarios breaking each check): {counts}")
    print(f"{len(checks) - len(failed)}/{len(checks)}")
    return EXIT_FAILED if failed else 0


def main(argv: Sequence[str] | None = None) -> int:
    return run_command("python -m checks.validate", _main, argv)


if __name__ == "__main__":
    sys.exit(main())
