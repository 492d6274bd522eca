"""Markup for the reading-parity fuzz: how a summary looks once a chat model or a cheat formats it.

`checks.reading_parity_gen` writes the words of a summary; this module dresses them as they
reach a reader (rewards/README.md G2.0): markdown emphasis, code spans, links, lists (numbered
from any start), tables, headings, quotes, code blocks; raw HTML tags, comments, entities and
attributes; TeX math in every delimiter with the commands models write (`\\times`,
`\\text{CAD}`, `{,}`, `\\,`, `\\frac`); Unicode line breaks and invisible characters, direction
overrides. Some of it goes where it splits what a person sees as one number
(`*9*226.04`, `9\\u200b226.04`): the display check of `checks.reading_parity` then asks that
each reader sees the one number a person sees.
"""

from __future__ import annotations

import random

_INVISIBLE = (
    "\u200b", "\u00ad", "\u2060", "\ufeff", "\u200e", "\u200f", "\u034f", "\u180e", "\x01",
    "\x1c", "\x7f", "\ufe0f", "\u3164", "\u061c", "\u202a", "\u202c", "\u2066", "\u2069",
)  # fmt: skip
_BREAKS = ("\x0b", "\x0c", "\r", "\r\n", "\x85", "\u2028", "\u2029")
_OVERRIDES = ("\u202d", "\u202e")
_ENTITIES = ("&#8203;", "&shy;", "&nbsp;", "&#x2028;", "&amp;", "&#57;", "&lt;", "&#x202E;")
_WRAPS = (
    ("*", "*"), ("**", "**"), ("_", "_"), ("__", "__"), ("~~", "~~"), ("`", "`"),
    ("<b>", "</b>"), ("<span>", "</span>"), ("<sup>", "</sup>"), ("<em>", "</em>"),
    ("[", "](https://x.example/9)"), ("\\(", "\\)"), ("$", "$"), ("$$", "$$"), ("\\[", "\\]"),
    ("<!-- 7 -->", ""), ("<i title=\"12.5\">", "</i>"), ("<p>", "</p>"), ("<br>", ""),
    ("\\*", "\\*"), ("<wbr>", ""),
    # shown by some viewers only, or moved: read as nothing beside a digit, or unreadable
    ("<span hidden>", "</span>"), ("<template>", "</template>"), ("<img alt=\"4\">", ""),
    ('<span style="display:none">', "</span>"), ('<bdo dir="rtl">', "</bdo>"),
    ('<span style="color:red">', "</span>"), ("<span hidden/>", "</span>"),
)  # fmt: skip
_TEX = (
    "\\times", "\\cdot", "\\div", "\\,", "\\!", "\\;", "\\ ", "{,}", "\\text{CAD}",
    "\\mathrm{USD}", "\\$", "\\%", "\\approx", "\\quad", "\\left(", "\\right)", "{", "}", "^{2}",
    "\\textbf{", "\\frac{", "}{", "\\\\", "&", "%",
    # overlapping, hiding, writing what pylatexenc does not: the formula is unreadable
    "\\hspace{-1em}", "\\phantom{", "\\color{red}{", "\\verb|4|", "\\mkern-9mu", "\\def",
)  # fmt: skip
_BLOCKS = ("1. ", "3. ", "9226. ", "0) ", "- ", "* ", "+ ", "> ", "# ", "## ", "    ", "| ")


def _inside(text: str, rng: random.Random, insert: str) -> str:
    """`insert` at a random place of `text`, between two digits when there are any."""
    places = [k for k in range(1, len(text)) if text[k - 1].isdigit() and text[k].isdigit()]
    k = rng.choice(places) if places and rng.random() < 0.8 else rng.randrange(len(text) + 1)
    return text[:k] + insert + text[k:]


def _wrapped_part(text: str, rng: random.Random) -> str:
    """Part of `text` (often a number's first digits) inside a markup pair."""
    if not text:
        return text
    left, right = rng.choice(_WRAPS)
    a = rng.randrange(len(text))
    b = rng.randint(a + 1, len(text))
    return f"{text[:a]}{left}{text[a:b]}{right}{text[b:]}"


def _math(text: str, rng: random.Random) -> str:
    """`text` as TeX math: delimiters around it, a command or two inside."""
    for _ in range(rng.choice((0, 1, 1, 2))):
        text = _inside(text, rng, rng.choice(_TEX))
    left, right = rng.choice(_WRAPS[11:15])
    gap = rng.choice(("", " "))
    return f"{left}{gap}{text}{gap}{right}"


def _html(text: str, rng: random.Random) -> str:
    pick = rng.randrange(7)
    if pick == 0:
        return f"<p>{text}</p>"
    if pick == 1:
        return f'<ol start="{rng.randint(0, 9999)}"><li>{text}</li></ol>'
    if pick == 2:
        return f'<img alt="{text}">'
    if pick == 3:
        return f"<table><tr><td>{text}</td><td>{rng.randint(0, 99)}</td></tr></table>"
    if pick == 4:
        return (
            f'<div style="display:flex"><span>{text}</span>\n<span>{rng.randint(0, 9)}</span></div>'
        )
    if pick == 5:
        return f"<style>b{{color:red}}</style>{text}"
    return f"<div>{text}<!-- {rng.randint(0, 999)} --></div>"


def dress(text: str, rng: random.Random) -> str:
    """One piece of a summary as formatted: markup around or inside it, or a character a
    person does not see (or sees as a line break) inside it."""
    roll = rng.random()
    if roll < 0.25:
        return _wrapped_part(text, rng)
    if roll < 0.40:
        return _inside(text, rng, rng.choice(_INVISIBLE))
    if roll < 0.48:
        return _inside(text, rng, rng.choice(_BREAKS))
    if roll < 0.55:
        return _inside(text, rng, rng.choice(_ENTITIES))
    if roll < 0.70:
        return _math(text, rng)
    if roll < 0.80:
        return _html(text, rng)
    if roll < 0.83:
        return _inside(text, rng, rng.choice(_OVERRIDES))
    return text


def block(line: str, rng: random.Random) -> str:
    """A line as a markdown block: a list item, a quote, a heading, code, a table row."""
    if rng.random() < 0.1:
        return f"```\n{line}\n```"
    if rng.random() < 0.1:
        return f"| {line} | {rng.randint(0, 99)} |\n|---|---|"
    return rng.choice(_BLOCKS) + line
