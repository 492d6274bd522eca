"""Provenance: is every number the findings cite found in this episode's tool outputs?

Design §5 ("Traceability", "Decided after the first release" and, for derived amounts, "Decided
in the third release"); the rules are numbered in rewards/README.md (G1-G10). The findings'
invoice ids, overcharge amounts and every number-like token of the summary (G6, read by
`rewards.numbers`, which fails closed: G2) get one status each (G8, G10.4):
- `evidence`: found in a tool output that is not an echo of the agent's own input
  (`rewards.evidence`); `sources` are the indices of those calls in the tool log;
- `derived` (G10): no tool printed it, but a right calculation in the summary on found facts
  gives it (`rewards.derived`); `sources` are the calls that showed the operands. The result
  of a wrong calculation is `untraceable`, wherever it is cited;
- `allowed` (G3): not evidence, but no hallucination either: a small count (0-12 written as a whole
  number: "3 invoices", "three"), a time of day, and with two or more affected invoices the total
  of the findings' own amounts;
- `claimed` (G3.1): a summary token the customer's complaint shows (`rewards.claims`), shown by
  no tool: no hallucination, never a found fact (no chain, no operand, no G11.3 fact);
- `echo_only`: seen only where a tool echoed what the agent supplied (`sources` are those calls);
- `untraceable`: seen nowhere, or unreadable.
The findings are traceable when nothing is echo_only or untraceable, and they form an evidence
chain (G4) when at least one citation that is not of an allowed kind (count, time, own total) is
evidence: allowed numbers never make a chain on their own, even when a tool happens to show them.

Matching (G7): numbers compare as canonical decimals (signs, symbols, codes, separators and trailing
zeros dropped; an item's overcharge amount only against a showing without a minus, G7.1); a
percentage matches its rate or its figure (`8.25%` ~ 0.0825 or 8.25); a date matches any of its
readings; a month or a month-day matches an evidence date in it; a bare year
matches an evidence date of that year or the integer; ids and other words match whole, in upper
case. A UTC timestamp in an output also supports the day before (before 12:00) and after (from
10:00): the customer's local date may differ. `python -m rewards.provenance` times an episode.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import date, timedelta
from decimal import Decimal
from functools import lru_cache
from typing import Any, Literal

from env.engine.money import format_cents
from env.findings import Findings
from env.ledger_env import ToolRecord
from rewards.derived import derive
from rewards.display import render
from rewards.evidence import CallParts, split_log
from rewards.numbers import Token, canonical, read_text, shift
from rewards.output_index import evidence_by_call

Where = Literal["amount", "invoice_id", "summary"]
Status = Literal["evidence", "derived", "allowed", "claimed", "echo_only", "untraceable"]
Key = tuple[str, str]
_HOUR = re.compile(r"T([0-9]{1,2}):")
_ERROR = re.compile(r'\s*\{\s*"error"\s*:')
_FIELDS = ("numbers", "dates", "months", "month_days", "years", "ids", "words", "plus", "ends")
# G10.6: the fields the tool contract documents as an exclusive end (env/tools.py)
EXCLUSIVE_ENDS = frozenset({"period_end", "proration_end", "until"})


@dataclass(frozen=True)
class CitedNumber:
    raw: str
    kind: str
    value: str
    where: Where = "summary"
    integer: bool = False


@dataclass(frozen=True)
class Trace:
    cited: CitedNumber
    status: Status
    sources: tuple[int, ...] = ()
    allowed_kind: bool = False  # a count, a time or the own total: never makes a chain alone


@dataclass(frozen=True)
class ShownKeys:
    """What one part of a call showed (its evidence or its echo, G1), as normalised keys (G7).
    Not `agent.audit_evidence.Evidence`, the auditor's gathered tool outputs."""

    numbers: frozenset[str] = frozenset()
    dates: frozenset[str] = frozenset()
    months: frozenset[str] = frozenset()
    month_days: frozenset[str] = frozenset()
    years: frozenset[str] = frozenset()
    ids: frozenset[str] = frozenset()
    words: frozenset[str] = frozenset()
    plus: frozenset[str] = frozenset()  # numbers shown without a minus (G7.1)
    ends: frozenset[str] = frozenset()  # the day before each exclusive end shown (G10.6)


