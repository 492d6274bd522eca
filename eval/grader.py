"""The evaluation grader (design §6): did the episode leave the books right and report them right?

Separate code from the training reward on purpose (it imports nothing from `rewards/`): it judges
from the database diff between the scenario's initial image and the episode's final image, and
from the submitted findings, never from what the agent says it did. Its hallucination check is
deliberately simpler than `rewards.provenance`. Tests: `pytest tests/eval/test_grader.py`.
"""

from __future__ import annotations

import re
import sqlite3
from collections import Counter
from dataclasses import dataclass

from env.episode import EpisodeRecord
from env.findings import Findings
from env.ledger_env import open_database
from env.scenario import Truth

# tools whose output repeats the agent's own arguments back: never evidence for its findings
_ECHO_TOOLS = frozenset({"draft_credit_note", "submit_findings"})
_INVOICE_ID = re.compile(r"INV-[0-9A-Z]+")
_AMOUNT = re.compile(r"(?<![\d.])\d+\.\d{2}(?![\d.])")  # two decimals, as every tool prints money

Row = tuple[object, ...]


@dataclass(frozen=True)
class EpisodeGrade:
    success: bool
    submitted: bool
    truncated: bool
    reported_label: str | None
    label_correct: bool
    invoices_correct: bool  # the reported invoice set equals the true set
    amounts_correct: bool  # and every reported amount is exact to the cent
    credits_correct: bool  # credits added this episode equal the expected credits per invoice
    database_clean: bool  # only credit_notes changed, only by this episode's draft notes
    false_reversal: bool
    hallucinated_numbers: bool
    tool_calls: int
    credits: dict[str, int]  # cents credited per invoice by rows added in this episode
    over_credited: dict[str, int]  # cents beyond the true overcharge, per invoice
    untraceable: tuple[str, ...]  # invoice ids and amounts of the findings no tool output showed
    changed_tables: tuple[str, ...]


@dataclass(frozen=True)
class _Diff:
    changed_tables: tuple[str, ...]  # tables other than credit_notes whose rows differ
    added_notes: tuple[Row, ...]
    removed_notes: tuple[Row, ...]


def _tables(connection: sqlite3.Connection) -> dict[str, list[str]]:
    names = connection.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name"
    ).fetchall()
    return {
        row[0]: [col[1] for col in connection.execute(f'PRAGMA table_info("{row[0]}")')]
        for row in names
    }


def _rows(connection: sqlite3.Connection, table: str) -> Counter[Row]:
    return Counter(tuple(row) for row in connection.execute(f'SELECT * FROM "{table}"'))


def _diff(initial: bytes, final: bytes) -> _Diff:
    before, after = open_database(initial), open_database(final)
    try:
        tables_before, tables_after = _tables(before), _tables(after)
        changed = {name for name in tables_before.keys() ^ tables_after.keys()}
        added: Counter[Row] = Counter()
        removed: Counter[Row] = Counter()
        for name in tables_before.keys() & tables_after.keys():
            if tables_before[name] != tables_after[name]:
                changed.add(name)
                continue
            rows_before, rows_after = _rows(before, name), _rows(after, name)
            if name == "credit_notes":
                added, removed = rows_after - rows_before, rows_before - rows_after
            elif rows_before != rows_after:
                changed.add(name)
        if "credit_notes" not in tables_after:
            changed.add("credit_notes")
        columns = tables_after.get("credit_notes", [])
        if columns and columns[:3] != ["id", "invoice_id", "amount_cents"]:
            changed.add("credit_notes")  # a schema the credit arithmetic below cannot read
    finally:
        before.close()
        after.close()
    return _Diff(tuple(sorted(changed)), tuple(added.elements()), tuple(removed.elements()))


def _credits(notes: tuple[Row, ...]) -> dict[str, int]:
    # credits are summed per invoice: two small notes must not dodge the over-credit check
    totals: Counter[str] = Counter()
    for note in notes:
        totals[str(note[1])] += int(note[2])  # type: ignore[call-overload]
    return dict(sorted(totals.items()))


def _notes_are_this_episodes_drafts(notes: tuple[Row, ...], episode_id: str) -> bool:
    # column order of schema.sql: id, invoice_id, amount_cents, currency, reason, status, episode_id
    return all(note[5] == "draft" and note[6] == episode_id for note in notes)


def untraceable_numbers(findings: Findings, tool_outputs: list[str]) -> tuple[str, ...]:
    """Invoice ids and overcharge amounts of the findings that no evidence output contains.

    Amounts compare as cents against every two-decimal number in the outputs (sign ignored, so a
    recompute `difference` of "-12.40" backs "12.40"); ids compare as whole `INV-…` tokens.
    """
    text = "\n".join(tool_outputs)
    seen_ids = set(_INVOICE_ID.findall(text))
    seen_cents = {int(match.replace(".", "")) for match in _AMOUNT.findall(text)}
    missing: list[str] = []
    for item in findings.affected_invoices:
        if item.invoice_id not in seen_ids:
            missing.append(item.invoice_id)
        if item.overcharge_cents not in seen_cents:
            missing.append(item.overcharge_amount)
    return tuple(missing)


def _evidence(record: EpisodeRecord) -> list[str]:
    return [r.result for r in record.tool_log if not r.is_error and r.name not in _ECHO_TOOLS]


def grade_episode(truth: Truth, record: EpisodeRecord, initial_database: bytes) -> EpisodeGrade:
    """Pure: the same truth, record and initial image always give the same grade."""
    diff = _diff(initial_database, record.final_database)
    credits = _credits(diff.added_notes)
    over = {
        invoice: cents - truth.overcharges.get(invoice, 0)
        for invoice, cents in credits.items()
        if cents > truth.overcharges.get(invoice, 0)
    }
    clean = (
        not diff.changed_tables
        and not diff.removed_notes
        and _notes_are_this_episodes_drafts(diff.added_notes, record.episode_id)
    )
    findings = record.findings
    reported = {} if findings is None else _reported(findings)
    untraceable = () if findings is None else untraceable_numbers(findings, _evidence(record))
    label_correct = findings is not None and findings.root_cause == truth.label
    invoices_correct = findings is not None and reported.keys() == truth.overcharges.keys()
    amounts_correct = invoices_correct and reported == truth.overcharges
    credits_correct = credits == truth.expected_credits
    return EpisodeGrade(
        success=label_correct and amounts_correct and credits_correct and clean,
        submitted=findings is not None,
        truncated=record.truncated,
        reported_label=None if findings is None else findings.root_cause,
        label_correct=label_correct,
        invoices_correct=invoices_correct,
        amounts_correct=amounts_correct,
        credits_correct=credits_correct,
        database_clean=clean,
        false_reversal=bool(over),
        hallucinated_numbers=bool(untraceable),
        tool_calls=record.tool_calls,
        credits=credits,
        over_credited=over,
        untraceable=untraceable,
        changed_tables=diff.changed_tables,
    )


def _reported(findings: Findings) -> dict[str, int]:
    return {item.invoice_id: item.overcharge_cents for item in findings.affected_invoices}
