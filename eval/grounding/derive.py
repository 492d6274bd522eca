"""Derived amounts, the grader's reading: which results do the summary's calculations ground?

rewards/README.md G10 (design §5, "Decided in the third release"): a written `a op b = c`
(G10.1) whose arithmetic holds exactly in `Decimal` (G10.2) grounds `c` when its operands are
found facts (G10.3); a wrong one makes `c` untraceable (G10.4, applied in
`eval.grounding.verdict`). Written apart from `rewards/derived.py` on purpose, like the rest of
this package: `python -m checks.agreement` holds the two to the same verdicts.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Decimal, localcontext

from eval.grounding.notation import CODES, SYMBOLS, Reading
from eval.grounding.read import read_with_signs

_KIND = {"+": "add", "-": "sub", "x": "mul", "X": "mul", "×": "mul", "*": "mul"}
_KIND.update({"/": "div", "÷": "div"})


def minus(text: str) -> bool:
    """G10.2: is a sign `-` written before the digits (`-12.40`, `$-5`, `USD-5`)?"""
    if text.startswith("-"):
        return True
    if text[:1] in SYMBOLS:
        return text[1:2] == "-"
    return text[:3].upper() in CODES and text[3:4] == "-"


def _value(r: Reading) -> Decimal:
    return -Decimal(r.value) if minus(r.text) else Decimal(r.value)


def _right(kind: str, a: Decimal, b: Decimal, c: Decimal) -> bool:
    """G10.2 in a context wide enough that nothing rounds: + - x exact; a quotient exact,
    or rounded half up to the cent."""
    with localcontext() as ctx:
        ctx.prec = 10_000
        if kind == "add":
            return a + b == c
        if kind == "sub":
            return a - b == c
        if kind == "mul":
            return a * b == c
        if not b:
            return False
        if c * b == a:
            return True
        ctx.prec = 60
        quotient = a / b
        ctx.prec = 10_000
        return quotient.quantize(Decimal("0.01"), rounding=ROUND_HALF_UP) == c


def small_count(r: Reading) -> bool:
    """G10.3: `n` of a product or quotient: a whole number from 2 to 12, no currency, no sign."""
    return r.whole and not minus(r.text) and 2 <= int(r.value) <= 12


@dataclass
class Derived:
    """Results a calculation grounds (value -> the calls behind its operands) and results of
    calculations whose arithmetic is wrong."""

    grounds: dict[str, set[int]] = field(default_factory=dict)
    wrong: set[str] = field(default_factory=set)


def derived_values(summary: str, found_fact: Callable[[Reading], tuple[int, ...]]) -> Derived:
    """G10.1-G10.3 over the summary. `found_fact` gives the calls that show a reading as a
    found fact (G4), or () for anything else (echo, count, own total, nothing)."""
    items = read_with_signs(summary)
    out = Derived()
    for start in range(len(items) - 4):
        a, op, b, eq, c = items[start : start + 5]
        if eq != "=" or not isinstance(op, str) or op not in _KIND:
            continue
        if not all(isinstance(r, Reading) and r.kind == "number" for r in (a, b, c)):
            continue
        assert isinstance(a, Reading) and isinstance(b, Reading) and isinstance(c, Reading)
        kind = _KIND[op]
        if not _right(kind, _value(a), _value(b), _value(c)):
            out.wrong.add(c.value)
            continue
        calls: tuple[int, ...] = ()
        if kind in ("add", "sub"):
            first, second = found_fact(a), found_fact(b)
            calls = first + second if first and second else ()
        elif small_count(b):
            calls = found_fact(a)
        if not calls and kind == "mul" and small_count(a):
            calls = found_fact(b)
        if calls:
            out.grounds.setdefault(c.value, set()).update(calls)
    return out
