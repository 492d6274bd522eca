"""The number reader: every number-like token of a text, normalised whatever its notation.

One reader serves both sides of the provenance check (design §5): the findings' summary and
every string of a tool output. It fails closed (rewards/README.md G2): a token that looks numeric
but cannot be read unambiguously comes out `unreadable` (for a citation: untraceable). The grader
reads with its own implementation of the same rules (`eval/grounding/`); `python -m
checks.agreement` and `tests/rewards/test_numbers_properties.py` hold the two to the same verdicts.

The rules, in order (rewards/README.md G2.1-G2.4 states them for users):
 1. Normalise: NFKC (full-width digits and letters, non-breaking spaces), every Unicode decimal
    digit to its ASCII digit, `−` to `-`, `’` to `'`, en and em dashes to spaces, `=` to a word
    of its own (`seats=20`, the way tool arguments are written, reads as `seats`, `=`, `20`;
    no phrase joins across it, so `3 = 342.34` is two numbers).
 2. Split on whitespace into words; strip edge punctuation ( ( ) [ ] { } < > « » " ' , ; : ! ? * ),
    trailing dots and a possessive `'s`.
 3. Join phrases, left to right: a date with a month name (`15 March 2026`, `15th of March`,
    `March 15, 2026`, `Mar 15`, `March 2026`; month names in any case, except `may`, which must be
    capitalised); space-grouped digits (`1 234,88`); a number followed by `percent`/`per cent`;
    a run of spelled-out cardinals (`one hundred forty-eight`, "and" inside).
 4. Read each word or phrase:
    - an id (INV-, CUS-, SUB-, PAY-, CN-, PLN- then letters/digits) in any case if it has a digit,
      as printed (upper case) if it has none;
    - a date: ISO (`2026-03-15`, with or without a time), `2026/03/15`, `15.03.2026` (day first),
      `15/03/2026`, `03-15-2026`, `15/03/26` (every valid reading); a month `2026-03`;
      an invalid calendar date is unreadable;
    - a time of day (`02:30`, `2:30:00`, `10am`): allowed, never evidence;
    - a number: sign, currency symbol or code (`$ € £ USD EUR GBP CAD AUD`, glued either side, any
      case), digits with one grouping style (`1,234.88`, `1_234.88`, `1'234.88`, `1 234.88`,
      `1.234,88`, `234,88`), an exponent (`1.4820e2`), then `%`, an ordinal suffix or `-word`
      (`14-day`); canonical decimal value, percentages as their rate (`8.25%` -> 0.0825);
    - spelled-out cardinals: their integer value; an invalid run (`one two`) is unreadable;
    - any other word with a digit (`148.20x`, `1234.88.0`, `SAVE20`, `TXC-8G8K4K52`): read
      whole, upper case, and traceable only where a tool output has that same word;
    - a word with a numeric character that is not a decimal digit (`½`, `Ⅻ`): unreadable.
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
# G10.1: a calculation's operators and its `=`, each written as a word of its own
OPERATORS = frozenset(("+", "-", "x", "X", "×", "*", "/", "÷", "="))
_EDGE = "()[]{}<>«»\"',;:!?*"
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
_ID = re.compile(r"(?:INV|CUS|SUB|PAY|CN|PLN)-[0-9A-Z]+", re.IGNORECASE)
_ISO = re.compile(
    r"([0-9]{4})-([0-9]{1,2})-([0-9]{1,2})"
    r"(?:T([0-9]{1,2}):[0-9]{2}(?::[0-9]{2}(?:\.[0-9]+)?)?(?:Z|[+-][0-9]{2}:?[0-9]{2})?)?"
)
_YMD = re.compile(r"([0-9]{4})/([0-9]{1,2})/([0-9]{1,2})")
_DMY = re.compile(r"([0-9]{1,2})([./-])([0-9]{1,2})\2([0-9]{4})")
_DMY2 = re.compile(r"([0-9]{1,2})/([0-9]{1,2})/([0-9]{2})")
_YM = re.compile(r"([0-9]{4})-([0-9]{2})")
_TIME = re.compile(r"([0-9]{1,2}):([0-5][0-9])(?::[0-5][0-9])?((?:am|pm)?)", re.IGNORECASE)
_HOUR = re.compile(r"([0-9]{1,2})(am|pm)", re.IGNORECASE)
_CODE = "|".join(CURRENCY_CODES)
_NUMBER = re.compile(
    rf"[+-]?(?P<pre>[$€£]|(?i:{_CODE}))?[+-]?"
    r"(?P<body>[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?"  # plain, optional exponent
    r"|[0-9]{1,3}(?:,[0-9]{3})+(?:\.[0-9]+)?"  # 1,234.88
    r"|[0-9]{1,3}(?:_[0-9]{3})+(?:\.[0-9]+)?"  # 1_234.88
    r"|[0-9]{1,3}(?:'[0-9]{3})+(?:\.[0-9]+)?"  # 1'234.88
    r"|[0-9]{1,3}(?: [0-9]{3})+(?:[.,][0-9]+)?"  # 1 234,88 (joined phrase)
    r"|[0-9]{1,3}(?:\.[0-9]{3})+,[0-9]+"  # 1.234,88
    r"|[0-9]+,[0-9]{1,2})"  # 234,88
    rf"(?P<suf>%|[$€£]|(?i:{_CODE})|(?i:st|nd|rd|th)|-[A-Za-z]+)?"
)
_GROUP_HEAD = re.compile(rf"[+-]?(?:[$€£]|(?i:{_CODE}))?[0-9]{{1,3}}")
_GROUP_NEXT = re.compile(r"[0-9]{3}")
_GROUP_LAST = re.compile(rf"[0-9]{{3}}[.,][0-9]+(?:%|[$€£]|(?i:{_CODE}))?")
_DAY = re.compile(r"([0-9]{1,2})(?:st|nd|rd|th)?", re.IGNORECASE)
_YEAR = re.compile(r"[0-9]{4}")
_DECIMAL_COMMA = re.compile(r"[0-9]{1,3}(?:\.[0-9]{3})+,[0-9]+|[0-9]+,[0-9]{1,2}")
_ASCII_DIGIT = re.compile("[0-9]")
_MAX_EXPONENT = 30
_EXACT = Context(prec=10_000)  # shifting a decimal point must never round


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


def normalise(text: str) -> str:
    """rewards/README.md G2.1 (rule 1 above)."""
    if text.isascii():  # NFKC leaves ASCII as it is, and nothing below changes it
        return text.replace("=", " = ")
    text = unicodedata.normalize("NFKC", text).replace("=", " = ")
    if text.isascii():
        return text
    out = []
    for ch in text:
        if ch.isascii():
            out.append(ch)
            continue
        digit = unicodedata.decimal(ch, None)
        if digit is not None:
            out.append(str(digit))
        elif ch == "−":
            out.append("-")
        elif ch in "’‘":
            out.append("'")
        elif ch == "٫":  # Arabic decimal separator
            out.append(".")
        elif ch == "٬":  # Arabic thousands separator
            out.append(",")
        elif ch in "–—":
            out.append(" ")
        else:
            out.append(ch)
    return "".join(out)


@lru_cache(maxsize=65536)  # the same words recur across tool outputs
def _strip(word: str) -> str:
    """G2.2 (rule 2): edge punctuation, trailing dots, a possessive."""
    while True:
        before = word
        word = word.strip(_EDGE).rstrip(".")
        if word.endswith(("'s", "'S")):
            word = word[:-2]
        if word == before:
            return word


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


def _month_word(word: str) -> int | None:
    key = word.rstrip(".")
    if key == "may":  # lower-case "may" is the verb
        return None
    return _MONTHS.get(key.lower())


def _number_word_value(words: list[str]) -> int | None:
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


def _is_number_word(word: str) -> bool:
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
    integer = body.isdigit() and not prefix and suffix[:1] not in ("%", "$", "€", "£")
    integer = integer and not (suffix and suffix.upper() in CURRENCY_CODES)
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
    return Token(word, "word", word.upper())


def _named_date(words: list[str], i: int) -> tuple[Token, int] | None:
    """G2.3 (rule 3): month-name dates starting at words[i]: (token, words used)."""
    day = _DAY.fullmatch(words[i])
    if day and int(day[1]) <= 31:
        j = i + 1
        if j < len(words) and words[j].lower() == "of":
            j += 1
        month = _month_word(words[j]) if j < len(words) else None
        if month is None:
            return None
        year = words[j + 1] if j + 1 < len(words) and _YEAR.fullmatch(words[j + 1]) else None
        end = j + 2 if year else j + 1
        return _day_token(words[i:end], int(year) if year else None, month, int(day[1])), end - i
    month = _month_word(words[i])
    if month is None or i + 1 >= len(words):
        return None
    nxt = words[i + 1]
    if _YEAR.fullmatch(nxt):
        raw = " ".join(words[i : i + 2])
        return Token(raw, "month", f"{nxt}-{month:02d}"), 2
    day = _DAY.fullmatch(nxt)
    if not day or int(day[1]) > 31:
        return None
    has_year = i + 2 < len(words) and _YEAR.fullmatch(words[i + 2])
    end = i + 3 if has_year else i + 2
    year_number = int(words[i + 2]) if has_year else None
    return _day_token(words[i:end], year_number, month, int(day[1])), end - i


def _day_token(words: list[str], year: int | None, month: int, day: int) -> Token:
    raw = " ".join(words)
    if year is None:
        ok = _valid(2000, month, day)  # a leap year: 29 February is a day
        return (
            Token(raw, "month_day", f"--{month:02d}-{day:02d}")
            if ok
            else Token(raw, "unreadable", raw)
        )
    return _date_token(raw, [(year, month, day)])


def _grouped(words: list[str], i: int) -> int:
    """G2.3: how many words from i form one space-grouped number (`1 234 567,89`); 0 for none."""
    if not _GROUP_HEAD.fullmatch(words[i]):
        return 0
    j = i + 1
    while j < len(words) and _GROUP_NEXT.fullmatch(words[j]):
        j += 1
    if j < len(words) and _GROUP_LAST.fullmatch(words[j]):
        j += 1
    return j - i if j - i >= 2 else 0


def _spelled(words: list[str], i: int) -> tuple[Token, int] | None:
    """G2.3: a run of spelled-out cardinals; one unhyphenated word may be a count (G3)."""
    if not _is_number_word(words[i]):
        return None
    j = i + 1
    while j < len(words):
        if _is_number_word(words[j]):
            j += 1
        elif words[j].lower() == "and" and j + 1 < len(words) and _is_number_word(words[j + 1]):
            j += 2
        else:
            break
    raw = " ".join(words[i:j])
    value = _number_word_value(words[i:j])
    if value is None:
        return Token(raw, "unreadable", raw), j - i
    return Token(raw, "number", str(value), integer=j - i == 1 and "-" not in raw), j - i


def _percent_word(words: list[str], i: int) -> int:
    """G2.3: words after a number that make it a percentage: `percent` or `per cent`."""
    if i < len(words) and words[i].lower() == "percent":
        return 1
    if i + 1 < len(words) and words[i].lower() == "per" and words[i + 1].lower() == "cent":
        return 2
    return 0


@lru_cache(maxsize=65536)
def read_text(text: str) -> tuple[Token, ...]:
    """Every number-like token of `text`, in order (rules 1-4, rewards/README.md G2)."""
    words = [w for w in (_strip(w) for w in normalise(text).split()) if w]
    tokens: list[Token] = []
    i = 0
    while i < len(words):
        token, used = _read_at(words, i)
        if token is not None:
            tokens.append(token)
        i += used
    return tuple(tokens)


@lru_cache(maxsize=4096)
def read_items(text: str) -> tuple[Token | str | None, ...]:
    """rewards/README.md G10.1: the words and phrases of `text` in order, read as G2 reads
    them (a Token, or None for a word that is not number-like), except that a word that is an
    operator or `=` (edge punctuation aside; `*` before G2.2 strips it) is kept as that string
    (G2 reads it as no token)."""
    words = []
    for word in normalise(text).split():
        stripped = word if word in OPERATORS else _strip(word)
        if stripped:
            words.append(stripped)
    items: list[Token | str | None] = []
    i = 0
    while i < len(words):
        if words[i] in OPERATORS:
            items.append(words[i])
            i += 1
            continue
        token, used = _read_at(words, i)
        items.append(token)
        i += used
    return tuple(items)


def _read_at(words: list[str], i: int) -> tuple[Token | None, int]:
    """The word or phrase at words[i] (G2.3-G2.4, `percent` after a number included)."""
    if _may_join(words[i]):
        token, used = _phrase(words, i)
    else:
        token, used = read_word(words[i]), 1
    if token is not None and token.kind == "number" and not token.raw.endswith("%"):
        extra = _percent_word(words, i + used)
        if extra:
            rate = shift(token.value, -2)
            token = Token(" ".join(words[i : i + used + extra]), "percent", rate)
            used += extra
    return token, used


@lru_cache(maxsize=65536)
def _may_join(word: str) -> bool:
    """Can a phrase (G2.3) start at this word? False: `_phrase` would read it on its own (its
    last branch), every joiner finding nothing, so `_read_at` reads it straight away."""
    if len(word) > 7 and _ASCII_DIGIT.search(word):
        return False  # longer than a day or a group head, and no month or number word has a digit
    day = _DAY.fullmatch(word)
    return bool(
        (day and int(day[1]) <= 31)
        or _month_word(word) is not None
        or _GROUP_HEAD.fullmatch(word)
        or _is_number_word(word)
    )


def _phrase(words: list[str], i: int) -> tuple[Token | None, int]:
    named = _named_date(words, i)
    if named is not None:
        return named
    grouped = _grouped(words, i)
    if grouped:
        return read_word(" ".join(words[i : i + grouped])), grouped
    spelled = _spelled(words, i)
    if spelled is not None:
        return spelled
    return read_word(words[i]), 1
