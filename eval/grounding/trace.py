"""What each tool call showed, split into evidence and echo: the grader's side of G1 and G7.

rewards/README.md G1: a value a tool returns because the agent supplied it is an echo, never
evidence. `call_views` reads every output and argument with `eval.grounding.read` into `Seen`
keys, per call, and takes the agent's own input out of the evidence; `Seen.backs` is the
matching of G7. The grader learns which credit notes are the episode's own from the database
diff, not from the draft results the reward reads.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date, timedelta
from decimal import Decimal
from functools import lru_cache
from typing import Any

from env.ledger_env import ToolRecord
from eval.grounding.derive import minus
from eval.grounding.notation import Reading, decimal_text, scaled
from eval.grounding.output_index import views_by_call
from eval.grounding.read import read

_STAMP = re.compile(r"T(\d{1,2}):")  # the hour of a UTC timestamp
# G10.6: fields the tool contract calls an exclusive end (env/tools.py)
_EXCLUSIVE_END_FIELDS = ("period_end", "proration_end", "until")


@dataclass
class Seen:
    """One call's keys, by kind of citation they can support (rewards/README.md G7)."""

    numbers: set[str]
    days: set[str]
    months: set[str]
    month_days: set[str]
    ids: set[str]
    words: set[str]
    plus: set[str]  # numbers shown without a minus: what may back an overcharge (G7.1)
    last_days: set[str]  # the day before each exclusive end shown (G10.6)

    @classmethod
    def empty(cls) -> Seen:
        return cls(set(), set(), set(), set(), set(), set(), set(), set())

    def add_reading(self, r: Reading) -> None:
        """A token of an output or argument as keys; times and unreadable add nothing (G7)."""
        if r.kind in ("number", "year"):
            self.numbers.add(r.value)
            if r.kind == "number" and not minus(r.text):
                self.plus.add(r.value)
        elif r.kind == "percent":
            self.numbers.update((r.value, scaled(r.value, 2)))
        elif r.kind == "date":
            days = r.value.split("|")
            self.days.update(days)
            # G7: a UTC timestamp also supports the customer's local day either side
            stamp = _STAMP.search(r.text) if len(days) == 1 else None
            if stamp:
                hour, day = int(stamp.group(1)), date.fromisoformat(days[0])
                if hour < 12:
                    self.days.add((day - timedelta(days=1)).isoformat())
                if hour >= 10:
                    self.days.add((day + timedelta(days=1)).isoformat())
        elif r.kind == "month":
            self.months.add(r.value)
        elif r.kind == "month_day":
            self.month_days.add(r.value)
        elif r.kind == "id":
            self.ids.add(r.value)
        elif r.kind == "word":
            self.words.add(r.value)

    def add_json(self, value: Any) -> None:
        """Every key, string and number of a JSON value; numbers by absolute value (G7)."""
        # strings, most of a value, are read here rather than one call deeper
        if isinstance(value, dict):
            for key, item in value.items():
                for part in (key, item):
                    if type(part) is str:
                        self._add_text(part)
                    else:
                        self.add_json(part)
                if key in _EXCLUSIVE_END_FIELDS and type(item) is str:
                    self.last_days.update(_days_before(item))
        elif isinstance(value, list):
            for item in value:
                if type(item) is str:
                    self._add_text(item)
                else:
                    self.add_json(item)
        elif isinstance(value, str):
            self._add_text(value)
        elif isinstance(value, bool) or value is None:
            return
        elif isinstance(value, int):
            self.numbers.add(str(abs(value)))
            if value >= 0:
                self.plus.add(str(value))
        elif isinstance(value, float | Decimal):
            number = Decimal(str(value))  # no context arithmetic: huge exponents overflow it
            if number.is_finite() and abs(number.adjusted()) <= 60:  # beyond: no match, and
                self.numbers.add(decimal_text(number.copy_abs()))  # too many digits to write
                if not number.is_signed():
                    self.plus.add(decimal_text(number))

    def _add_text(self, text: str) -> None:
        for name, keys in _text_seen(text):
            getattr(self, name).update(keys)

    def fields(self) -> tuple[set[str], ...]:
        """The key sets in `_SEEN_FIELDS` order."""
        return (self.numbers, self.days, self.months, self.month_days, self.ids, self.words,
                self.plus, self.last_days)  # fmt: skip

    def minus(self, other: Seen) -> Seen:
        pairs = zip(self.fields(), other.fields(), strict=True)
        return Seen(*[mine - theirs for mine, theirs in pairs])

    def both(self, other: Seen) -> Seen:
        pairs = zip(self.fields(), other.fields(), strict=True)
        return Seen(*[mine & theirs for mine, theirs in pairs])

    def union(self, other: Seen) -> Seen:
        pairs = zip(self.fields(), other.fields(), strict=True)
        return Seen(*[mine | theirs for mine, theirs in pairs])

    def backs_overcharge(self, r: Reading) -> bool:
        """G7.1: an item's overcharge amount is backed only by a showing without a minus: an
        undercharge (a negative difference) never grounds an overcharge."""
        return r.value in self.plus

    def backs(self, r: Reading) -> bool:
        """Does this call support the cited reading (G7)? Days imply their months and
        month-days."""
        if r.kind == "number":
            return r.value in self.numbers
        if r.kind == "percent":
            return r.value in self.numbers or scaled(r.value, 2) in self.numbers
        if r.kind == "date":
            return any(d in self.days for d in r.value.split("|"))
        if r.kind == "month":
            return r.value in self.months or any(d[:7] == r.value for d in self.days)
        if r.kind == "month_day":
            return r.value in self.month_days or any(d[4:] == r.value[1:] for d in self.days)
        if r.kind == "year":
            months = self.months | {d[:7] for d in self.days}
            return r.value in self.numbers or any(m[:4] == r.value for m in months)
        if r.kind == "id":
            return r.value in self.ids
        if r.kind == "word":
            return r.value in self.words
        return False

    def backs_last_day(self, r: Reading) -> bool:
        """G10.6: the inclusive last day of a period whose exclusive end this call showed."""
        if r.kind == "date":
            return not self.last_days.isdisjoint(r.value.split("|"))
        if r.kind == "month_day":
            return any(day.endswith(r.value[1:]) for day in self.last_days)
        return False


