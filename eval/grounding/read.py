"""The grader's number reader: every number-like token of a text, in order (rewards/README.md G2).

Text is normalised (G2.1), cut into words with the boundaries between them (G2.2: edge
punctuation, operators, glued operators, line breaks), joined into phrases across open
boundaries only (G2.3: month-name dates, space-grouped digits, spelled-out cardinals, `percent`
or `%`, a currency mark standing alone), then each word or phrase is read by
`eval.grounding.notation` (G2.4). Written apart from `rewards/numbers.py` on purpose (see
`eval/grounding/__init__.py`); `python -m checks.reading_parity` holds the two equal.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

from eval.grounding.display import shown_characters
from eval.grounding.notation import (
    MARKS,
    Reading,
    as_day,
    ascii_upper,
    currency_mark,
    day_reading,
    digits_only,
    month_of,
    read_word,
    scaled,
)
from eval.grounding.pieces import line_words, separated

_ASCII_DIGIT = re.compile("[0-9]")
_STRIP = set("()[]{}<>«»‹›\"“”„‟',;:!?*`_|#~")
# rewards/README.md G2.1: look-alike characters; dashes other than hyphens are minus words
_LOOKALIKE = {"−": "-", "‐": "-", "‑": "-", "’": "'", "‘": "'", "٫": ".", "٬": ","}
_LOOKALIKE.update({ch: " - " for ch in "‒–—―"})
_LOOKALIKE.update({ch: f" {ch} " for ch in "×·÷"})
# rewards/README.md G2.2 / G10.1: operator words
SIGNS = ("+", "-", "x", "X", "×", "·", "*", "/", "÷", "=")
_INSIDE = ("*", "x", "X", "/")  # G2.2: operators that may be glued between two numbers
OPEN, DATE_ONLY, SHUT = "open", "date", "shut"
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


def _clean(text: str) -> str:
    """rewards/README.md G2.1: G2.0's Unicode step (line breaks, invisible characters), NFKC,
    every decimal digit to ASCII, look-alike signs to ASCII, `=` `×` `·` `÷` spaced into words
    of their own (`seats=20` is three words)."""
    text = shown_characters(text)
    if text.isascii():  # NFKC and the loop below leave ASCII as it is
        return text.replace("=", " = ")
    text = unicodedata.normalize("NFKC", text).replace("=", " = ")
    chars = []
    for ch in text:
        if ch.isascii():
            chars.append(ch)
        elif unicodedata.decimal(ch, None) is not None:
            chars.append(chr(48 + unicodedata.decimal(ch)))
        else:
            chars.append(_LOOKALIKE.get(ch, ch))
    return "".join(chars)


@lru_cache(maxsize=65536)  # the same words recur across tool outputs
def _trim(word: str) -> tuple[str, int, str]:
    """rewards/README.md G2.2: (core, characters cut on the left, text cut on the right):
    edge punctuation, trailing dots, a possessive, repeatedly."""
    start, end = 0, len(word)
    while True:
        before = (start, end)
        while start < end and word[start] in _STRIP:
            start += 1
        while end > start and (word[end - 1] in _STRIP or word[end - 1] == "."):
            end -= 1
        if word[start:end][-2:] in ("'s", "'S"):
            end -= 2
        if (start, end) == before:
            break
    return word[start:end], start, word[end:]


@lru_cache(maxsize=65536)
def _split_glued(core: str) -> tuple[str, ...]:
    """G2.2, for a word that reads as a plain word (not an id, date, time or number): split at
    its one `/` when both sides read as numbers, as ids or as dates (`INV-A1/INV-B2`); else at
    its one `*`, `x` or `X` when both sides read as numbers (`306.16x2`); else (core,)."""
    whole = read_word(core)
    if whole is None or whole.kind != "word":
        return (core,)
    head, slash, tail = core.partition("/")
    if slash and "/" not in tail:
        kinds = {r.kind if r else None for r in (read_word(head), read_word(tail))}
        if len(kinds) == 1 and kinds <= {"number", "id", "date"}:
            return (head, "/", tail)
    places = [k for k, ch in enumerate(core) if ch in "*xX"]
    if len(places) != 1:
        return (core,)
    k = places[0]
    sides = (read_word(core[:k]), read_word(core[k + 1 :]))
    if all(r is not None and r.kind == "number" for r in sides):
        return (core[:k], core[k], core[k + 1 :])
    return (core,)


def _words(text: str) -> tuple[tuple[str, str, bool, bool], ...]:
    """G2.2: (word, its boundary with the word before, is it an operator, is it after an
    override) for every word."""
    out: list[tuple[str, str, bool, bool]] = []
    for line in _clean(text).splitlines():
        cut_right: str | None = None  # what the previous word lost at its right; None: shut
        words, upright = line_words(line)
        for position, whole in enumerate(words):
            turned = position >= upright
            for raw, separator in separated(whole):
                core, cut_left, right = (raw, 0, "") if raw in SIGNS else _trim(raw)
                if core in SIGNS:
                    out.append((core, SHUT, True, turned))
                    cut_right = None
                    continue
                if separator or not core:
                    cut_right = None
                    continue
                link = SHUT
                if cut_right is not None and cut_left == 0:
                    dots = all(ch in ".," for ch in cut_right)
                    link = OPEN if cut_right == "" else DATE_ONLY if dots else SHUT
                pieces = _split_glued(core) if any(c in core for c in _INSIDE) else (core,)
                if len(pieces) == 3:
                    out += [(pieces[0], link, False, turned), (pieces[1], SHUT, True, turned),
                            (pieces[2], SHUT, False, turned)]  # fmt: skip
                else:
                    out.append((core, link, False, turned))
                cut_right = right
    return tuple(out)


def _spelled_value(parts: list[str]) -> int | None:
    """Spelled-out cardinals -> value; None for a run no one would write (`one two`): G2.4."""
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


class _Text:
    """The words of one text and what may join them (G2.3)."""

    def __init__(self, text: str) -> None:
        entries = _words(text)
        self.words = [w for w, _, _, _ in entries]
        self.links = [link for _, link, _, _ in entries]
        self.signs = [sign for _, _, sign, _ in entries]
        self.turned = [turned for _, _, _, turned in entries]

    def word(self, k: int) -> str | None:
        """words[k] if it exists and is no operator."""
        return self.words[k] if k < len(self.words) and not self.signs[k] else None

    def open(self, k: int, dates: bool = False) -> bool:
        """Is the boundary before words[k] open (for a month-name date, date-open too)?"""
        if k >= len(self.words) or self.signs[k]:
            return False
        return self.links[k] == OPEN or (dates and self.links[k] == DATE_ONLY)


def _month_phrase(t: _Text, i: int) -> tuple[Reading, int] | None:
    """rewards/README.md G2.3: a month-name date from words[i] (`15th of March 2026`,
    `March 15`, `March 2026`), across open or date-open boundaries; (reading, words used)."""
    words = t.words

    def year_at(k: int) -> int | None:
        w = t.word(k)
        return int(w) if w and t.open(k, dates=True) and digits_only(w, 4, 4) else None

    day = as_day(words[i])
    if day is not None:
        k = i + 1
        if t.open(k, dates=True) and words[k].lower() == "of":
            k += 1
        month = month_of(words[k]) if t.open(k, dates=True) else None
        if month is None:
            return None
        year = year_at(k + 1)
        end = k + 2 if year is not None else k + 1
        return day_reading(" ".join(words[i:end]), year, month, day), end - i
    month = month_of(words[i])
    if month is None or not t.open(i + 1, dates=True):
        return None
    year = year_at(i + 1)
    if year is not None:
        return Reading(" ".join(words[i : i + 2]), "month", f"{year:04d}-{month:02d}"), 2
    day = as_day(words[i + 1])
    if day is None:
        return None
    year = year_at(i + 2)
    end = i + 3 if year is not None else i + 2
    return day_reading(" ".join(words[i:end]), year, month, day), end - i


def _group_head(word: str) -> bool:
    core = word[1:] if word[:1] in "+-" else word
    head = ascii_upper(core[:3])
    mark = next((m for m in MARKS if head.startswith(m)), "")
    return digits_only(core[len(mark) :], 1, 3)


def _group_tail(word: str) -> bool:
    core = word
    if core[-1:] == "%":
        core = core[:-1]
    else:
        tail = ascii_upper(core[-3:])
        mark = next((m for m in MARKS if tail.endswith(m)), "")
        core = core[: len(core) - len(mark)]
    return (
        len(core) > 4
        and digits_only(core[:3], 3, 3)
        and core[3] in ".,"
        and (digits_only(core[4:], 1, len(core)))
    )


def _space_group(t: _Text, i: int) -> int:
    """G2.3: words from i that form one number grouped by spaces (`1 234 567,89`), every
    boundary open; 0 for none."""
    if not _group_head(t.words[i]):
        return 0
    j = i + 1
    while t.open(j) and digits_only(t.words[j], 3, 3):
        j += 1
    if t.open(j) and _group_tail(t.words[j]):
        j += 1
    return j - i if j - i >= 2 else 0


def _spelled(t: _Text, i: int) -> tuple[Reading, int]:
    """rewards/README.md G2.3: a run of spelled-out cardinals from words[i] across open
    boundaries ("and" inside); (reading, words used). One unhyphenated word may be a count."""
    words = t.words
    j = i + 1
    while t.open(j):
        if _number_word(words[j]):
            j += 1
        elif words[j].lower() == "and" and t.open(j + 1) and _number_word(words[j + 1]):
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
    return reading, j - i


def read(text: str) -> tuple[Reading, ...]:
    """Every number-like token of `text`, in order (rewards/README.md G2); cached, since every
    episode of a scenario shows the same tool outputs (the readings are immutable)."""
    return _read(text)


@lru_cache(maxsize=65536)
def _read(text: str) -> tuple[Reading, ...]:
    return tuple(r for r in _with_signs(text) if isinstance(r, Reading))


@lru_cache(maxsize=4096)
def read_with_signs(text: str) -> tuple[Reading | str | None, ...]:
    """rewards/README.md G2.6: the words and phrases of `text` in order as `read` reads them
    (a Reading, or None for a word that is not number-like), each operator word (G2.2) kept
    as that string."""
    return _with_signs(text)


def _with_signs(text: str) -> tuple[Reading | str | None, ...]:
    t = _Text(text)
    out: list[Reading | str | None] = []
    i = 0
    while i < len(t.words):
        if t.signs[i]:
            out.append(t.words[i])
            i += 1
            continue
        reading, used = _with_currency(t, i)
        if reading is not None and True in t.turned[i : i + used]:  # G2.2: after an override
            reading = Reading(reading.text, "unreadable", reading.text)
        out.append(reading)
        i += used
    return tuple(out)


def _with_currency(t: _Text, i: int) -> tuple[Reading | None, int]:
    """G2.3: a currency mark standing alone joins the number right before it, else the one
    right after it; the value stays, the number is money (no count)."""
    if currency_mark(t.words[i]) and t.open(i + 1):
        after, used = _reading_at(t, i + 1)
        if after is not None and after.kind == "number":
            return Reading(f"{t.words[i]} {after.text}", "number", after.value), used + 1
    reading, used = _reading_at(t, i)
    number = reading is not None and reading.kind == "number"
    if number and t.open(i + used) and currency_mark(t.words[i + used]):
        assert reading is not None
        return Reading(f"{reading.text} {t.words[i + used]}", "number", reading.value), used + 1
    return reading, used


@lru_cache(maxsize=65536)
def _alone(word: str) -> bool:
    """True when no phrase (G2.3) can start at this word: `_reading_at` reads it by itself."""
    if len(word) > 7 and _ASCII_DIGIT.search(word):
        return True  # too long for a day or a group head; month and number words have no digit
    return (
        as_day(word) is None
        and month_of(word) is None
        and not _group_head(word)
        and not _number_word(word)
    )


def _reading_at(t: _Text, i: int) -> tuple[Reading | None, int]:
    """The word or phrase at words[i] and how many words it used (G2.3, G2.4)."""
    words = t.words
    reading, used = None, 1
    alone = _alone(words[i])
    phrase = None if alone else _month_phrase(t, i)
    grouped = 0 if phrase or alone else _space_group(t, i)
    if alone:
        reading = read_word(words[i])
    elif phrase:
        reading, used = phrase
    elif grouped:
        reading, used = read_word(" ".join(words[i : i + grouped])), grouped
    elif _number_word(words[i]):
        reading, used = _spelled(t, i)
    else:
        reading = read_word(words[i])
    if reading is not None and reading.kind == "number" and not reading.text.endswith("%"):
        # G2.3: `percent`, `per cent` or a lone `%` after a number makes it a rate
        # an open boundary means a word follows (`open` is false past the end or at an operator)
        first = (t.word(i + used) or "").lower() if t.open(i + used) else ""
        second = (t.word(i + used + 1) or "").lower() if t.open(i + used + 1) else ""
        extra = 1 if first in ("percent", "%") else 2 if (first, second) == ("per", "cent") else 0
        if extra:
            text_ = " ".join(words[i : i + used + extra])
            reading = Reading(text_, "percent", scaled(reading.value, -2))
            used += extra
    return reading, used