@dataclass(frozen=True)
class ProvenanceReport:
    traces: tuple[Trace, ...]
    sources: dict[str, tuple[int, ...]] = field(default_factory=dict)

    @property
    def cited(self) -> tuple[CitedNumber, ...]:
        """Each distinct citation once (an id in the items and the summary is one)."""
        return _once(t.cited for t in self.traces)

    @property
    def untraceable(self) -> tuple[CitedNumber, ...]:
        return _once(t.cited for t in self.traces if t.status in ("untraceable", "echo_only"))

    @property
    def traceable(self) -> bool:
        return not self.untraceable

    @property
    def chain(self) -> bool:
        """G4: at least one found fact (not a count, time or own total) is cited."""
        return any(t.status == "evidence" and not t.allowed_kind for t in self.traces)

    @property
    def grounded(self) -> bool:
        """G8: nothing echo_only or untraceable, and a chain (G4)."""
        return self.traceable and self.chain


def _once(cited: Iterable[CitedNumber]) -> tuple[CitedNumber, ...]:
    first: dict[tuple[str, str, str], CitedNumber] = {}
    for c in cited:
        first.setdefault((c.raw, c.kind, c.value), c)
    return tuple(first.values())


def _date_keys(day: str, hour: int | None) -> list[Key]:
    """G7: a UTC timestamp also supports the customer's local day either side."""
    keys = [("dates", day)]
    if hour is None:
        return keys
    utc = date.fromisoformat(day)
    if hour < 12:
        keys.append(("dates", (utc - timedelta(days=1)).isoformat()))
    if hour >= 10:
        keys.append(("dates", (utc + timedelta(days=1)).isoformat()))
    return keys


def token_keys(token: Token) -> list[Key]:
    """What one token of a tool output (or an argument) contributes (G7)."""
    kind, value = token.kind, token.value
    if kind == "number" and not token.negative:  # G7.1: shown as a positive amount
        return [("numbers", value), ("plus", value)]
    if kind in ("number", "year"):
        return [("numbers", value)]
    if kind == "percent":
        return [("numbers", value), ("numbers", shift(value, 2))]
    if kind == "date":
        if "|" in value:
            return [("dates", v) for v in value.split("|")]
        hour = _HOUR.search(token.raw)
        return _date_keys(value, int(hour[1]) if hour else None)
    if kind in ("month", "month_day"):
        return [(kind + "s", value)]
    if kind == "id":
        return [("ids", value)]
    if kind == "word":
        return [("words", value)]
    return []  # time, unreadable


@lru_cache(maxsize=65536)  # every episode of a scenario shows the same strings
def _text_keys(text: str) -> tuple[Key, ...]:
    """Every key the tokens of one string contribute (G7)."""
    return tuple(key for token in read_text(text) for key in token_keys(token))


@lru_cache(maxsize=4096)
def _last_days(text: str) -> tuple[Key, ...]:
    """G10.6: the inclusive last day before an exclusive end (`2025-11-01` ends on
    `2025-10-31`), for each single-reading date the string shows."""
    keys = []
    for token in read_text(text):
        if token.kind == "date" and "|" not in token.value and token.value > "0001-01-01":
            day = date.fromisoformat(token.value) - timedelta(days=1)
            keys.append(("ends", day.isoformat()))
    return tuple(keys)


