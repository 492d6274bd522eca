"""The grader's first cut of a line into word pieces (rewards/README.md G2.2).

A word splits at each character of Unicode category P or S inside it that is none of the
grammar's own signs, and at a `:` that is no clock's: such a glued separator is never part of
a token (`Overcharge:120.56`). After a direction override (LRO, RLO) every word of the line is
marked: what a person sees reversed is unreadable (`eval.grounding.read` reads it so). Written
apart from `rewards/pieces.py`.
"""

from __future__ import annotations

import unicodedata
from functools import lru_cache

from eval.grounding.display import REVERSING

_PUNCTUATION_KEPT = set(".,'_-+/\u2044*%$€£")  # the grammar's own signs, never a separator


@lru_cache(maxsize=65536)
def separated(word: str) -> tuple[tuple[str, bool], ...]:
    """rewards/README.md G2.2: a word cut at each character of Unicode category P or S inside
    it that is none of the grammar's signs, a `:` too unless it stands between two digits
    (`10:30`); (piece, is it such a separator)."""
    out: list[tuple[str, bool]] = []
    piece = ""
    for k, ch in enumerate(word):
        if ch == ":":
            cut = not (k and word[k - 1] in "0123456789" and word[k + 1 : k + 2] in _TEN)
        elif ch < "\x80":
            cut = ch in _ASCII_CUTS
        else:
            cut = ch not in _PUNCTUATION_KEPT and unicodedata.category(ch)[0] in ("P", "S")
        if cut:
            out += [(piece, False), (ch, True)] if piece else [(ch, True)]
            piece = ""
        else:
            piece += ch
    return (*out, (piece, False)) if piece else tuple(out)


_TEN = set("0123456789")
_ASCII_CUTS = set('!"#&();<>?@[\\]^`{|}~')


def line_words(line: str) -> tuple[list[str], int]:
    """The line's words, and how many of them come before a direction override (LRO, RLO):
    the word it stands in and every one after it are displayed reversed, so unreadable."""
    marks = [] if line.isascii() else [line.index(m) for m in REVERSING if m in line]
    if not marks:
        words = line.split()
        return words, len(words)
    start = min(marks)
    while start and not line[start - 1].isspace():
        start -= 1
    head = line[:start].split()
    tail = line[start:].replace(REVERSING[0], "").replace(REVERSING[1], "")
    return head + tail.split(), len(head)
