"""How one word or phrase is written: the grader's reading of a single number-like token.

rewards/README.md G2.4: ids, dates, months, times of day, numbers in any notation (sign, currency
glued either side, one grouping style, exponent, `%`, ordinal or `-word`), any other word with a
digit read whole; what cannot be read unambiguously is `unreadable` (fail closed, G2). Phrases
and whole texts are `eval.grounding.read`'s job; this module knows nothing of tool outputs.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from datetime import date
from decimal import Context, Decimal, InvalidOperation
from functools import lru_cache

_PREC = Context(prec=10_000)
CODES = {"USD", "EUR", "GBP", "CAD", "AUD"}
SYMBOLS = {"$", "€", "£"}
# G2.4 currency marks (any ASCII case), longest first so that `CA$` is not read as `CA` + `$`
MARKS = ("US$", "CA$", "AU$", "USD", "EUR", "GBP", "CAD", "AUD", "C$", "A$", "$", "€", "£")
_UPPER = str.maketrans("abcdefghijklmnopqrstuvwxyz", "ABCDEFGHIJKLMNOPQRSTUVWXYZ")


def ascii_upper(text: str) -> str:
    """G2.1: case folding touches ASCII letters only (`ß`, `ı`, `İ` stay as written)."""
    return text.translate(_UPPER)


def currency_mark(word: str) -> bool:
    """G2.3: is this word a currency mark standing alone (`usd`, `A$`, `€`)?"""
    return ascii_upper(word) in MARKS


def _mark_prefix(body: str) -> str:
    head = ascii_upper(body[:3])
    return next((m for m in MARKS if head.startswith(m)), "")


def _mark_suffix(body: str) -> str:
    tail = ascii_upper(body[-3:])
    for mark in MARKS:
        if tail.endswith(mark) and body[-len(mark) - 1 : -len(mark)].isdigit():
            return body[-len(mark) :]
    return ""


_MONTH_NAMES = (
    "january february march april may june july august september october november december"
)
_MONTH_NUMBERS = {
    key: number
    for number, name in enumerate(_MONTH_NAMES.split(), 1)
    for key in (name, name[:3], *(("sept",) if number == 9 else ()))
}
_PREFIXES = ("INV-", "CUS-", "SUB-", "PAY-", "CN-", "PLN-")
_CLOCK = re.compile(r"\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?", re.ASCII)
_ASCII_DIGIT = re.compile("[0-9]")
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


def decimal_text(value: Decimal) -> str:
    """The canonical form numbers are compared in (G7): '1234.50' -> '1234.5', '007' -> '7'."""
    text = format(value, "f")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    text = text.lstrip("0")
    if not text or text.startswith("."):
        text = "0" + text
    return text


def scaled(value: str, places: int) -> str:
    """Moves the decimal point exactly, never rounding: ('8.25', -2) -> '0.0825'."""
    return decimal_text(Decimal(value).scaleb(places, _PREC))


def _calendar(year: int, month: int, day: int) -> str | None:
    try:
        return date(year, month, day).isoformat()
    except ValueError:
        return None


def _dates(text: str, candidates: list[tuple[int, int, int]]) -> Reading:
    """Every valid calendar reading, joined by "|"; none valid: unreadable (G2, fail closed)."""
    if len(candidates) == 1:  # the common case: no set to build and sort
        day = _calendar(*candidates[0])
        return Reading(text, "date", day) if day else Reading(text, "unreadable", text)
    days = sorted({d for d in (_calendar(*c) for c in candidates) if d})
    return Reading(text, "date", "|".join(days)) if days else Reading(text, "unreadable", text)


def month_of(word: str) -> int | None:
    if word.rstrip(".") == "may":  # the verb
        return None
    return _MONTH_NUMBERS.get(word.lower().rstrip("."))


def digits_only(text: str, low: int, high: int) -> bool:
    return text.isascii() and text.isdigit() and low <= len(text) <= high


def as_day(word: str) -> int | None:
    core = word[:-2] if word[-2:].lower() in ("st", "nd", "rd", "th") else word
    if digits_only(core, 1, 2) and int(core) <= 31:
        return int(core)
    return None


def _as_date(w: str) -> Reading | None:
    """G2.4 dates: ISO (a time allowed), 2026/03/15, 15.03.2026, 15/03/2026, 03-15-2026,
    15/03/26 (every valid reading); a month 2026-03."""
    if len(w) >= 8 and w[:4].isdigit() and w[4:5] == "-":
        date_part, stamp, rest = w.partition("T")
        pieces = date_part.split("-")
        shaped = len(pieces) == 3 and all(digits_only(p, 1, 4) for p in pieces)
        shaped = shaped and len(pieces[0]) == 4 and len(pieces[1]) <= 2 and len(pieces[2]) <= 2
        if shaped and (not stamp or _CLOCK.fullmatch(rest)):  # a bare `T` is no date
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
    if len(pieces) == 2 and digits_only(pieces[0], 4, 4) and digits_only(pieces[1], 2, 2):
        if 1 <= int(pieces[1]) <= 12:
            return Reading(w, "month", w)
        return Reading(w, "unreadable", w)
    return None


def _as_time(w: str) -> Reading | None:
    """G2.4 times of day (`02:30`, `2:30:00`, `10am`): allowed (G3), never evidence (G7)."""
    lower = w.lower()
    meridiem = lower.endswith(("am", "pm"))
    core = lower[:-2] if meridiem else lower
    pieces = core.split(":")
    if len(pieces) == 1:
        if meridiem and digits_only(core, 1, 2) and 1 <= int(core) <= 12:
            return Reading(w, "time", w)
        return None
    if len(pieces) > 3 or not digits_only(pieces[0], 1, 2):
        return None
    if not all(digits_only(p, 2, 2) and int(p) <= 59 for p in pieces[1:]):
        return None
    if int(pieces[0]) <= (12 if meridiem else 23):
        return Reading(w, "time", w)
    return None


def _affixes(w: str) -> tuple[str, str, str, bool]:
    """(body, prefix, suffix, ok): sign, currency and unit affixes peeled off."""
    body, prefix, suffix = w, "", ""
    body = body[1:] if body[:1] in "+-" else body
    prefix = _mark_prefix(body)
    body = body[len(prefix) :]
    body = body[1:] if body[:1] in "+-" else body
    mark = _mark_suffix(body)
    if body.endswith("%"):
        suffix, body = body[-1], body[:-1]
    elif mark:
        suffix, body = mark, body[: -len(mark)]
    elif body[-2:].lower() in ("st", "nd", "rd", "th") and body[-3:-2].isdigit():
        suffix, body = body[-2:], body[:-2]
    else:
        head, dash, tail = body.rpartition("-")
        if dash and tail.isascii() and tail.isalpha() and head[-1:].isdigit():
            suffix, body = "-" + tail, head
    return body, prefix, suffix, bool(body) and body[0].isdigit()


def _as_number(w: str) -> Reading | None:
    """G2.4 numbers; `whole` marks a whole number without currency, a count candidate (G3)."""
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
    unit = bool(suffix) and suffix != "%" and ascii_upper(suffix) not in MARKS
    if unit and not digits.isdigit():
        return None  # ordinals and `14-day` take whole numbers
    if "e" in digits.lower():
        mantissa, exponent = re.split("[eE]", digits)
        if abs(int(exponent)) > 30:
            return Reading(w, "unreadable", w)
        digits = format(Decimal(mantissa).scaleb(int(exponent), _PREC), "f")
    value = decimal_text(Decimal(digits))
    if suffix == "%":
        return Reading(w, "percent", scaled(value, -2))
    if w.isdigit() and len(w) == 4 and "1900" <= w <= "2099":
        return Reading(w, "year", w, True)
    money = bool(prefix) or ascii_upper(suffix) in MARKS
    return Reading(w, "number", value, digits.isdigit() and not money)


def _is_numeric_char(ch: str) -> bool:
    return unicodedata.numeric(ch, None) is not None


@lru_cache(maxsize=65536)  # a word reads the same wherever it stands; readings are frozen
def read_word(w: str) -> Reading | None:
    """G2.4 for one stripped word or joined phrase; None when it is not number-like."""
    is_ascii = w.isascii()  # then a digit is 0-9, and only a digit is numeric
    digit = _ASCII_DIGIT.search(w) is not None if is_ascii else any(ch.isdigit() for ch in w)
    upper = ascii_upper(w)
    if is_ascii and upper.startswith(_PREFIXES):
        rest = upper.split("-", 1)[1]
        if rest and rest.isascii() and rest.isalnum() and (digit or w == upper):
            return Reading(w, "id", upper)
    if not digit:
        numeric = not is_ascii and any(map(_is_numeric_char, w))
        return Reading(w, "unreadable", w) if numeric else None
    if not is_ascii and any(not ch.isascii() and _is_numeric_char(ch) for ch in w):
        return Reading(w, "unreadable", w)
    for reader in (_as_date, _as_time, _as_number):
        try:
            found = reader(w)
        except (InvalidOperation, ValueError):
            return Reading(w, "unreadable", w)
        if found is not None:
            return found
    return Reading(w, "word", upper)


def day_reading(text: str, year: int | None, month: int, day: int) -> Reading:
    """A month-name date (G2.3): a date with a year, else a month-day valid in a leap year."""
    if year is not None:
        return _dates(text, [(year, month, day)])
    if _calendar(2000, month, day):
        return Reading(text, "month_day", f"--{month:02d}-{day:02d}")
    return Reading(text, "unreadable", text)
