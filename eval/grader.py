"""The evaluation grader (design §6): did the episode leave the books right and report them right?

Separate code from the training reward on purpose (it imports nothing from `rewards/`): it judges
from the database diff between the scenario's initial image and the episode's final image, and
from the submitted findings, never from what the agent says it did. Grounded success (design §6)
is a success whose every cited number is traced to a tool output that is not an echo of the
agent's input (or derived from such by a right calculation the summary writes), with at least
one found fact, and, for a `no_error` verdict, after reading a disputed invoice:
`eval.grounding`, the grader's own implementation of the §5 rules (numbered G1-G11 in
rewards/README.md). `python -m checks.agreement` checks it
against the binary reward episode by episode. Tests: `pytest tests/eval/test_grader.py`.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from decimal import Decimal

from env.episode import EpisodeRecord
from env.findings import Findings
from env.scenario import Truth
from eval.database_diff import diff_databases
from eval.grounding import Traced, call_views, claim_seen, grounded, trace_findings

Row = tuple[object, ...]


@dataclass(frozen=True)
class TracedNumber:
    """One number the findings cite, as the episode log and the viewer show it."""

    text: str
    where: str  # "amount" | "invoice_id" | "summary"
    value: str  # normalised: canonical decimal, ISO date, upper-case id
    status: str  # "evidence" | "derived" | "allowed" | "claimed" | "echo_only" | "untraceable"
    sources: tuple[int, ...]  # indices into the episode's tool-call log, in call order


@dataclass(frozen=True)
class EpisodeGrade:
    success: bool
    grounded_success: bool  # a success whose findings are traced, with a found fact
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
    untraceable: tuple[str, ...]  # cited numbers no non-echo tool output showed (or unreadable)
    changed_tables: tuple[str, ...]
    number_trace: tuple[TracedNumber, ...] = ()
    # rewards/README.md G11: not a no_error verdict, or one that read a disputed invoice
    investigated: bool = True


def _credits(notes: tuple[Row, ...]) -> dict[str, int]:
    # credits are summed per invoice: two small notes must not dodge the over-credit check
    totals: Counter[str] = Counter()
    for note in notes:
        totals[str(note[1])] += int(note[2])  # type: ignore[call-overload]
    return dict(sorted(totals.items()))


def _notes_are_this_episodes_drafts(notes: tuple[Row, ...], episode_id: str) -> bool:
    # column order of schema.sql: id, invoice_id, amount_cents, currency, reason, status, episode_id
    return all(note[5] == "draft" and note[6] == episode_id for note in notes)


def grade_episode(truth: Truth, record: EpisodeRecord, initial_database: bytes) -> EpisodeGrade:
    """Pure: the same truth, record and initial image always give the same grade."""
    diff = diff_databases(initial_database, record.final_database)
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
    own_notes = {str(note[0]) for note in diff.added_notes}
    traced = []
    if findings is not None:  # G3.1: the complaint, as the scenario's own image holds it
        views = call_views(record.tool_log, own_notes)
        traced = trace_findings(findings, views, claim_seen(initial_database))
    untraceable = tuple(t.text for t in traced if t.status in ("echo_only", "untraceable"))
    label_correct = findings is not None and findings.root_cause == truth.label
    invoices_correct = findings is not None and reported.keys() == truth.overcharges.keys()
    amounts_correct = invoices_correct and reported == truth.overcharges
    credits_correct = credits == truth.expected_credits
    success = label_correct and amounts_correct and credits_correct and clean
    looked = findings is None or findings.root_cause != "no_error"
    names = [call.name for call in record.tool_log]
    looked = looked or _cites_disputed_record(traced, _records_read(record), truth, names)
    return EpisodeGrade(
        success=success,
        grounded_success=success and grounded(traced) and looked,
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
        number_trace=tuple(
            TracedNumber(t.text, t.where, t.value, t.status, t.sources) for t in traced
        ),
        investigated=looked,
    )


def _records_read(record: EpisodeRecord) -> dict[str, set[int]]:
    """rewards/README.md G11.2: per invoice whose own record the episode was shown, by
    `get_invoice` or `recompute_invoice` (an error shows none), the calls that showed it."""
    read: dict[str, set[int]] = {}
    for n, call in enumerate(record.tool_log):
        if call.name in ("get_invoice", "recompute_invoice") and not call.is_error:
            try:
                shown = json.loads(call.result)
            except (ValueError, RecursionError):
                continue
            invoice_id = shown.get("invoice_id") if isinstance(shown, dict) else None
            if isinstance(invoice_id, str):
                read.setdefault(invoice_id, set()).add(n)
    return read


def _cites_disputed_record(
    traced: list[Traced], read: dict[str, set[int]], truth: Truth, tool_log: list[str]
) -> bool:
    """rewards/README.md G11.3: some citation is a found fact (a date or month-day, a nonzero
    number or percentage; a zero only from a recompute) that a read of a disputed invoice's
    own record showed. `tool_log`: the tool name of each call."""
    calls = set().union(*(read.get(invoice, set()) for invoice in truth.disputed_invoices))
    for t in traced:
        shown_by = calls & set(t.sources)
        if t.status != "evidence" or t.allowed_kind or not shown_by:
            continue
        if t.kind in ("date", "month_day"):
            return True
        if t.kind not in ("number", "percent"):
            continue
        try:
            zero = Decimal(t.value) == 0
        except ArithmeticError:
            continue
        if not zero or any(tool_log[n] == "recompute_invoice" for n in shown_by):
            return True
    return False


def _reported(findings: Findings) -> dict[str, int]:
    return {item.invoice_id: item.overcharge_cents for item in findings.affected_invoices}
