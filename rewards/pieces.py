"""G2.2's first cut: a line into word pieces (rewards/README.md "Reading: the token grammar").

Punctuation glued inside a word is never part of a token: a word is split at every character
of Unicode category P or S that is none of the grammar's own signs, and at a `:` unless a
clock's; and every word after a direction override (LRO, RLO) on its line
is marked, for `rewards.numbers` reads it as unreadable (a person sees it reversed). The
grader's own code for the same rules is `eval/grounding/pieces.py`.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

from rewards.display import OVERRIDES

# G2.2: punctuation and symbols inside a word that are none of the grammar's own signs split it
# (`Overcharge:120.56`); a `:` between two digits is a clock's (`10:30`)
_ASCII_SPLITS = re.compile(r"""[!"#&();<>?@\[\\\]^`{|}~]|(?<![0-9]):|:(?![0-9])""")
_OWN_SIGNS = frozenset(".,'_-+/\u2044*%$€£:")
_DIGITS = frozenset("0123456789")
_NO_OVERRIDES = str.maketrans(dict.fromkeys(OVERRIDES))


@lru_cache(maxsize=4096)
def _splits(ch: str) -> bool:
    """G2.2: a character of Unicode category P or S that is none of the grammar's own signs."""
    return unicodedata.category(ch)[0] in "PS" and ch not in _OWN_SIGNS


@lru_cache(maxsize=65536)
def pieces(raw: str) -> tuple[str, ...]:
    """G2.2: a whitespace-separated word split at the punctuation inside it, each separator a
    piece of its own (`Overcharge:120.56` is `Overcharge`, `:`, `120.56`)."""
    if raw.isascii() and _ASCII_SPLITS.search(raw) is None:
        return (raw,)
    return tuple(_split_at_punctuation(raw))


def _split_at_punctuation(raw: str) -> list[str]:
    pieces: list[str] = []
    start = 0
    for k, ch in enumerate(raw):
        if ch == ":":
            clock = 0 < k < len(raw) - 1 and raw[k - 1] in _DIGITS and raw[k + 1] in _DIGITS
            split = not clock
        else:
            split = _splits(ch)
        if split:
            pieces += [raw[start:k], ch] if k > start else [ch]
            start = k + 1
    if start < len(raw):
        pieces.append(raw[start:])
    return pieces


def separator(piece: str) -> bool:
    """Is this piece one `pieces` split at (a separator of its own)?"""
    return len(piece) == 1 and (piece == ":" or _splits(piece))


def chunks(line: str) -> tuple[list[str], int]:
    """The line's whitespace-separated words, and the index of the first word that an override
    (LRO, RLO) comes before on the line or stands inside: G2.2 reads it and every word after it
    as unreadable (a person sees them reversed). No override: the number of words."""
    if line.isascii() or ("\u202d" not in line and "\u202e" not in line):
        words = line.split()
        return words, len(words)
    at = min(k for k in (line.find(c) for c in OVERRIDES) if k >= 0)
    while at > 0 and not line[at - 1].isspace():
        at -= 1
    before = line[:at].split()
    return before + line[at:].translate(_NO_OVERRIDES).split(), len(before)
