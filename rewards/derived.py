"""Derived amounts: a calculation written in the summary grounds a number no tool printed.

Design §5 ("Decided in the third release"), rewards/README.md G10. `calculations` finds every
`a op b = c` of the summary (G10.1) and checks its arithmetic exactly in `Decimal` (G10.2);
`derive` decides which results it grounds, given which operands are found facts (G10.3): one
step, fail closed. `rewards.provenance` gives the citations their status from it (G10.4). The
grader implements the same rules apart (`eval/grounding/derive.py`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from decimal import ROUND_DOWN, ROUND_HALF_UP, Context, Decimal
from functools import lru_cache

from rewards.display import render
from rewards.numbers import Token, canonical, read_items

_EXACT = Context(prec=10_000)
_CENT = Decimal("0.01")
_OPS = {"+": "+", "-": "-", "x": "*", "X": "*", "×": "*", "·": "*", "*": "*", "/": "/", "÷": "/"}


@dataclass(frozen=True)
class Calculation:
    """`left op right = result` as written; `holds`: its arithmetic is right (G10.2)."""

    left: Token
    op: str  # "+", "-", "*" or "/"
    right: Token
    result: Token
    holds: bool


def signed(token: Token) -> Decimal:
    """G10.2: the token's value with its sign (G2.5: `-12.40`, `$-5`, `USD -5`)."""
    value = Decimal(token.value)
    return -value if token.negative else value


def _exact(a: Decimal, op: str, b: Decimal) -> Decimal | None:
    """The exact value of `a op b` (a quotient to 60 digits); None for a division by zero."""
    if op == "+":
        return _EXACT.add(a, b)
    if op == "-":
        return _EXACT.subtract(a, b)
    if op == "*":
        return _EXACT.multiply(a, b)
    return Context(prec=60).divide(a, b) if b else None


def _places(value: Decimal) -> int:
    exponent = value.as_tuple().exponent
    return -exponent if isinstance(exponent, int) and exponent < 0 else 0


def _holds(a: Decimal, op: str, b: Decimal, c: Decimal) -> bool:
    """G10.2: exact for + - x; a quotient exactly, or rounded half up to the cent, or, written
    with more places than two, rounded half up or cut at its own last place."""
    if op != "/":
        return _exact(a, op, b) == c
    if b == 0:
        return False
    if _EXACT.multiply(c, b) == a:
        return True
    quotient = _exact(a, op, b)
    assert quotient is not None
    places = _places(c)
    if places <= 2:
        return quotient.quantize(_CENT, ROUND_HALF_UP, _EXACT) == c
    last = Decimal(1).scaleb(-places)
    return c in (quotient.quantize(last, ROUND_HALF_UP, _EXACT),
                 quotient.quantize(last, ROUND_DOWN, _EXACT))  # fmt: skip


def to_the_cent(calc: Calculation) -> str:
    """G10.5: the value of `a op b` rounded half up to the cent, canonical."""
    exact = _exact(signed(calc.left), calc.op, signed(calc.right))
    assert exact is not None  # a holding calculation divides by no zero
    return canonical(str(exact.quantize(_CENT, ROUND_HALF_UP, _EXACT)))


def _number(item: Token | str | None) -> bool:
    return isinstance(item, Token) and item.kind == "number"


def _operator(item: Token | str | None) -> bool:
    return isinstance(item, str) and item in _OPS


@lru_cache(maxsize=4096)
def calculations(summary: str) -> tuple[Calculation, ...]:
    """G10.1: every `a op b = c` (result last) of the summary as displayed (G2.0), overlapping
    runs included (a chain `a - b = c - d = e` is two), and every `c = a op b` (result first)
    that no operator stands before and no operator or `=` after."""
    items = read_items(render(summary))
    found = []
    for i in range(len(items) - 4):
        run = items[i : i + 5]
        if _number(run[0]) and _operator(run[1]) and _number(run[2]) and run[3] == "=":
            left, op, right, result = run[0], run[1], run[2], run[4]
        elif _number(run[0]) and run[1] == "=" and _operator(run[3]) and _number(run[4]):
            before = items[i - 1] if i else None
            after = items[i + 5] if i + 5 < len(items) else None
            if _operator(before) or _operator(after) or after == "=":
                continue
            result, left, op, right = run[0], run[2], run[3], run[4]
        else:
            continue
        if not (_number(left) and _number(right) and _number(result)):
            continue
        assert isinstance(left, Token) and isinstance(right, Token) and isinstance(result, Token)
        assert isinstance(op, str)
        holds = _holds(signed(left), _OPS[op], signed(right), signed(result))
        found.append(Calculation(left, _OPS[op], right, result, holds))
    return tuple(found)


def is_count(token: Token) -> bool:
    """G10.3: the n of `a x n` or `a / n`: a whole number 2-12 without currency or sign."""
    return token.integer and 2 <= int(token.value) <= 12 and not token.negative


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
    a count as `a`) grounds nothing; nor does a negative result (G10.3: `b - a = -X` shows an
    undercharge, never an overcharge of X)."""
    grounded: dict[str, set[int]] = {}
    wrong: set[str] = set()
    for calc in calculations(summary):
        if not calc.holds:
            wrong.add(calc.result.value)
            continue
        if calc.result.negative:
            continue
        sources = _operand_sources(calc, fact)
        if sources is not None:
            grounded.setdefault(calc.result.value, set()).update(sources)
            grounded.setdefault(to_the_cent(calc), set()).update(sources)  # G10.5
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
