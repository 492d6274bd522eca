"""Summaries for the reading-parity fuzz (`checks.reading_parity`), written from a seeded RNG.

Each summary mixes what an analyst or a chat model writes (amounts, ids, dates, percents in
every notation, calculations written every way, markdown, list markers, quotes) with what a
cheat or a typo writes (look-alike letters and digits, junk glued to numbers, odd dashes and
spaces, broken dates), then a few characters are mutated at random. It returns the text and
the canonical values of its "found" amounts (the fuzz's stand-in for facts a tool showed).
"""

from __future__ import annotations

import random
from decimal import Decimal

from checks.reading_parity_markup import block, dress

_DIGIT_ZEROS = (0x0660, 0x06F0, 0x0966, 0x09E6, 0x0E50, 0xFF10, 0x1D7CE)
_MARKS = ("$", "€", "£", "C$", "A$", "US$", "CA$", "AU$", "USD", "usd", "EUR", "Cad", "AUD")
_DASHES = ("-", "−", "–", "—", "‒", "―", "‐", "‑")
_TIMES = ("x", "X", "×", "·", "*", "÷", "/")
_QUOTES = (("`", "`"), ("**", "**"), ("_", "_"), ("“", "”"), ('"', '"'), ("'", "'"), ("(", ")"))
_QUOTES += (("[", "]"), ("«", "»"), ("‹", "›"), ("„", "“"), ("~~", "~~"), ("*", "*"))
_LIST = ("1. ", "2) ", "(1): ", "- ", "* ", "+ ", "# ", "## ", "| ", "> ", "3: ", "#1 ")
_SEPARATORS = (" ", " ", " ", ", ", "; ", "\n", "\n- ", "\n1. ", " | ", ": ", "  ", "\t")
_LOOKALIKE = "ßİıІОоАаЕеКкМНРрСсТХх"  # Latin-looking letters of other scripts, `ß`, `İ`, `ı`
_ODD = "\u00a0\u2009\u202f\u200b\u0301½Ⅻ²①٫٬’‘%$€£=+.,:;'`*_|#~/\\"
_WORDS = ("total", "invoice", "overcharge", "refund", "per", "cent", "percent", "and", "of")
_WORDS += ("twenty", "one", "hundred", "forty-eight", "may", "March", "Sept.", "Q3", "x", "X")
_MONTHS = ("January", "Mar", "mar.", "MAY", "May", "june", "Sept", "Oct.", "December")
_PREFIXES = ("INV", "CUS", "SUB", "PAY", "CN", "PLN", "inv", "Inv", "cn", "TXC")


def _digits(text: str, rng: random.Random) -> str:
    """Sometimes another script's digits (G2.1)."""
    if rng.random() > 0.08:
        return text
    zero = rng.choice(_DIGIT_ZEROS)
    return "".join(chr(zero + int(c)) if c.isdigit() else c for c in text)


def _grouped(cents: int, rng: random.Random) -> str:
    whole, frac = divmod(cents, 100)
    style = rng.randrange(8)
    digits = f"{whole:,}"
    if style == 0:
        return f"{whole}.{frac:02d}"
    if style == 1:
        return f"{digits}.{frac:02d}"
    if style == 2:
        return f"{digits.replace(',', '_')}.{frac:02d}"
    if style == 3:
        return f"{digits.replace(',', ' ')},{frac:02d}"
    if style == 4:
        return f"{digits.replace(',', '.')},{frac:02d}"
    if style == 5:
        return digits.replace(",", "'") + f".{frac:02d}"
    if style == 6:
        return format(Decimal(cents).scaleb(-2), "e") if cents else "0e0"
    return f"{whole}" if not frac else f"{whole}.{frac}"


def amount(cents: int, rng: random.Random) -> str:
    """An amount in a notation G2 reads: grouping, sign, a currency mark glued or spaced."""
    text = _digits(_grouped(cents, rng), rng)
    mark = rng.choice(_MARKS)
    where = rng.randrange(6)
    if where == 1:
        text = mark + text
    elif where == 2:
        text = f"{mark} {text}"
    elif where == 3:
        text = text + mark
    elif where == 4:
        text = f"{text} {mark}"
    if rng.random() < 0.08:
        text = rng.choice(("-", "−", "+")) + text
    return text


def _id(rng: random.Random) -> str:
    chars = "ABCDEFGHJKLMNPQRSTUVWXYZ0123456789"
    body = "".join(rng.choice(chars) for _ in range(rng.randint(1, 8)))
    if rng.random() < 0.3:
        body = body.lower()
    if rng.random() < 0.15:
        k = rng.randrange(len(body) + 1)
        body = body[:k] + rng.choice(_LOOKALIKE) + body[k:]
    return f"{rng.choice(_PREFIXES)}{rng.choice(('-', '-', '-', '‐', '_', ''))}{body}"


def _date(rng: random.Random) -> str:
    y, m, d = rng.randint(1995, 2031), rng.randint(0, 13), rng.randint(0, 32)
    style = rng.randrange(12)
    forms = (
        f"{y}-{m:02d}-{d:02d}",
        f"{y}-{m:02d}-{d:02d}T{rng.randint(0, 25):02d}:{rng.randint(0, 61):02d}:00Z",
        f"{y}-{m:02d}-{d:02d}T",
        f"{y}-{m:02d}-{d:02d}T{rng.choice(('', 'Z', '10', '1:2', '10:30+0200'))}",
        f"{y}/{m}/{d}",
        f"{d:02d}.{m:02d}.{y}",
        f"{d}/{m}/{y}",
        f"{m:02d}-{d:02d}-{y}",
        f"{d}/{m}/{y % 100:02d}",
        f"{y}-{m:02d}",
        f"{d} {rng.choice(_MONTHS)}{rng.choice(('', ' ', ', ', ' of '))}{y}",
        f"{rng.choice(_MONTHS)} {d}{rng.choice(('', ',', ', '))} {y}",
    )
    return _digits(forms[style], rng)


