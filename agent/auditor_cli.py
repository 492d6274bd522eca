"""Grades the auditor on a split: success per root cause, per difficulty, overall.

Success = right label, the exact invoice -> overcharge map, and credits drafted equal to the
truth. The truth is read here, after each episode, never by the program (`agent.auditor`).
Run: `python -m agent.auditor [--split eval] [--limit N] [--workers W]`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass

from agent.auditor import auditor_program
from env.cli import Parser, map_seeds, positive_int, run
from env.episode import EpisodeRecord, drafted_credits, record_episode
from env.generator import generate
from env.labels import DIFFICULTIES, ROOT_CAUSES
from env.ledger_env import DEFAULT_TOOL_BUDGET, LedgerEnv
from env.scenario import Scenario, ToolCall, reveal_truth
from env.splits import SPLITS, split_seeds

Program = Callable[[Scenario], Generator[ToolCall, str, None]]


@dataclass(frozen=True)
class AuditRow:
    label: str
    difficulty: str
    success: bool
    label_correct: bool
    false_reversal: bool
    submitted: bool
    tool_calls: int


def run_program(
    program: Program, scenario: Scenario, budget: int = DEFAULT_TOOL_BUDGET
) -> EpisodeRecord:
    """Drives a program through one episode, the same calls `ProgramPolicy` would make."""
    env = LedgerEnv(scenario, tool_budget=budget)
    try:
        steps = program(scenario)
        try:
            step = next(steps)
            while not env.done:
                step = steps.send(env.call(step.name, json.dumps(step.arguments)))
        except StopIteration:
            pass
        return record_episode(env)
    finally:
        env.close()


def grade(scenario: Scenario, record: EpisodeRecord) -> AuditRow:
    truth = reveal_truth(scenario)
    findings = record.findings
    reported = {} if findings is None else {
        item.invoice_id: item.overcharge_cents for item in findings.affected_invoices
    }  # fmt: skip
    credits = drafted_credits(record.final_database, record.episode_id)
    label_correct = findings is not None and findings.root_cause == truth.label
    return AuditRow(
        label=truth.label,
        difficulty=scenario.difficulty,
        success=label_correct
        and reported == truth.overcharges
        and credits == truth.expected_credits,
        label_correct=label_correct,
        false_reversal=any(c > truth.overcharges.get(i, 0) for i, c in credits.items()),
        submitted=findings is not None,
        tool_calls=record.tool_calls,
    )


def audit_seed(split: str, seed: int) -> AuditRow:
    scenario = generate(split, seed)
    return grade(scenario, run_program(auditor_program, scenario))


def _line(name: str, rows: list[AuditRow]) -> str:
    n = len(rows)
    success = sum(r.success for r in rows)
    label = sum(r.label_correct for r in rows)
    reversals = sum(r.false_reversal for r in rows)
    return f"| {name} | {n} | {success}/{n} ({success / n:.0%}) | {label}/{n} | {reversals} |"


def table(split: str, rows: list[AuditRow]) -> str:
    head = [
        f"auditor on {split} ({len(rows)} scenarios)",
        "",
        "| group | n | success | label right | false reversals |",
        "|---|---|---|---|---|",
    ]
    groups = [(x, [r for r in rows if r.label == x]) for x in ROOT_CAUSES]
    groups += [(x, [r for r in rows if r.difficulty == x]) for x in DIFFICULTIES]
    body = [_line(name, group) for name, group in groups if group]
    body.append(_line("**overall**", rows))
    calls = sum(r.tool_calls for r in rows) / len(rows)
    unsubmitted = sum(not r.submitted for r in rows)
    tail = ["", f"mean tool calls {calls:.1f}; episodes without a submission: {unsubmitted}"]
    return "\n".join(head + body + tail)


def _main(argv: Sequence[str] | None) -> int:
    parser = Parser(prog="python -m agent.auditor", description=__doc__)
    parser.add_argument("--split", default="eval", choices=sorted(SPLITS))
    parser.add_argument("--limit", type=positive_int, help="first N seeds (needed for train)")
    parser.add_argument("--workers", type=positive_int, help="processes (default: all cores)")
    args = parser.parse_args(argv)
    try:
        seeds = split_seeds(args.split, args.limit)
    except ValueError as exc:
        parser.error(str(exc))
    rows = map_seeds(audit_seed, args.split, seeds, args.workers)
    print(table(args.split, rows))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    return run("python -m agent.auditor", _main, argv)
