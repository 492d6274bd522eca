"""One word's reading: the reward's side of rewards/README.md G2.4 (the token grammar).

`read_word` reads one stripped word or joined phrase as an id, a date, a month, a time of day,
a number in any notation, spelled-out cardinals, or any other word with a digit, read whole;
what cannot be read unambiguously is `unreadable` (fail closed). Splitting a text into words and
phrases is `rewards.numbers`'s job. The grader implements the same grammar apart
(`eval/grounding/notation.py`); `python -m checks.reading_parity` holds the two equal.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from datetime import date
from decimal import Context, Decimal, InvalidOperation
from functools import lru_cache
from typing import Literal

Kind = Literal[
    "number", "percent", "date", "month", "month_day", "year", "id", "word", "time", "unreadable"
]

CURRENCY_CODES = ("USD", "EUR", "GBP", "CAD", "AUD")
# G2.4 currency marks, glued before or after the digits or standing alone (G2.3); any ASCII case
CURRENCY_MARKS = ("$", "€", "£", "C$", "A$", "US$", "CA$", "AU$", *CURRENCY_CODES)
MARK = r"(?:(?i:US\$|CA\$|AU\$|C\$|A\$|USD|EUR|GBP|CAD|AUD)|[$€£])"
_MONTHS = {
    name: number
    for number, names in enumerate(
        (
            ("jan", "january"),
            ("feb", "february"),
            ("mar", "march"),
            ("apr", "april"),
            ("may",),
            ("jun", "june"),
            ("jul", "july"),
            ("aug", "august"),
            ("sep", "sept", "september"),
            ("oct", "october"),
            ("nov", "november"),
            ("dec", "december"),
        ),
        1,
    )
    for name in names
}
_UNIT_WORDS = (
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
    "fifteen sixteen seventeen eighteen nineteen"
)
_UNITS = {word: value for value, word in enumerate(_UNIT_WORDS.split())}
_TENS = dict(
    zip(
        ("twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"),
        range(20, 100, 10),
        strict=True,
    )
)
_SCALES = {"thousand": 1000, "million": 1_000_000, "billion": 1_000_000_000}
_ID = re.compile(r"(?:INV|CUS|SUB|PAY|CN|PLN)-[0-9A-Z]+", re.IGNORECASE | re.ASCII)
_ISO = re.compile(
    r"([0-9]{4})-([0-9]{1,2})-([0-9]{1,2})"
    r"(?:T([0-9]{1,2}):[0-9]{2}(?::[0-9]{2}(?:\.[0-9]+)?)?(?:Z|[+-][0-9]{2}:?[0-9]{2})?)?"
)
_YMD = re.compile(r"([0-9]{4})/([0-9]{1,2})/([0-9]{1,2})")
_DMY = re.compile(r"([0-9]{1,2})([./-])([0-9]{1,2})\2([0-9]{4})")
_DMY2 = re.compile(r"([0-9]{1,2})/([0-9]{1,2})/([0-9]{2})")
_YM = re.compile(r"([0-9]{4})-([0-9]{2})")
_TIME = re.compile(
    r"([0-9]{1,2}):([0-5][0-9])(?::[0-5][0-9])?((?:am|pm)?)", re.IGNORECASE | re.ASCII
)
_HOUR = re.compile(r"([0-9]{1,2})(am|pm)", re.IGNORECASE | re.ASCII)
_NUMBER = re.compile(
    rf"[+-]?(?P<pre>{MARK})?[+-]?"
    r"(?P<body>[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?"  # plain, optional exponent
    r"|[0-9]{1,3}(?:,[0-9]{3})+(?:\.[0-9]+)?"  # 1,234.88
    r"|[0-9]{1,3}(?:_[0-9]{3})+(?:\.[0-9]+)?"  # 1_234.88
    r"|[0-9]{1,3}(?:'[0-9]{3})+(?:\.[0-9]+)?"  # 1'234.88
    r"|[0-9]{1,3}(?: [0-9]{3})+(?:[.,][0-9]+)?"  # 1 234,88 (joined phrase)
    r"|[0-9]{1,3}(?:\.[0-9]{3})+,[0-9]+"  # 1.234,88
    r"|[0-9]+,[0-9]{1,2})"  # 234,88
    rf"(?P<suf>%|{MARK}|(?i:st|nd|rd|th)|-[A-Za-z]+)?",
    re.ASCII,
)
DAY = re.compile(r"([0-9]{1,2})(?:st|nd|rd|th)?", re.IGNORECASE | re.ASCII)
YEAR = re.compile(r"[0-9]{4}")
_DECIMAL_COMMA = re.compile(r"[0-9]{1,3}(?:\.[0-9]{3})+,[0-9]+|[0-9]+,[0-9]{1,2}")
_ASCII_DIGIT = re.compile("[0-9]")
_MAX_EXPONENT = 30
_EXACT = Context(prec=10_000)  # shifting a decimal point must never round
_MARK_WORDS = frozenset(m.upper() for m in CURRENCY_MARKS)
_MARKS_UPPER = _MARK_WORDS | {"%"}
_FOLD = str.maketrans("abcdefghijklmnopqrstuvwxyz", "ABCDEFGHIJKLMNOPQRSTUVWXYZ")


def fold(text: str) -> str:
    """G2.1 case folding: ASCII letters only (`ß` stays `ß`, `ı` stays `ı`)."""
    return text.translate(_FOLD) if not text.isascii() else text.upper()


def is_mark(word: str) -> bool:
    """G2.3: a currency mark standing alone (`USD`, `usd`, `A$`, `€`)."""
    return fold(word) in _MARK_WORDS


@dataclass(frozen=True)
class Token:
    """One number-like token. `value` by kind: number/percent a canonical decimal (a percent as
    its rate), date an ISO day or readings joined by "|", month "YYYY-MM", month_day "--MM-DD",
    year "YYYY", id and word the upper-case text; `integer` marks a plain whole number (a count
    candidate, rewards/README.md G3)."""

    raw: str
    kind: Kind
    value: str
    integer: bool = False

    @property
    def negative(self) -> bool:
        """G2.5: a number with a `-` before its first digit (`-12.40`, `$-12.40`, `USD -12.40`)."""
        return self.kind == "number" and _negative(self.raw)


@lru_cache(maxsize=65536)
def _negative(raw: str) -> bool:
    head = _ASCII_DIGIT.split(raw, maxsplit=1)
    return len(head) == 2 and "-" in head[0]


def canonical(digits: str) -> str:
    """'1234.50' -> '1234.5'; '007' -> '7'; a Decimal-readable string."""
    value = Decimal(digits)
    text = format(value, "f")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    text = text.lstrip("0") or "0"
    return "0" + text if text.startswith(".") else text


def shift(value: str, places: int) -> str:
    """Moves the decimal point, exactly: ('8.25', -2) -> '0.0825'."""
    return canonical(format(Decimal(value).scaleb(places, _EXACT), "f"))


def _valid(year: int, month: int, day: int) -> bool:
    try:
        date(year, month, day)
    except ValueError:
        return False
    return True


def _iso(year: int, month: int, day: int) -> str:
    return f"{year:04d}-{month:02d}-{day:02d}"


def _date_token(raw: str, readings: list[tuple[int, int, int]]) -> Token:
    """Every valid calendar reading, joined by "|"; none valid: unreadable (G2, fail closed)."""
    if len(readings) == 1:  # the common case: no set to build and sort
        try:
            return Token(raw, "date", date(*readings[0]).isoformat())  # = _iso when valid
        except ValueError:
            return Token(raw, "unreadable", raw)
    valid = sorted({_iso(*r) for r in readings if _valid(*r)})
    return Token(raw, "date", "|".join(valid)) if valid else Token(raw, "unreadable", raw)


def month_word(word: str) -> int | None:
    key = word.rstrip(".")
    if key == "may":  # lower-case "may" is the verb
        return None
    return _MONTHS.get(key.lower())


def number_word_value(words: list[str]) -> int | None:
    """Spelled-out cardinals -> value; None for a run no one would write (`one two`)."""
    parts = [p for w in words for p in w.lower().split("-") if p != "and"]
    total, current, last = 0, 0, ""
    for part in parts:
        if part in _UNITS:
            if last in ("unit", "teen"):
                return None
            current += _UNITS[part]
            last = "teen" if _UNITS[part] >= 10 else "unit"
        elif part in _TENS:
            if last in ("unit", "teen", "tens"):
                return None
            current += _TENS[part]
            last = "tens"
        elif part == "hundred":
            if last == "hundred":
                return None
            current = (current or 1) * 100
            last = "hundred"
        elif part in _SCALES:
            if last == "scale":
                return None
            total += (current or 1) * _SCALES[part]
            current, last = 0, "scale"
        else:
            return None
    return total + current


def is_number_word(word: str) -> bool:
    parts = word.lower().split("-")
    return all(p in _UNITS or p in _TENS or p == "hundred" or p in _SCALES for p in parts)


def _read_number(word: str) -> Token | None:
    match = _NUMBER.fullmatch(word)
    if match is None:
        return None
    body, suffix, prefix = match["body"], match["suf"] or "", match["pre"] or ""
    if " " in body:  # 1 234,88 or 1 234.88
        body = body.replace(" ", "").replace(",", ".")
    elif _DECIMAL_COMMA.fullmatch(body):  # 1.234,88 and 234,88
        body = body.replace(".", "").replace(",", ".")
    else:
        body = body.replace(",", "").replace("_", "").replace("'", "")
    plain = not prefix and not suffix and body.isdigit()
    if suffix and suffix[0] in "-sSnNrRtT" and not body.isdigit():
        return None  # `14-day`, `15th` take whole numbers only
    if "e" in body.lower():
        mantissa, _, exponent = body.lower().partition("e")
        if abs(int(exponent)) > _MAX_EXPONENT:
            return Token(word, "unreadable", word)
        body = format(Decimal(mantissa).scaleb(int(exponent), _EXACT), "f")
    value = canonical(body)
    if suffix == "%":
        return Token(word, "percent", shift(value, -2))
    if plain and len(body) == 4 and 1900 <= int(body) <= 2099 and word == body:
        return Token(word, "year", body, integer=True)
    # a count candidate (G3) is a whole number without currency
    integer = body.isdigit() and not prefix and suffix.upper() not in _MARKS_UPPER
    return Token(word, "number", value, integer=integer)


def _read_date(word: str) -> Token | None:
    if match := _ISO.fullmatch(word):
        return _date_token(word, [(int(match[1]), int(match[2]), int(match[3]))])
    if match := _YMD.fullmatch(word):
        return _date_token(word, [(int(match[1]), int(match[2]), int(match[3]))])
    if match := _DMY.fullmatch(word):
        a, b, year = int(match[1]), int(match[3]), int(match[4])
        readings = [(year, b, a)] if match[2] == "." else [(year, b, a), (year, a, b)]
        return _date_token(word, readings)
    if match := _DMY2.fullmatch(word):
        a, b, year = int(match[1]), int(match[2]), 2000 + int(match[3])
        return _date_token(word, [(year, b, a), (year, a, b)])
    if match := _YM.fullmatch(word):
        month = int(match[2])
        return Token(word, "month", word) if 1 <= month <= 12 else Token(word, "unreadable", word)
    return None


def _read_time(word: str) -> Token | None:
    """G2.4 times of day: allowed (G3), never evidence (G7)."""
    if match := _TIME.fullmatch(word):
        limit = 12 if match[3] else 23
        if int(match[1]) <= limit:
            return Token(word, "time", word)
        return None
    if (match := _HOUR.fullmatch(word)) and 1 <= int(match[1]) <= 12:
        return Token(word, "time", word)
    return None


@lru_cache(maxsize=65536)  # a word reads the same wherever it stands; tokens are frozen
def read_word(word: str) -> Token | None:
    """G2.4 (rule 4) for one stripped word or joined phrase; None when it is not number-like."""
    is_ascii = word.isascii()  # then a digit is 0-9, and only a digit is numeric
    if is_ascii:
        has_digit = _ASCII_DIGIT.search(word) is not None
    else:
        has_digit = any(c.isdigit() for c in word)
    if _ID.fullmatch(word) and (has_digit or word.isupper()):
        return Token(word, "id", word.upper())
    if not has_digit:
        if not is_ascii and any(unicodedata.numeric(c, None) is not None for c in word):
            return Token(word, "unreadable", word)
        return None
    if not is_ascii and any(
        not c.isascii() and unicodedata.numeric(c, None) is not None for c in word
    ):
        return Token(word, "unreadable", word)
    for reader in (_read_date, _read_time, _read_number):
        try:
            token = reader(word)
        except (InvalidOperation, ValueError):
            token = Token(word, "unreadable", word)
        if token is not None:
            return token
    return Token(word, "word", fold(word))


def day_token(words: list[str], year: int | None, month: int, day: int) -> Token:
    raw = " ".join(words)
    if year is None:
        ok = _valid(2000, month, day)  # a leap year: 29 February is a day
        return (
            Token(raw, "month_day", f"--{month:02d}-{day:02d}")
            if ok
            else Token(raw, "unreadable", raw)
        )
    return _date_token(raw, [(year, month, day)])
