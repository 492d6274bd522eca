"""The grader's grounding check (design §6 "grounded success"): its own code for the §5 rules.

Written apart from `rewards/` on purpose, and importing nothing from it, so that a bug in one
reading shows up as a disagreement (`python -m checks.agreement`) instead of passing silently in
both. The rules (README, "The reward"): every number-like token of the findings is read in any
notation and fails closed; it is `evidence` when a tool output that is not an echo of the agent's
own input shows it, `allowed` (small count 0-12 as a whole number, time of day, own total of two
or more amounts) otherwise, then `echo_only`, else `untraceable`. Grounded: nothing echo_only
or untraceable, and at least one cited fact of a non-allowed kind is evidence.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date, timedelta
from decimal import Context, Decimal, InvalidOperation
from functools import lru_cache
from typing import Any

from env.findings import Findings
from env.ledger_env import ToolRecord

_PREC = Context(prec=10_000)
_CODES = {"USD", "EUR", "GBP", "CAD", "AUD"}
_SYMBOLS = {"$", "€", "£"}
_STRIP = set("()[]{}<>«»\"',;:!?*")
_MONTH_NAMES = (
    "january february march april may june july august september october november december"
)
_ONES = (
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen"
)
_TEENS_TENS = (
    "sixteen seventeen eighteen nineteen twenty thirty forty fifty sixty seventy eighty ninety"
)
_NUMBER_WORDS: dict[str, tuple[int, str]] = {}
for _n, _w in enumerate((_ONES + " " + _TEENS_TENS).split()):
    _value = _n if _n < 20 else (_n - 18) * 10
    _NUMBER_WORDS[_w] = (_value, "small" if _n < 10 else "teen" if _n < 20 else "tens")
_NUMBER_WORDS.update(
    {"hundred": (100, "hundred"), "thousand": (1000, "scale"), "million": (10**6, "scale")}
)
_NUMBER_WORDS["billion"] = (10**9, "scale")
_MONTH_NUMBERS = {
    key: number
    for number, name in enumerate(_MONTH_NAMES.split(), 1)
    for key in (name, name[:3], *(("sept",) if number == 9 else ()))
}
_PREFIXES = ("INV-", "CUS-", "SUB-", "PAY-", "CN-", "PLN-")
_CLOCK = re.compile(r"\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?", re.ASCII)
_PLAIN = re.compile(r"\d+(?:\.\d+)?(?:[eE][+-]?\d+)?", re.ASCII)
_GROUPINGS = (
    (re.compile(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?", re.ASCII), ",", "."),
    (re.compile(r"\d{1,3}(?:_\d{3})+(?:\.\d+)?", re.ASCII), "_", "."),
    (re.compile(r"\d{1,3}(?:'\d{3})+(?:\.\d+)?", re.ASCII), "'", "."),
    (re.compile(r"\d{1,3}(?: \d{3})+(?:[.,]\d+)?", re.ASCII), " ", "either"),
    (re.compile(r"\d{1,3}(?:\.\d{3})+,\d+", re.ASCII), ".", ","),
    (re.compile(r"\d+,\d{1,2}", re.ASCII), "", ","),
)


@dataclass(frozen=True)
class Reading:
    """One token: `kind` number|percent|date|month|month_day|year|id|word|time|unreadable."""

    text: str
    kind: str
    value: str
    whole: bool = False  # written as a plain whole number: may be a count


@dataclass(frozen=True)
class Traced:
    text: str
    where: str
    value: str
    status: str
    sources: tuple[int, ...]
    allowed_kind: bool


# reading --------------------------------------------------------------------------------------


def _clean(text: str) -> str:
    # `seats=20` (tool-argument style) is two words: `=` is never part of a number
    text = unicodedata.normalize("NFKC", text).replace("=", " ")
    chars = []
    for ch in text:
        if "0" <= ch <= "9" or ch.isascii():
            chars.append(ch)
        elif unicodedata.decimal(ch, None) is not None:
            chars.append(chr(48 + unicodedata.decimal(ch)))
        else:
            chars.append(
                {"−": "-", "’": "'", "‘": "'", "–": " ", "—": " ", "٫": ".", "٬": ","}.get(ch, ch)
            )
    return "".join(chars)


def _trim(word: str) -> str:
    changed = True
    while changed:
        start, end = 0, len(word)
        while start < end and word[start] in _STRIP:
            start += 1
        while end > start and (word[end - 1] in _STRIP or word[end - 1] == "."):
            end -= 1
        trimmed = word[start:end]
        if trimmed[-2:] in ("'s", "'S"):
            trimmed = trimmed[:-2]
        changed, word = trimmed != word, trimmed
    return word


def _decimal_text(value: Decimal) -> str:
    text = format(value, "f")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    text = text.lstrip("0")
    if not text or text.startswith("."):
        text = "0" + text
    return text


def _scaled(value: str, places: int) -> str:
    return _decimal_text(Decimal(value).scaleb(places, _PREC))


def _calendar(year: int, month: int, day: int) -> str | None:
    try:
        return date(year, month, day).isoformat()
    except ValueError:
        return None


def _dates(text: str, candidates: list[tuple[int, int, int]]) -> Reading:
    days = sorted({d for d in (_calendar(*c) for c in candidates) if d})
    return Reading(text, "date", "|".join(days)) if days else Reading(text, "unreadable", text)


def _month_of(word: str) -> int | None:
    if word.rstrip(".") == "may":  # the verb
        return None
    return _MONTH_NUMBERS.get(word.lower().rstrip("."))


def _digits_only(text: str, low: int, high: int) -> bool:
    return text.isascii() and text.isdigit() and low <= len(text) <= high


def _as_day(word: str) -> int | None:
    core = word[:-2] if word[-2:].lower() in ("st", "nd", "rd", "th") else word
    if _digits_only(core, 1, 2) and int(core) <= 31:
        return int(core)
    return None


def _as_date(w: str) -> Reading | None:
    if len(w) >= 8 and w[:4].isdigit() and w[4:5] == "-":
        date_part, _, rest = w.partition("T")
        pieces = date_part.split("-")
        shaped = len(pieces) == 3 and all(_digits_only(p, 1, 4) for p in pieces)
        shaped = shaped and len(pieces[0]) == 4 and len(pieces[1]) <= 2 and len(pieces[2]) <= 2
        if shaped and (not rest or _CLOCK.fullmatch(rest)):
            return _dates(w, [(int(pieces[0]), int(pieces[1]), int(pieces[2]))])
    for sep in "/.-":
        pieces = w.split(sep)
        if len(pieces) != 3 or not all(p.isascii() and p.isdigit() for p in pieces):
            continue
        a, b, c = pieces
        if sep == "/" and len(a) == 4 and len(b) <= 2 and len(c) <= 2:
            return _dates(w, [(int(a), int(b), int(c))])
        if len(a) <= 2 and len(b) <= 2 and len(c) == 4:
            first, second, year = int(a), int(b), int(c)
            options = [(year, second, first)]
            if sep != ".":
                options.append((year, first, second))
            return _dates(w, options)
        if sep == "/" and len(a) <= 2 and len(b) <= 2 and len(c) == 2:
            return _dates(w, [(2000 + int(c), int(b), int(a)), (2000 + int(c), int(a), int(b))])
    pieces = w.split("-")
    if len(pieces) == 2 and _digits_only(pieces[0], 4, 4) and _digits_only(pieces[1], 2, 2):
        if 1 <= int(pieces[1]) <= 12:
            return Reading(w, "month", w)
        return Reading(w, "unreadable", w)
    return None


def _as_time(w: str) -> Reading | None:
    lower = w.lower()
    meridiem = lower.endswith(("am", "pm"))
    core = lower[:-2] if meridiem else lower
    pieces = core.split(":")
    if len(pieces) == 1:
        if meridiem and _digits_only(core, 1, 2) and 1 <= int(core) <= 12:
            return Reading(w, "time", w)
        return None
    if len(pieces) > 3 or not _digits_only(pieces[0], 1, 2):
        return None
    if not all(_digits_only(p, 2, 2) and int(p) <= 59 for p in pieces[1:]):
        return None
    if int(pieces[0]) <= (12 if meridiem else 23):
        return Reading(w, "time", w)
    return None


def _affixes(w: str) -> tuple[str, str, str, bool]:
    """(body, prefix, suffix, ok): sign, currency and unit affixes peeled off."""
    body, prefix, suffix = w, "", ""
    body = body[1:] if body[:1] in "+-" else body
    if body[:1] in _SYMBOLS:
        prefix, body = body[:1], body[1:]
    elif body[:3].upper() in _CODES:
        prefix, body = body[:3], body[3:]
    body = body[1:] if body[:1] in "+-" else body
    if body.endswith("%") or body[-1:] in _SYMBOLS:
        suffix, body = body[-1], body[:-1]
    elif body[-3:].upper() in _CODES and body[-4:-3].isdigit():
        suffix, body = body[-3:], body[:-3]
    elif body[-2:].lower() in ("st", "nd", "rd", "th") and body[-3:-2].isdigit():
        suffix, body = body[-2:], body[:-2]
    else:
        head, dash, tail = body.rpartition("-")
        if dash and tail.isascii() and tail.isalpha() and head[-1:].isdigit():
            suffix, body = "-" + tail, head
    return body, prefix, suffix, bool(body) and body[0].isdigit()


def _as_number(w: str) -> Reading | None:
    body, prefix, suffix, ok = _affixes(w)
    if not ok:
        return None
    digits = None
    if _PLAIN.fullmatch(body):
        digits = body
    else:
        for pattern, group, point in _GROUPINGS:
            if pattern.fullmatch(body):
                if point == "either":
                    digits = body.replace(" ", "").replace(",", ".")
                elif point == ",":
                    digits = body.replace(".", "").replace(",", ".")
                else:
                    digits = body.replace(group, "")
                break
    if digits is None:
        return None
    unit = bool(suffix) and suffix[0] not in "%$€£" and suffix.upper() not in _CODES
    if unit and not digits.isdigit():
        return None  # ordinals and `14-day` take whole numbers
    if "e" in digits.lower():
        mantissa, exponent = re.split("[eE]", digits)
        if abs(int(exponent)) > 30:
            return Reading(w, "unreadable", w)
        digits = format(Decimal(mantissa).scaleb(int(exponent), _PREC), "f")
    value = _decimal_text(Decimal(digits))
    if suffix == "%":
        return Reading(w, "percent", _scaled(value, -2))
    if w.isdigit() and len(w) == 4 and "1900" <= w <= "2099":
        return Reading(w, "year", w, True)
    money = bool(prefix) or suffix[:1] in ("$", "€", "£") or suffix.upper() in _CODES
    return Reading(w, "number", value, digits.isdigit() and not money)


def _is_numeric_char(ch: str) -> bool:
    return unicodedata.numeric(ch, None) is not None


def _read_one(w: str) -> Reading | None:
    digit = any(ch.isdigit() for ch in w)
    upper = w.upper()
    if upper.startswith(_PREFIXES):
        rest = upper.split("-", 1)[1]
        if rest and rest.isascii() and rest.isalnum() and (digit or w == upper):
            return Reading(w, "id", upper)
    if not digit:
        return Reading(w, "unreadable", w) if any(map(_is_numeric_char, w)) else None
    if any(not ch.isascii() and _is_numeric_char(ch) for ch in w):
        return Reading(w, "unreadable", w)
    for reader in (_as_date, _as_time, _as_number):
        try:
            found = reader(w)
        except (InvalidOperation, ValueError):
            return Reading(w, "unreadable", w)
        if found is not None:
            return found
    return Reading(w, "word", upper)


def _spelled_value(parts: list[str]) -> int | None:
    total = current = 0
    previous = ""
    for part in parts:
        value, cls = _NUMBER_WORDS[part]
        bad = {
            "small": ("small", "teen"),
            "teen": ("small", "teen"),
            "tens": ("small", "teen", "tens"),
            "hundred": ("hundred",),
            "scale": ("scale",),
        }[cls]
        if previous in bad:
            return None
        if cls == "hundred":
            current = max(current, 1) * 100
        elif cls == "scale":
            total, current = total + max(current, 1) * value, 0
        else:
            current += value
        previous = cls
    return total + current


def _number_word(w: str) -> bool:
    return all(part in _NUMBER_WORDS for part in w.lower().split("-"))


def _month_phrase(words: list[str], i: int) -> tuple[Reading, int] | None:
    def year_at(k: int) -> int | None:
        return int(words[k]) if k < len(words) and _digits_only(words[k], 4, 4) else None

    day = _as_day(words[i])
    if day is not None:
        k = i + 2 if i + 1 < len(words) and words[i + 1].lower() == "of" else i + 1
        month = _month_of(words[k]) if k < len(words) else None
        if month is None:
            return None
        year = year_at(k + 1)
        end = k + 2 if year is not None else k + 1
        return _day_reading(" ".join(words[i:end]), year, month, day), end - i
    month = _month_of(words[i])
    if month is None or i + 1 >= len(words):
        return None
    year = year_at(i + 1)
    if year is not None:
        return Reading(" ".join(words[i : i + 2]), "month", f"{year:04d}-{month:02d}"), 2
    day = _as_day(words[i + 1])
    if day is None:
        return None
    year = year_at(i + 2)
    end = i + 3 if year is not None else i + 2
    return _day_reading(" ".join(words[i:end]), year, month, day), end - i


def _day_reading(text: str, year: int | None, month: int, day: int) -> Reading:
    if year is not None:
        return _dates(text, [(year, month, day)])
    if _calendar(2000, month, day):
        return Reading(text, "month_day", f"--{month:02d}-{day:02d}")
    return Reading(text, "unreadable", text)


def _group_head(word: str) -> bool:
    core = word[1:] if word[:1] in "+-" else word
    if core[:1] in _SYMBOLS:
        core = core[1:]
    elif core[:3].upper() in _CODES:
        core = core[3:]
    return _digits_only(core, 1, 3)


def _group_tail(word: str) -> bool:
    core = word
    if core[-1:] in "%$€£":
        core = core[:-1]
    elif core[-3:].upper() in _CODES:
        core = core[:-3]
    return (
        len(core) > 4
        and _digits_only(core[:3], 3, 3)
        and core[3] in ".,"
        and (_digits_only(core[4:], 1, len(core)))
    )


def _space_group(words: list[str], i: int) -> int:
    """Words from i that form one number grouped by spaces (`1 234 567,89`); 0 for none."""
    if not _group_head(words[i]):
        return 0
    j = i + 1
    while j < len(words) and _digits_only(words[j], 3, 3):
        j += 1
    if j < len(words) and _group_tail(words[j]):
        j += 1
    return j - i if j - i >= 2 else 0


def read(text: str) -> tuple[Reading, ...]:
    """Every number-like token of `text`, in order; cached, since every episode of a scenario
    shows the same tool outputs (the readings are immutable)."""
    return _read(text)


@lru_cache(maxsize=65536)
def _read(text: str) -> tuple[Reading, ...]:
    words = [w for w in (_trim(w) for w in _clean(text).split()) if w]
    found: list[Reading] = []
    i = 0
    while i < len(words):
        reading, used = None, 1
        phrase = _month_phrase(words, i)
        grouped = 0 if phrase else _space_group(words, i)
        if phrase:
            reading, used = phrase
        elif grouped:
            reading, used = _read_one(" ".join(words[i : i + grouped])), grouped
        elif _number_word(words[i]):
            j = i + 1
            while j < len(words):
                if _number_word(words[j]):
                    j += 1
                elif (
                    words[j].lower() == "and" and j + 1 < len(words) and _number_word(words[j + 1])
                ):
                    j += 2
                else:
                    break
            chunk = words[i:j]
            parts = [p for w in chunk for p in w.lower().split("-") if p != "and"]
            value = _spelled_value(parts)
            text_ = " ".join(chunk)
            single = len(chunk) == 1 and "-" not in text_
            reading = (
                Reading(text_, "unreadable", text_)
                if value is None
                else Reading(text_, "number", str(value), single)
            )
            used = j - i
        else:
            reading = _read_one(words[i])
        if reading is not None and reading.kind == "number" and not reading.text.endswith("%"):
            nxt = [w.lower() for w in words[i + used : i + used + 2]]
            extra = 1 if nxt[:1] == ["percent"] else 2 if nxt == ["per", "cent"] else 0
            if extra:
                text_ = " ".join(words[i : i + used + extra])
                reading = Reading(text_, "percent", _scaled(reading.value, -2))
                used += extra
        if reading is not None:
            found.append(reading)
        i += used
    return tuple(found)


# what the tools showed ------------------------------------------------------------------------


@dataclass
class Seen:
    """One call's keys, by kind of citation they can support."""

    numbers: set[str]
    days: set[str]
    months: set[str]
    month_days: set[str]
    ids: set[str]
    words: set[str]

    @classmethod
    def empty(cls) -> Seen:
        return cls(set(), set(), set(), set(), set(), set())

    def add_reading(self, r: Reading) -> None:
        if r.kind in ("number", "year"):
            self.numbers.add(r.value)
        elif r.kind == "percent":
            self.numbers.update((r.value, _scaled(r.value, 2)))
        elif r.kind == "date":
            days = r.value.split("|")
            self.days.update(days)
            stamp = re.search(r"T(\d{1,2}):", r.text) if len(days) == 1 else None
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
        if isinstance(value, dict):
            for key, item in value.items():
                self.add_json(key)
                self.add_json(item)
        elif isinstance(value, list):
            for item in value:
                self.add_json(item)
        elif isinstance(value, str):
            for r in read(value):
                self.add_reading(r)
        elif isinstance(value, bool) or value is None:
            return
        elif isinstance(value, int):
            self.numbers.add(str(abs(value)))
        elif isinstance(value, float | Decimal):
            number = Decimal(str(value))  # no context arithmetic: huge exponents overflow it
            if number.is_finite() and abs(number.adjusted()) <= 60:  # beyond: no match, and
                self.numbers.add(_decimal_text(number.copy_abs()))  # too many digits to write

    def minus(self, other: Seen) -> Seen:
        return Seen(*(getattr(self, f) - getattr(other, f) for f in _SEEN_FIELDS))

    def both(self, other: Seen) -> Seen:
        return Seen(*(getattr(self, f) & getattr(other, f) for f in _SEEN_FIELDS))

    def union(self, other: Seen) -> Seen:
        return Seen(*(getattr(self, f) | getattr(other, f) for f in _SEEN_FIELDS))

    def backs(self, r: Reading) -> bool:
        """Does this call support the cited reading? Days imply their months and month-days."""
        months = self.months | {d[:7] for d in self.days}
        if r.kind == "number":
            return r.value in self.numbers
        if r.kind == "percent":
            return r.value in self.numbers or _scaled(r.value, 2) in self.numbers
        if r.kind == "date":
            return any(d in self.days for d in r.value.split("|"))
        if r.kind == "month":
            return r.value in months
        if r.kind == "month_day":
            return r.value in self.month_days or any(d[4:] == r.value[1:] for d in self.days)
        if r.kind == "year":
            return r.value in self.numbers or any(m[:4] == r.value for m in months)
        if r.kind == "id":
            return r.value in self.ids
        if r.kind == "word":
            return r.value in self.words
        return False


