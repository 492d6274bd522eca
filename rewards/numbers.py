"""The number reader: every number-like token of a text, normalised whatever its notation.

One reader serves both sides of the provenance check (design §5): the findings' summary and
every string of a tool output. It implements the token grammar of rewards/README.md G2 (one
specification; the grader implements it apart in `eval/grounding/read.py` and `notation.py`,
and `python -m checks.reading_parity` holds the two equal token by token). This module is
G2.1-G2.3 (normalise, words and their boundaries, phrases); one word is `rewards.tokens`'s job.
It fails closed: what cannot be read unambiguously is `unreadable` (for a citation, untraceable).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache

from rewards.display import visible
from rewards.pieces import chunks, pieces, separator
from rewards.tokens import (
    CURRENCY_CODES,
    CURRENCY_MARKS,
    DAY,
    MARK,
    YEAR,
    Token,
    canonical,
    day_token,
    is_mark,
    is_number_word,
    month_word,
    number_word_value,
    read_word,
    shift,
)

__all__ = [
    "CURRENCY_CODES",
    "CURRENCY_MARKS",
    "OPERATORS",
    "Token",
    "canonical",
    "normalise",
    "read_items",
    "read_text",
    "read_word",
    "shift",
]

# G2.2: operator words (a calculation's operators and its `=`, G10.1)
OPERATORS = frozenset(("+", "-", "x", "X", "×", "·", "*", "/", "÷", "="))
_GLUED_OPS = "*xX/"  # G2.2: split inside a word only between two numbers (`/`: ids, dates too)
_SLASHED = ("number", "id", "date")
_EDGE = "()[]{}<>«»‹›\"“”„‟'`,;:!?*_|#~"
_SPACED = {"=": " = ", "×": " × ", "·": " · ", "÷": " ÷ "}
_CHARS = {"−": "-", "‐": "-", "‑": "-", "’": "'", "‘": "'", "٫": ".", "٬": ","}
_CHARS.update({d: " - " for d in "‒–—―"})
_CHARS.update(_SPACED)
_OPEN, _DATE_OPEN, _CLOSED = 2, 1, 0  # G2.2 boundaries
_GROUP_HEAD = re.compile(rf"[+-]?{MARK}?[0-9]{{1,3}}", re.ASCII)
_GROUP_LAST = re.compile(rf"[0-9]{{3}}[.,][0-9]+(?:%|{MARK})?", re.ASCII)


def normalise(text: str) -> str:
    """rewards/README.md G2.1: the Unicode step of G2.0 (`visible`), NFKC, decimal digits to
    ASCII, dashes, quotes, spaced signs."""
    text = visible(text)
    if text.isascii():  # NFKC leaves ASCII as it is
        return text.replace("=", " = ") if "=" in text else text
    text = unicodedata.normalize("NFKC", text)
    out = []
    for ch in text:
        if ch.isascii():
            out.append(" = " if ch == "=" else ch)
            continue
        digit = unicodedata.decimal(ch, None)
        out.append(str(digit) if digit is not None else _CHARS.get(ch, ch))
    return "".join(out)


@dataclass(frozen=True)
class _Cut:
    """A word after G2.2's stripping: the core, and what was cut from its left and right."""

    core: str
    left: str
    right: str


@lru_cache(maxsize=65536)  # the same words recur across tool outputs
def _cut(word: str) -> _Cut:
    """G2.2: edge punctuation, trailing dots, a possessive; repeatedly."""
    core = word
    while True:
        before = core
        core = core.strip(_EDGE).rstrip(".")
        if core.endswith(("'s", "'S")):
            core = core[:-2]
        if core == before:
            break
    if not core:
        return _Cut("", word, "")
    start = word.find(core)
    return _Cut(core, word[:start], word[start + len(core) :])


@lru_cache(maxsize=65536)
def _glued(core: str) -> tuple[str, str, str] | None:
    """G2.2: a glued operator in a word that reads as a plain word: one `/` between two
    numbers, two ids or two dates (`1027.03/3`, `INV-A1/INV-B2`), else one of `* x X` between
    two numbers (`2*306.16`, `306.16x2`) -> (a, operator, b); None to read it whole."""
    whole = read_word(core)
    if whole is None or whole.kind != "word":
        return None
    if core.count("/") == 1:
        i = core.index("/")
        a, b = read_word(core[:i]), read_word(core[i + 1 :])
        if a is not None and b is not None and a.kind == b.kind in _SLASHED:
            return core[:i], "/", core[i + 1 :]
    found = [i for i, ch in enumerate(core) if ch in "*xX"]
    if len(found) != 1:
        return None
    i = found[0]
    a, b = read_word(core[:i]), read_word(core[i + 1 :])
    if a is None or b is None or a.kind != "number" or b.kind != "number":
        return None
    return core[:i], core[i], core[i + 1 :]


