"""The grader's number reader: every number-like token of a text, in order (rewards/README.md G2).

Text is normalised (G2.1), split into words (G2.2), joined into phrases (G2.3: month-name dates,
space-grouped digits, spelled-out cardinals, `percent`), then each word or phrase is read by
`eval.grounding.notation` (G2.4). Written apart from `rewards/numbers.py` on purpose: see
`eval/grounding/__init__.py`.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

from eval.grounding.notation import (
    CODES,
    SYMBOLS,
    Reading,
    as_day,
    day_reading,
    digits_only,
    month_of,
    read_word,
    scaled,
)

_ASCII_DIGIT = re.compile("[0-9]")
_STRIP = set("()[]{}<>«»\"',;:!?*")
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
    """rewards/README.md G2.1: NFKC, every decimal digit to ASCII, look-alike signs to ASCII."""
    # `seats=20` (tool-argument style) is three words: `=` is never part of a number, and
    # no phrase joins across it (`3 = 342.34` is two numbers)
    if text.isascii():  # NFKC and the loop below leave ASCII as it is
        return text.replace("=", " = ")
    text = unicodedata.normalize("NFKC", text).replace("=", " = ")
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


@lru_cache(maxsize=65536)  # the same words recur across tool outputs
def _trim(word: str) -> str:
    """rewards/README.md G2.2: edge punctuation, trailing dots, a possessive."""
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


def _month_phrase(words: list[str], i: int) -> tuple[Reading, int] | None:
    """rewards/README.md G2.3: a month-name date from words[i] (`15th of March 2026`,
    `March 15`, `March 2026`); (its reading, words used), or None."""

    def year_at(k: int) -> int | None:
        return int(words[k]) if k < len(words) and digits_only(words[k], 4, 4) else None

    day = as_day(words[i])
    if day is not None:
        k = i + 2 if i + 1 < len(words) and words[i + 1].lower() == "of" else i + 1
        month = month_of(words[k]) if k < len(words) else None
        if month is None:
            return None
        year = year_at(k + 1)
        end = k + 2 if year is not None else k + 1
        return day_reading(" ".join(words[i:end]), year, month, day), end - i
    month = month_of(words[i])
    if month is None or i + 1 >= len(words):
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
    if core[:1] in SYMBOLS:
        core = core[1:]
    elif core[:3].upper() in CODES:
        core = core[3:]
    return digits_only(core, 1, 3)


def _group_tail(word: str) -> bool:
    core = word
    if core[-1:] in "%$€£":
        core = core[:-1]
    elif core[-3:].upper() in CODES:
        core = core[:-3]
    return (
        len(core) > 4
        and digits_only(core[:3], 3, 3)
        and core[3] in ".,"
        and (digits_only(core[4:], 1, len(core)))
    )


def _space_group(words: list[str], i: int) -> int:
    """G2.3: words from i that form one number grouped by spaces (`1 234 567,89`); 0 for none."""
    if not _group_head(words[i]):
        return 0
    j = i + 1
    while j < len(words) and digits_only(words[j], 3, 3):
        j += 1
    if j < len(words) and _group_tail(words[j]):
        j += 1
    return j - i if j - i >= 2 else 0


def _spelled(words: list[str], i: int) -> tuple[Reading, int]:
    """rewards/README.md G2.3: a run of spelled-out cardinals from words[i] ("and" inside);
    (its reading, words used). One unhyphenated word may be a count (G3)."""
    j = i + 1
    while j < len(words):
        if _number_word(words[j]):
            j += 1
        elif words[j].lower() == "and" and j + 1 < len(words) and _number_word(words[j + 1]):
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
    words = [w for w in (_trim(w) for w in _clean(text).split()) if w]
    found: list[Reading] = []
    i = 0
    while i < len(words):
        reading, used = _reading_at(words, i)
        if reading is not None:
            found.append(reading)
        i += used
    return tuple(found)


# rewards/README.md G10.1: a calculation's operators and its `=`, each a word of its own
SIGNS = ("+", "-", "x", "X", "×", "*", "/", "÷", "=")


@lru_cache(maxsize=4096)
def read_with_signs(text: str) -> tuple[Reading | str | None, ...]:
    """rewards/README.md G10.1: the words and phrases of `text` in order as `read` reads them
    (a Reading, or None for a word that is not number-like), with each word that is an
    operator or `=` (edge punctuation aside; `*` before trimming drops it) kept as that string."""
    words = []
    for word in _clean(text).split():
        kept = word if word in SIGNS else _trim(word)
        if kept:
            words.append(kept)
    out: list[Reading | str | None] = []
    i = 0
    while i < len(words):
        if words[i] in SIGNS:
            out.append(words[i])
            i += 1
        else:
            reading, used = _reading_at(words, i)
            out.append(reading)
            i += used
    return tuple(out)


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


def _reading_at(words: list[str], i: int) -> tuple[Reading | None, int]:
    """The word or phrase at words[i] and how many words it used (G2.3, G2.4)."""
    reading, used = None, 1
    alone = _alone(words[i])
    phrase = None if alone else _month_phrase(words, i)
    grouped = 0 if phrase or alone else _space_group(words, i)
    if alone:
        reading = read_word(words[i])
    elif phrase:
        reading, used = phrase
    elif grouped:
        reading, used = read_word(" ".join(words[i : i + grouped])), grouped
    elif _number_word(words[i]):
        reading, used = _spelled(words, i)
    else:
        reading = read_word(words[i])
    if reading is not None and reading.kind == "number" and not reading.text.endswith("%"):
        # G2.3: `percent` or `per cent` after a number makes it a rate
        nxt = [w.lower() for w in words[i + used : i + used + 2]]
        extra = 1 if nxt[:1] == ["percent"] else 2 if nxt == ["per", "cent"] else 0
        if extra:
            text_ = " ".join(words[i : i + used + extra])
            reading = Reading(text_, "percent", scaled(reading.value, -2))
            used += extra
    return reading, used