_SEEN_FIELDS = ("numbers", "days", "months", "month_days", "ids", "words")


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


def call_views(tool_log: Iterable[ToolRecord], own_notes: set[str]) -> list[tuple[Seen, Seen]]:
    """Per call, (what it showed that the agent did not supply, what only echoed the agent).
    `own_notes`: ids of the credit notes this episode added (from the database diff)."""
    views = []
    for record in tool_log:
        if record.is_error or record.name == "submit_findings":
            views.append((Seen.empty(), Seen.empty()))
            continue
        result = _loads(record.result)
        if record.name == "draft_credit_note":
            views.append((Seen.empty(), _seen(result)))
            continue
        echoed_parts: list[Any] = []
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
        supplied = _seen(_loads(record.arguments or "{}", parse_float=Decimal))
        views.append((shown.minus(supplied), shown.both(supplied).union(_seen(*echoed_parts))))
    return views


# the verdict ----------------------------------------------------------------------------------


def _citations(findings: Findings) -> list[tuple[Reading, str]]:
    cited: list[tuple[Reading, str]] = []
    for item in findings.affected_invoices:
        cited.append((Reading(item.invoice_id, "id", item.invoice_id), "invoice_id"))
        amount = _decimal_text(Decimal(item.overcharge_amount))
        cited.append((Reading(item.overcharge_amount, "number", amount), "amount"))
    cited.extend((r, "summary") for r in read(findings.summary))
    unique: dict[tuple[Reading, str], None] = {}
    for entry in cited:
        unique.setdefault(entry, None)
    return list(unique)


def trace_findings(findings: Findings, views: list[tuple[Seen, Seen]]) -> list[Traced]:
    items = findings.affected_invoices
    total = None
    if len(items) > 1:
        total = _decimal_text(sum((Decimal(i.overcharge_amount) for i in items), Decimal(0)))
    traced = []
    for reading, where in _citations(findings):
        allowed = reading.kind == "time" or (
            reading.kind == "number"
            and ((reading.whole and int(reading.value) <= 12) or reading.value == total)
        )
        found = tuple(n for n, (shown, _) in enumerate(views) if shown.backs(reading))
        echoed = tuple(n for n, (_, echo) in enumerate(views) if echo.backs(reading))
        if found:
            status, sources = "evidence", found
        elif allowed:
            status, sources = "allowed", ()
        elif echoed:
            status, sources = "echo_only", echoed
        else:
            status, sources = "untraceable", ()
        traced.append(Traced(reading.text, where, reading.value, status, sources, allowed))
    return traced


def grounded(traced: list[Traced]) -> bool:
    """Nothing unfounded, and at least one found fact that is not a count, time or own total."""
    if any(t.status in ("echo_only", "untraceable") for t in traced):
        return False
    return any(t.status == "evidence" and not t.allowed_kind for t in traced)