def _words(text: str) -> list[tuple[str, int, bool, bool]]:
    """G2.2: words, each with its boundary with the word before (open, date-open, closed),
    whether it is an operator, and whether an override before it makes it unreadable."""
    entries: list[tuple[str, int, bool, bool]] = []
    for line in normalise(text).splitlines():
        tail: str | None = None  # what the word before lost at its right; None: closed
        words, reversed_from = chunks(line)
        for n, chunk in enumerate(words):
            reversed_ = n >= reversed_from
            for raw in pieces(chunk):
                cut = _Cut(raw, "", "") if raw in OPERATORS else _cut(raw)
                if separator(raw) and raw not in OPERATORS:
                    cut = _Cut("", raw, "")  # a separator is dropped, like punctuation
                if not cut.core or cut.core in OPERATORS:
                    if cut.core:
                        entries.append((cut.core, _CLOSED, True, reversed_))
                    tail = None  # an operator or a dropped word closes the boundary
                    continue
                link = _CLOSED
                if tail is not None and not cut.left:
                    link = _OPEN if not tail else _DATE_OPEN if _dots(tail) else _CLOSED
                glued = _glued(cut.core) if any(c in cut.core for c in _GLUED_OPS) else None
                if glued:
                    a, op, b = glued
                    entries += [(a, link, False, reversed_), (op, _CLOSED, True, reversed_),
                                (b, _CLOSED, False, reversed_)]  # fmt: skip
                else:
                    entries.append((cut.core, link, False, reversed_))
                tail = cut.right
    return entries


def _dots(tail: str) -> bool:
    """G2.2: only dots and commas were cut (`Oct.,`): a month-name date may join across."""
    return not tail.strip(".,")


class _Line:
    """The words of a text with their boundaries: what G2.3 may join."""

    def __init__(self, text: str) -> None:
        entries = _words(text)
        self.words = [e[0] for e in entries]
        self.links = [e[1] for e in entries]
        self.ops = [e[2] for e in entries]
        self.reversed = [e[3] for e in entries]

    def joins(self, i: int, n: int, date: bool = False) -> bool:
        """May words[i : i + n] be one phrase (every inner boundary open, or date-open)?"""
        if i + n > len(self.words):
            return False
        least = _DATE_OPEN if date else _OPEN
        return all(self.links[k] >= least for k in range(i + 1, i + n))


@lru_cache(maxsize=65536)
def read_text(text: str) -> tuple[Token, ...]:
    """Every number-like token of `text`, in order (rewards/README.md G2)."""
    return tuple(item for item in _items(text) if isinstance(item, Token))


@lru_cache(maxsize=4096)
def read_items(text: str) -> tuple[Token | str | None, ...]:
    """rewards/README.md G2.6: the words and phrases of `text` in order, each read as G2
    reads it (a Token, or None for a word that is not number-like); an operator word (G2.2)
    is kept as that string."""
    return _items(text)


def _items(text: str) -> tuple[Token | str | None, ...]:
    line = _Line(text)
    items: list[Token | str | None] = []
    i = 0
    while i < len(line.words):
        if line.ops[i]:
            items.append(line.words[i])
            i += 1
            continue
        token, used = _read_at(line, i)
        if token is not None and any(line.reversed[i : i + used]):
            token = Token(token.raw, "unreadable", token.raw)  # G2.2: after an override
        items.append(token)
        i += used
    return tuple(items)


def _read_at(line: _Line, i: int) -> tuple[Token | None, int]:
    """G2.3: the phrase at words[i]: a currency mark before a number, the number's phrase,
    `percent` / `%` after it, a mark after it."""
    words = line.words
    if is_mark(words[i]) and line.joins(i, 2) and not line.ops[i + 1]:
        token, used = _number_at(line, i + 1)
        if token is not None and token.kind == "number":
            return Token(f"{words[i]} {token.raw}", "number", token.value), used + 1
    token, used = _number_at(line, i)
    if (
        token is not None
        and token.kind == "number"
        and line.joins(i, used + 1)
        and not line.ops[i + used]
        and is_mark(words[i + used])
    ):
        return Token(f"{token.raw} {words[i + used]}", "number", token.value), used + 1
    return token, used


def _number_at(line: _Line, i: int) -> tuple[Token | None, int]:
    """The word or phrase at words[i] (G2.3-G2.4), `percent`, `per cent` or `%` after a number
    included."""
    words = line.words
    if _may_join(words[i]):
        token, used = _phrase(line, i)
    else:
        token, used = read_word(words[i]), 1
    if token is not None and token.kind == "number" and not token.raw.endswith("%"):
        extra = _percent_word(line, i + used)
        if extra:
            rate = shift(token.value, -2)
            token = Token(" ".join(words[i : i + used + extra]), "percent", rate)
            used += extra
    return token, used