def value_keys(value: Any, keys: set[Key]) -> None:
    """Every string, key and number of a JSON value, read as text (G2); adds to `keys`.
    Numbers count by their absolute value (G7)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            keys.update(_text_keys(item))
        elif isinstance(item, bool) or item is None:
            continue
        elif isinstance(item, int):
            keys.add(("numbers", str(abs(item))))
            if item >= 0:
                keys.add(("plus", str(item)))
        elif isinstance(item, float | Decimal):
            # a float as JSON wrote it. No context arithmetic: abs(Decimal("1e999999999"))
            # overflows; past 10**60 either way (only an argument the tools refused can hold
            # one) the value would expand to that many digits, and it matches nothing
            number = Decimal(str(item))
            if number.is_finite() and abs(number.adjusted()) <= 60:
                keys.add(("numbers", canonical(str(number.copy_abs()))))
                if not number.is_signed():
                    keys.add(("plus", canonical(str(number))))
        elif isinstance(item, dict):
            for key, inner in item.items():  # JSON keys are strings: read here, not pushed
                if type(key) is str:
                    keys.update(_text_keys(key))
                    if key in EXCLUSIVE_ENDS and type(inner) is str:
                        keys.update(_last_days(inner))
                else:
                    stack.append(key)
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)


def shown_keys(keys: Iterable[Key]) -> ShownKeys:
    """G7: a shown date also shows its month, its month-day and its year."""
    found: dict[str, set[str]] = {name: set() for name in _FIELDS}
    for name, key in keys:
        found[name].add(key)
    dates = found["dates"]
    months = found["months"] | {d[:7] for d in dates}
    return ShownKeys(
        numbers=frozenset(found["numbers"]),
        dates=frozenset(dates),
        months=frozenset(months),
        month_days=frozenset(found["month_days"] | {"--" + d[5:] for d in dates}),
        years=frozenset(m[:4] for m in months),
        ids=frozenset(found["ids"]),
        words=frozenset(found["words"]),
        plus=frozenset(found["plus"]),
        ends=frozenset(found["ends"]),
    )


def _keys(values: Iterable[Any]) -> set[Key]:
    keys: set[Key] = set()
    for value in values:
        value_keys(value, keys)
    return keys


def call_evidence(parts: CallParts) -> tuple[ShownKeys, ShownKeys]:
    """(evidence, echo) of one call: its own arguments are taken out of its evidence (G1)."""
    shown, supplied = _keys(parts.evidence), _keys(parts.arguments)
    echoed = (shown & supplied) | _keys(parts.echo)
    return shown_keys(shown - supplied), shown_keys(echoed)


def supports(ev: ShownKeys, cited: CitedNumber) -> bool:
    """G7: does what a call showed match the citation? Times and unreadable match nothing.
    G7.1: an item's overcharge amount only where it was shown without a minus."""
    kind, value = cited.kind, cited.value
    if cited.where == "amount":
        return value in ev.plus
    if kind == "number":
        return value in ev.numbers
    if kind == "percent":
        return value in ev.numbers or shift(value, 2) in ev.numbers
    if kind == "date":
        return any(v in ev.dates for v in value.split("|"))
    if kind == "month":
        return value in ev.months
    if kind == "month_day":
        return value in ev.month_days
    if kind == "year":
        return value in ev.years or value in ev.numbers
    if kind == "id":
        return value in ev.ids
    if kind == "word":
        return value in ev.words
    return False  # time, unreadable


def supports_last_day(ev: ShownKeys, cited: CitedNumber) -> bool:
    """G10.6: a date (or month-day) that is the inclusive last day of a shown exclusive end."""
    if cited.kind == "date":
        return any(v in ev.ends for v in cited.value.split("|"))
    if cited.kind == "month_day":
        return any(day[4:] == cited.value[1:] for day in ev.ends)
    return False


def extract_cited(findings: Findings) -> tuple[CitedNumber, ...]:
    """G6: invoice ids and amounts, then every token of the summary; each distinct one once."""
    cited: list[CitedNumber] = []
    for item in findings.affected_invoices:
        cited.append(CitedNumber(item.invoice_id, "id", item.invoice_id, "invoice_id"))
        amount = item.overcharge_amount
        cited.append(CitedNumber(amount, "number", canonical(amount), "amount"))
    for token in read_text(render(findings.summary)):  # G2.0: the summary as displayed
        cited.append(CitedNumber(token.raw, token.kind, token.value, "summary", token.integer))
    return tuple(dict.fromkeys(cited))