_SEEN_FIELDS = ("numbers", "days", "months", "month_days", "ids", "words", "plus", "last_days")


@lru_cache(maxsize=4096)
def _days_before(text: str) -> frozenset[str]:
    """G10.6: an exclusive end's inclusive last day, for each date of one reading it shows."""
    ends = [r.value for r in read(text) if r.kind == "date" and "|" not in r.value]
    return frozenset(
        (date.fromisoformat(day) - timedelta(days=1)).isoformat()
        for day in ends
        if day != "0001-01-01"
    )


@lru_cache(maxsize=65536)  # every episode of a scenario shows the same strings
def _text_seen(text: str) -> tuple[tuple[str, frozenset[str]], ...]:
    """The keys one string adds to a `Seen`, by field (only the fields it fills)."""
    readings = read(text)
    if not readings:
        return ()
    seen = Seen.empty()
    for r in readings:
        seen.add_reading(r)
    named = zip(_SEEN_FIELDS, seen.fields(), strict=True)
    return tuple([(f, frozenset(keys)) for f, keys in named if keys])


def _loads(text: str, **options: Any) -> Any:
    try:
        return json.loads(text, **options)
    except (ValueError, RecursionError):
        return text


def _seen(*values: Any) -> Seen:
    seen = Seen.empty()
    for value in values:
        seen.add_json(value)
    return seen


# G1.1: the argument naming the record a tool looks up; list_payments' invoice filter is checked
# by the tool (an unknown invoice is an error), the others come back as the record's own field
_RESOLVES = {
    "get_customer": {"customer_id": True},
    "list_invoices": {"customer_id": True},
    "get_invoice": {"invoice_id": True},
    "recompute_invoice": {"invoice_id": True},
    "get_subscription_timeline": {"subscription_id": True},
    "list_payments": {"customer_id": True, "invoice_id": False},
}


def _unresolved(tool: str, arguments: Any, result: Any) -> Any:
    """The arguments but those a successful call resolved to a record (`_RESOLVES`): a found
    look-up is a fact of the output, not an echo (G1.1)."""
    keys = _RESOLVES.get(tool)
    if not keys or not isinstance(arguments, dict) or not isinstance(result, dict):
        return arguments
    kept = dict(arguments)
    for name, returned in keys.items():
        value = arguments.get(name)
        if isinstance(value, str) and (not returned or result.get(name) == value):
            del kept[name]
    return kept


def call_views(tool_log: Iterable[ToolRecord], own_notes: set[str]) -> list[tuple[Seen, Seen]]:
    """`read_calls`, each call read once per content (`eval.grounding.output_index`); the views
    are shared between episodes: read them, never change them."""
    return views_by_call(tool_log, own_notes, read_calls)


def read_calls(tool_log: Iterable[ToolRecord], own_notes: set[str]) -> list[tuple[Seen, Seen]]:
    """Per call, (what it showed that the agent did not supply, what only echoed the agent):
    rewards/README.md G1. `own_notes`: ids of the credit notes this episode added (from the
    database diff)."""
    views = []
    for record in tool_log:
        if record.is_error or record.name == "submit_findings":  # G1: neither evidence nor echo
            views.append((Seen.empty(), Seen.empty()))
            continue
        result = _loads(record.result)
        if record.name == "draft_credit_note":  # G1: repeats what it was given, all echo
            views.append((Seen.empty(), _seen(result)))
            continue
        echoed_parts: list[Any] = []
        # G1: this episode's own credit notes, and the sum over them, echo its drafts
        if record.name == "get_invoice" and isinstance(result, dict):
            notes = result.get("credit_notes")
            if isinstance(notes, list):
                mine = [
                    n for n in notes if isinstance(n, dict) and n.get("credit_note_id") in own_notes
                ]
                if mine:
                    echoed_parts = [*mine, result.get("amount_credited")]
                    result = {k: v for k, v in result.items() if k != "amount_credited"}
                    result["credit_notes"] = [n for n in notes if n not in mine]
        shown = _seen(result)
        # G1: whatever this call's arguments supplied is echo wherever the output repeats it,
        # but for the keys the tool resolved to a record (G1.1)
        arguments = _loads(record.arguments or "{}", parse_float=Decimal)
        supplied = _seen(_unresolved(record.name, arguments, result))
        views.append((shown.minus(supplied), shown.both(supplied).union(_seen(*echoed_parts))))
    return views