def _percent_word(line: _Line, i: int) -> int:
    """G2.3: words right after a number that make it a percentage."""
    words = line.words
    if i >= len(words) or line.ops[i] or not line.joins(i - 1, 2):
        return 0
    if words[i] == "%" or words[i].lower() == "percent":
        return 1
    if line.joins(i, 2) and words[i].lower() == "per" and words[i + 1].lower() == "cent":
        return 2
    return 0


@lru_cache(maxsize=65536)
def _may_join(word: str) -> bool:
    """Can a phrase (G2.3) start at this word? False: `_phrase` would read it on its own."""
    if len(word) > 7 and any("0" <= c <= "9" for c in word):
        return False  # longer than a day or a group head; no month or number word has a digit
    day = DAY.fullmatch(word)
    return bool(
        (day and int(day[1]) <= 31)
        or month_word(word) is not None
        or _group_head(word)
        or is_number_word(word)
    )


def _phrase(line: _Line, i: int) -> tuple[Token | None, int]:
    named = _named_date(line, i)
    if named is not None:
        return named
    grouped = _grouped(line, i)
    if grouped:
        return read_word(" ".join(line.words[i : i + grouped])), grouped
    spelled = _spelled(line, i)
    if spelled is not None:
        return spelled
    return read_word(line.words[i]), 1


def _word_at(line: _Line, k: int) -> str | None:
    return None if k >= len(line.words) or line.ops[k] else line.words[k]


def _named_date(line: _Line, i: int) -> tuple[Token, int] | None:
    """G2.3: month-name dates starting at words[i], across open or date-open boundaries:
    (token, words used)."""
    words = line.words
    day = DAY.fullmatch(words[i])
    if day and int(day[1]) <= 31:
        j = i + 1
        if line.joins(i, 2, date=True) and (_word_at(line, j) or "").lower() == "of":
            j += 1
        word = _word_at(line, j)
        month = month_word(word) if word and line.joins(i, j - i + 1, date=True) else None
        if month is None:
            return None
        nxt = _word_at(line, j + 1)
        year = nxt if nxt and YEAR.fullmatch(nxt) and line.joins(j, 2, date=True) else None
        end = j + 2 if year else j + 1
        return day_token(words[i:end], int(year) if year else None, month, int(day[1])), end - i
    month = month_word(words[i])
    nxt = _word_at(line, i + 1)
    if month is None or nxt is None or not line.joins(i, 2, date=True):
        return None
    if YEAR.fullmatch(nxt):
        return Token(f"{words[i]} {nxt}", "month", f"{nxt}-{month:02d}"), 2
    day = DAY.fullmatch(nxt)
    if not day or int(day[1]) > 31:
        return None
    third = _word_at(line, i + 2)
    has_year = bool(third and YEAR.fullmatch(third) and line.joins(i + 1, 2, date=True))
    end = i + 3 if has_year else i + 2
    year_number = int(words[i + 2]) if has_year else None
    return day_token(words[i:end], year_number, month, int(day[1])), end - i


def _group_head(word: str) -> bool:
    """G2.3: a sign, a currency mark and 1-3 digits: `1`, `-12`, `$1`, `USD123`, `C$1`."""
    return _GROUP_HEAD.fullmatch(word) is not None


def _grouped(line: _Line, i: int) -> int:
    """G2.3: how many words from i form one space-grouped number (`1 234 567,89`), each
    boundary open; 0 for none."""
    words = line.words
    if not _group_head(words[i]):
        return 0
    j = i + 1
    while line.joins(j - 1, 2) and not line.ops[j] and _three(words[j]):
        j += 1
    if line.joins(j - 1, 2) and not line.ops[j] and _GROUP_LAST.fullmatch(words[j]):
        j += 1
    return j - i if j - i >= 2 else 0


def _three(word: str) -> bool:
    return len(word) == 3 and word.isascii() and word.isdigit()


def _spelled(line: _Line, i: int) -> tuple[Token, int] | None:
    """G2.3: a run of spelled-out cardinals across open boundaries; one unhyphenated word may
    be a count (G3)."""
    words = line.words
    if not is_number_word(words[i]):
        return None
    j = i + 1
    while line.joins(j - 1, 2) and not line.ops[j]:
        if is_number_word(words[j]):
            j += 1
        elif (
            words[j].lower() == "and"
            and line.joins(j, 2)
            and not line.ops[j + 1]
            and is_number_word(words[j + 1])
        ):
            j += 2
        else:
            break
    raw = " ".join(words[i:j])
    value = number_word_value(words[i:j])
    if value is None:
        return Token(raw, "unreadable", raw), j - i
    return Token(raw, "number", str(value), integer=j - i == 1 and "-" not in raw), j - i
