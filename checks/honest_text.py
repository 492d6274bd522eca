"""How people and chat models rewrite a correct summary: notation and markdown, as text edits.

`checks.honest_variants` applies these to a reference summary (issue 30 item 5). Each edit is
written from how answers are really formatted (code spans, bold, tables, numbered lists,
`USD 306.16`, `$306.16`, `7.25 %`, `13 Oct 2025`, curly quotes), never from the readers'
rules: the suite exists to find where the readers fall short of honest text.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from decimal import Decimal

IDS = re.compile(r"\b(?:INV|CUS|SUB|PAY|CN|PLN|TXC)-[0-9A-Z]+\b")
AMOUNT = re.compile(r"(?<![\w.,:-])[0-9]+\.[0-9]{2}(?![0-9%])(?!\.[0-9])")
CODE_AFTER = re.compile(r"(?<![\w.,:-])([0-9]+\.[0-9]{2}) (USD|EUR|GBP|CAD|AUD)\b")
ISO = re.compile(r"\b([0-9]{4})-([0-9]{2})-([0-9]{2})(?:T([0-9]{2}):([0-9]{2}):[0-9]{2}Z)?\b")
MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August",
          "September", "October", "November", "December")  # fmt: skip
SYMBOLS = {"USD": "$", "CAD": "C$", "AUD": "A$", "EUR": "€", "GBP": "£"}


def wrap_ids(text: str, left: str, right: str | None = None) -> str:
    """Every id inside `left` … `right` (a code span, bold)."""
    return IDS.sub(lambda m: f"{left}{m[0]}{right or left}", text)


def _amounts(text: str, edit: Callable[[str], str], skip: Iterable[str] = ()) -> str:
    """`edit` on every two-decimal amount that is not a rate of `skip` (`0.15` the tax rate)."""
    rates = set(skip)
    return AMOUNT.sub(lambda m: m[0] if m[0] in rates else edit(m[0]), text)


def wrap_amounts(text: str, left: str, right: str | None = None, skip: Iterable[str] = ()) -> str:
    return _amounts(text, lambda a: f"{left}{a}{right or left}", skip)


def code_before(text: str, currency: str, skip: Iterable[str] = ()) -> str:
    """`306.16 CAD` and a bare `306.16` both become `CAD 306.16`."""
    moved = CODE_AFTER.sub(lambda m: f"{m[2]} {m[1]}", text)
    bare = re.compile(r"(?<!\b[A-Z]{3} )" + AMOUNT.pattern)
    rates = set(skip)
    return bare.sub(lambda m: m[0] if m[0] in rates else f"{currency} {m[0]}", moved)


def code_after(text: str, currency: str, skip: Iterable[str] = ()) -> str:
    """A bare `306.16` becomes `306.16 CAD` (those already followed by a code kept)."""
    bare = re.compile(AMOUNT.pattern + r"(?! [A-Z]{3}\b)")
    rates = set(skip)
    return bare.sub(lambda m: m[0] if m[0] in rates else f"{m[0]} {currency}", text)


def symbol_before(text: str, currency: str, skip: Iterable[str] = ()) -> str:
    """`306.16 CAD` and `306.16` become `C$306.16` (the currency's own symbol)."""
    symbol = SYMBOLS.get(currency, currency + " ")
    moved = CODE_AFTER.sub(lambda m: f"{symbol}{m[1]}", text)
    bare = re.compile(r"(?<![$€£])" + AMOUNT.pattern)
    rates = set(skip)
    return bare.sub(lambda m: m[0] if m[0] in rates else f"{symbol}{m[0]}", moved)


def thousands(text: str) -> str:
    """`1201.12` becomes `1,201.12`."""
    return AMOUNT.sub(lambda m: f"{Decimal(m[0]):,.2f}", text)


def percent(rate: str, spaced: bool) -> str:
    """`0.0725` as `7.25%` or `7.25 %`."""
    figure = format((Decimal(rate) * 100).normalize(), "f")
    return figure + (" %" if spaced else "%")


def rates_as_percent(text: str, rates: Iterable[str], spaced: bool) -> str:
    for rate in sorted(set(rates), key=len, reverse=True):
        pattern = re.compile(rf"(?<![\w.]){re.escape(rate)}(?![\w%]|\.[0-9])")
        text = pattern.sub(percent(rate, spaced), text)
    return text


def _date_words(m: re.Match[str], style: str) -> str:
    year, month, day = m[1], int(m[2]), int(m[3])
    name = MONTHS[month - 1]
    written = f"{day} {name[:3]} {year}" if style == "day_month" else f"{name} {day}, {year}"
    return written + (f" {m[4]}:{m[5]} UTC" if m[4] else "")


def dates_in_words(text: str, style: str) -> str:
    """ISO dates as `13 Oct 2025` (day_month) or `October 13, 2025` (month_day); a UTC
    timestamp keeps its time: `24 Nov 2025 01:54 UTC`."""
    return ISO.sub(lambda m: _date_words(m, style), text)


def quote_dates(text: str, left: str, right: str) -> str:
    return ISO.sub(lambda m: f"{left}{m[0]}{right}", text)


def sentences(text: str) -> list[str]:
    """The summary's sentences (a full stop and a space end one; `0.00.` keeps its digits)."""
    parts = re.split(r"(?<=[^0-9][.])\s+|(?<=[0-9]\.)\s+(?=[A-Z])", text.strip())
    return [p for p in parts if p]


def bullets(text: str, numbered: bool) -> str:
    marks = (f"{n}." for n in range(1, 100)) if numbered else iter(lambda: "-", None)
    return "\n".join(f"{next(marks)} {s}" for s in sentences(text))


def table(header: tuple[str, str], rows: list[tuple[str, str]]) -> str:
    lines = [f"| {header[0]} | {header[1]} |", "|---|---|"]
    lines += [f"| {a} | {b} |" for a, b in rows]
    return "\n".join(lines)