def _percent(rng: random.Random) -> str:
    value = f"{rng.randint(0, 30)}.{rng.randint(0, 99):02d}"
    return value + rng.choice(("%", " %", " percent", " per cent", "% ", " pct", "%%", " ٪"))


def calculation(rng: random.Random, found: list[int]) -> str:
    """`a op b = c` or `c = a op b`, right or wrong, operators spaced or glued."""
    a = rng.choice(found) if found and rng.random() < 0.7 else rng.randint(0, 200_000)
    op = rng.choice(("+", *_DASHES, *_TIMES))
    if op in _TIMES:
        b = rng.choice((2, 3, 7, 12, 13, 1))
        exact = Decimal(a * b) if op in "xX×·*" else Decimal(a) / b
        c = int(exact.quantize(Decimal(1)))
        right = str(b) if rng.random() < 0.8 else amount(b * 100, rng)
    else:
        b = rng.choice(found) if found and rng.random() < 0.7 else rng.randint(0, 200_000)
        c = a + b if op == "+" else a - b
        right = amount(b, rng)
    c += rng.choice((0, 0, 0, 1, -1))
    result = ("-" if c < 0 and rng.random() < 0.8 else "") + amount(abs(c), rng)
    left = amount(a, rng)
    gap = "" if rng.random() < 0.2 else " "
    eq = rng.choice((" = ", "=", " = ", " =", "= "))
    if rng.random() < 0.35:
        return f"{result}{eq}{left}{gap}{op}{gap}{right}"
    return f"{left}{gap}{op}{gap}{right}{eq}{result}"


def _junk(rng: random.Random, found: list[int]) -> str:
    base = amount(rng.choice(found), rng) if found else str(rng.randint(0, 999))
    return rng.choice(
        (
            base + rng.choice(("x", "X", ".0", "abc", "%x", "-day", "th", "e99", "e2")),
            rng.choice(("½", "Ⅻ", "²", "①", "0xFF", "1e999", "3/4", "12/31", "10am", "14:30")),
            " ".join(rng.choice(_WORDS) for _ in range(rng.randint(1, 4))),
            f"{rng.randint(0, 9)} {rng.randint(0, 999):03d} {rng.randint(0, 9999):03d}.5",
            f"{rng.randint(1, 12)}{rng.choice(('x', '*', '/', 'X'))}{base}",
            f"{_id(rng)}/{_id(rng) if rng.random() < 0.7 else _date(rng)}",
            f"{_date(rng)}{rng.choice(('/', '–', '-', ' to '))}{_date(rng)}",
        )
    )


def _piece(rng: random.Random, found: list[int]) -> str:
    pick = rng.random()
    if pick < 0.25:
        text = amount(rng.choice(found), rng) if found else amount(rng.randint(0, 10**6), rng)
    elif pick < 0.32:
        text = amount(rng.randint(0, 10**7), rng)
    elif pick < 0.42:
        text = _id(rng)
    elif pick < 0.52:
        text = _date(rng)
    elif pick < 0.58:
        text = _percent(rng)
    elif pick < 0.78:
        text = calculation(rng, found)
    elif pick < 0.88:
        text = _junk(rng, found)
    else:
        text = rng.choice(_WORDS) if rng.random() < 0.5 else str(rng.randint(0, 20))
    if rng.random() < 0.2:
        left, right = rng.choice(_QUOTES)
        text = f"{left}{text}{right}"
    if rng.random() < 0.1:
        text = rng.choice(_LIST) + text
    return text


def _mutate(text: str, rng: random.Random) -> str:
    """A few characters inserted, deleted or replaced by look-alikes and odd ones."""
    chars = list(text)
    for _ in range(rng.choice((0, 0, 0, 1, 1, 2, 3))):
        k = rng.randrange(len(chars) + 1)
        pool = _ODD + _LOOKALIKE + "".join(_DASHES) + "".join(_TIMES) + "0123456789 \n"
        action = rng.randrange(3)
        if action == 0 or not chars:
            chars.insert(k, rng.choice(pool))
        elif action == 1 and k < len(chars):
            del chars[k]
        elif k < len(chars):
            chars[k] = rng.choice(pool)
    return "".join(chars)


def summary(rng: random.Random) -> tuple[str, frozenset[str]]:
    """One summary and the canonical values of its found amounts: pieces, some of them dressed
    in markup or invisible characters, some lines made markdown blocks, a few characters
    mutated."""
    found = [rng.randint(1, 5_000_000) for _ in range(rng.randint(0, 4))]
    parts = []
    for _ in range(rng.randint(2, 12)):
        piece = _piece(rng, found)
        parts.append(dress(piece, rng) if rng.random() < 0.35 else piece)
        parts.append(rng.choice(_SEPARATORS))
    text = "".join(parts)
    if rng.random() < 0.3:
        lines = text.split("\n")
        text = "\n".join(block(line, rng) if rng.random() < 0.5 else line for line in lines)
    text = _mutate(text, rng)
    values = frozenset(_canonical(cents) for cents in found)
    return text, values


def _canonical(cents: int) -> str:
    text = format(Decimal(cents).scaleb(-2), "f").rstrip("0").rstrip(".")
    return text or "0"
