"""Derived amounts: a calculation written in the summary grounds a number no tool printed.

Design §5 ("Decided in the third release"), rewards/README.md G10. `calculations` finds every
`a op b = c` of the summary (G10.1) and checks its arithmetic exactly in `Decimal` (G10.2);
`derive` decides which results it grounds, given which operands are found facts (G10.3): one
step, fail closed. `rewards.provenance` gives the citations their status from it (G10.4). The
grader implements the same rules apart (`eval/grounding/derive.py`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Context, Decimal
from functools import lru_cache

from rewards.numbers import Token, read_items

_EXACT = Context(prec=10_000)
_CENT = Decimal("0.01")
_OPS = {"+": "+", "-": "-", "x": "*", "X": "*", "×": "*", "*": "*", "/": "/", "÷": "/"}
_NEGATIVE = re.compile(r"-|(?:[$€£]|(?i:USD|EUR|GBP|CAD|AUD))-")


@dataclass(frozen=True)
class Calculation:
    """`left op right = result` as written; `holds`: its arithmetic is right (G10.2)."""

    left: Token
    op: str  # "+", "-", "*" or "/"
    right: Token
    result: Token
    holds: bool


def signed(token: Token) -> Decimal:
    """G10.2: the token's value with the sign written before its digits (`-12.40`, `$-5`)."""
    value = Decimal(token.value)
    return -value if _NEGATIVE.match(token.raw) else value


def _holds(a: Decimal, op: str, b: Decimal, c: Decimal) -> bool:
    """G10.2: exact for + - x; a quotient exactly, or rounded half up to the cent."""
    if op == "+":
        return _EXACT.add(a, b) == c
    if op == "-":
        return _EXACT.subtract(a, b) == c
    if op == "*":
        return _EXACT.multiply(a, b) == c
    if b == 0:
        return False
    if _EXACT.multiply(c, b) == a:
        return True
    quotient = Context(prec=60).divide(a, b)
    return quotient.quantize(_CENT, ROUND_HALF_UP, _EXACT) == c


@lru_cache(maxsize=4096)
def calculations(summary: str) -> tuple[Calculation, ...]:
    """G10.1: every run of five items `number op number = number`, overlapping runs included
    (a chain `a - b = c - d = e` is two calculations)."""
    items = read_items(summary)
    found = []
    for i in range(len(items) - 4):
        left, op, right, equals, result = items[i : i + 5]
        if not (isinstance(op, str) and op in _OPS and equals == "="):
            continue
        numbers = (left, right, result)
        if not all(isinstance(t, Token) and t.kind == "number" for t in numbers):
            continue
        assert isinstance(left, Token) and isinstance(right, Token) and isinstance(result, Token)
        holds = _holds(signed(left), _OPS[op], signed(right), signed(result))
        found.append(Calculation(left, _OPS[op], right, result, holds))
    return tuple(found)


def is_count(token: Token) -> bool:
    """G10.3: the n of `a x n` or `a / n`: a whole number 2-12 without currency or sign."""
    return token.integer and 2 <= int(token.value) <= 12 and not _NEGATIVE.match(token.raw)


@dataclass(frozen=True)
class Derivations:
    """Result values (canonical, as citations carry them) a calculation grounds, with the calls
    that showed its operands; and result values of calculations that do not hold."""

    grounded: dict[str, tuple[int, ...]]
    wrong: frozenset[str]


def derive(summary: str, fact: Callable[[Token], tuple[int, ...]]) -> Derivations:
    """G10.3. `fact(token)`: the calls showing the token as a found fact (G4: evidence, not a
    count, time or own total), or () when it is none. A holding calculation grounds its result
    when `a + b` / `a - b` have both operands found facts, `a x n` / `n x a` / `a / n` have `a`
    a found fact and `n` a count; anything else (an echo, a derived number, a complaint number,
    a count as `a`) grounds nothing."""
    grounded: dict[str, set[int]] = {}
    wrong: set[str] = set()
    for calc in calculations(summary):
        if not calc.holds:
            wrong.add(calc.result.value)
            continue
        sources = _operand_sources(calc, fact)
        if sources is not None:
            grounded.setdefault(calc.result.value, set()).update(sources)
    return Derivations(
        {value: tuple(sorted(calls)) for value, calls in grounded.items()}, frozenset(wrong)
    )


def _operand_sources(
    calc: Calculation, fact: Callable[[Token], tuple[int, ...]]
) -> tuple[int, ...] | None:
    """The calls behind a holding calculation's traced operands; None when it grounds nothing."""
    if calc.op in ("+", "-"):
        left, right = fact(calc.left), fact(calc.right)
        return (*left, *right) if left and right else None
    if is_count(calc.right) and (left := fact(calc.left)):
        return left
    if calc.op == "*" and is_count(calc.left) and (right := fact(calc.right)):
        return right
    return None