def _allowed_kind(cited: CitedNumber, own_total: str | None) -> bool:
    """G3: a time of day, a whole number 0-12 without currency, the own total of 2+ amounts."""
    if cited.kind == "time":
        return True
    if cited.kind != "number":
        return False
    small = cited.integer and int(cited.value) <= 12
    return small or cited.value == own_total


def trace(
    findings: Findings,
    calls: list[tuple[ShownKeys, ShownKeys]],
    claims: ShownKeys = ShownKeys(),  # frozen and empty: a safe default
) -> ProvenanceReport:
    """Each citation's status against per-call (evidence, echo) pairs, in call order, in the
    order of G8 with G10.4: the result of a wrong calculation is untraceable; else evidence,
    else derived (a calculation grounds it), else allowed (G3), else claimed (a summary token
    the complaint `claims` shows, G3.1), else echo_only, else untraceable."""
    items = findings.affected_invoices
    own_total = None
    if len(items) >= 2:
        own_total = canonical(format_cents(sum(i.overcharge_cents for i in items)))

    def fact(token: Token) -> tuple[int, ...]:
        """G10.3: the calls showing an operand as a found fact (G4), else ()."""
        cited = CitedNumber(token.raw, token.kind, token.value, "summary", token.integer)
        if _allowed_kind(cited, own_total):
            return ()
        return tuple(i for i, (ev, _) in enumerate(calls) if supports(ev, cited))

    derivations = derive(findings.summary, fact)
    traces = []
    for cited in extract_cited(findings):
        allowed = _allowed_kind(cited, own_total)
        if cited.kind == "number" and cited.value in derivations.wrong:
            traces.append(Trace(cited, "untraceable", (), allowed))  # G10.4: a wrong sum
            continue
        found = tuple(i for i, (ev, _) in enumerate(calls) if supports(ev, cited))
        if found:
            traces.append(Trace(cited, "evidence", found, allowed))
            continue
        if cited.kind == "number" and cited.value in derivations.grounded:
            traces.append(Trace(cited, "derived", derivations.grounded[cited.value], allowed))
            continue
        last_day = tuple(i for i, (ev, _) in enumerate(calls) if supports_last_day(ev, cited))
        if last_day:  # G10.6: an inclusive period end
            traces.append(Trace(cited, "derived", last_day, allowed))
            continue
        if allowed:
            traces.append(Trace(cited, "allowed", (), True))
            continue
        if cited.where == "summary" and supports(claims, cited):  # G3.1: the customer's claim
            traces.append(Trace(cited, "claimed", (), True))
            continue
        echoed = tuple(i for i, (_, echo) in enumerate(calls) if supports(echo, cited))
        traces.append(Trace(cited, "echo_only" if echoed else "untraceable", echoed))
    return ProvenanceReport(tuple(traces))


def trace_episode(
    findings: Findings,
    tool_log: Iterable[ToolRecord],
    claims: ShownKeys = ShownKeys(),  # frozen and empty: a safe default
) -> ProvenanceReport:
    """The reward's check: the episode's tool log split into evidence and echoes (G1);
    `claims`: what the customer's complaint shows (G3.1, `rewards.claims`)."""
    return trace(findings, evidence_by_call(tool_log, call_evidence), claims)


def check_provenance(findings: Findings, tool_outputs: Iterable[str]) -> ProvenanceReport:
    """Findings against plain outputs, every one evidence (no echoes): the rules in isolation.
    Example: an output showing "tax": "12.40" supports "$12.40" and "3 invoices", not "$13.00"."""
    calls = []
    for output in tool_outputs:
        error = _ERROR.match(output) is not None
        parts = split_log([ToolRecord("output", "{}", output, error)])[0]
        calls.append(call_evidence(parts))
    return trace(findings, calls)
