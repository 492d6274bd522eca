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
from decimal import ROUND_DOWN, ROUND_HALF_UP, Decimal, localcontext

from eval.grounding.display import rendered
from eval.grounding.notation import Reading, decimal_text
from eval.grounding.read import read_with_signs

_KIND = {"+": "add", "-": "sub", "x": "mul", "X": "mul", "×": "mul", "·": "mul", "*": "mul"}
_KIND.update({"/": "div", "÷": "div"})


def minus(text: str) -> bool:
    """G2.5: is a `-` written before the first digit (`-12.40`, `$-5`, `USD -5`)? A token
    without a digit (`forty-eight`) has no sign."""
    seen_dash = False
    for ch in text:
        if "0" <= ch <= "9":
            return seen_dash
        seen_dash = seen_dash or ch == "-"
    return False


def _value(r: Reading) -> Decimal:
    return -Decimal(r.value) if minus(r.text) else Decimal(r.value)


def _value_of(kind: str, a: Decimal, b: Decimal) -> Decimal:
    """`a kind b` exactly (a quotient to 60 significant digits); b is no zero for a quotient."""
    with localcontext() as ctx:
        ctx.prec = 10_000
        if kind == "add":
            return a + b
        if kind == "sub":
            return a - b
        if kind == "mul":
            return a * b
        ctx.prec = 60
        return a / b


def _right(kind: str, a: Decimal, b: Decimal, c: Decimal) -> bool:
    """G10.2 in a context wide enough that nothing rounds: + - x exact; a quotient exact, or
    rounded half up to the cent, or, written to more than two places, rounded half up or cut
    off at its own last place."""
    if kind != "div":
        return _value_of(kind, a, b) == c
    if not b:
        return False
    with localcontext() as ctx:
        ctx.prec = 10_000
        if c * b == a:
            return True
        quotient = _value_of(kind, a, b)
        exponent = c.as_tuple().exponent
        places = max(2, -exponent) if isinstance(exponent, int) else 2
        step = Decimal("0.01") if places == 2 else Decimal(f"1e-{places}")
        if quotient.quantize(step, rounding=ROUND_HALF_UP) == c:
            return True
        return places > 2 and quotient.quantize(step, rounding=ROUND_DOWN) == c


def cents_of(calc: Written) -> str:
    """G10.5: the exact value of a right calculation, rounded half up to the cent."""
    value = _value_of(calc.kind, _value(calc.a), _value(calc.b))
    with localcontext() as ctx:
        ctx.prec = 10_000
        return decimal_text(value.quantize(Decimal("0.01"), rounding=ROUND_HALF_UP))


def small_count(r: Reading) -> bool:
    """G10.3: `n` of a product or quotient: a whole number from 2 to 12, no currency, no sign."""
    return r.whole and not minus(r.text) and 2 <= int(r.value) <= 12


@dataclass
class Derived:
    """Results a calculation grounds (value -> the calls behind its operands) and results of
    calculations whose arithmetic is wrong."""

    grounds: dict[str, set[int]] = field(default_factory=dict)
    wrong: set[str] = field(default_factory=set)


@dataclass(frozen=True)
class Written:
    """One calculation as written: `a kind b = c`, and whether its arithmetic is right."""

    a: Reading
    kind: str  # add, sub, mul, div
    b: Reading
    c: Reading
    right: bool


def _is_number(item: Reading | str | None) -> bool:
    return isinstance(item, Reading) and item.kind == "number"


def _is_op(item: Reading | str | None) -> bool:
    return isinstance(item, str) and item in _KIND


def written(summary: str) -> list[Written]:
    """G10.1: every `a op b = c` of the summary as displayed (G2.0; overlapping runs too:
    `a - b = c - d = e` is two), and every `c = a op b` with no operator just before it and no
    operator or `=` just after it."""
    items = read_with_signs(rendered(summary))
    out = []
    for k in range(len(items) - 4):
        w = items[k : k + 5]
        if _is_number(w[0]) and _is_op(w[1]) and _is_number(w[2]) and w[3] == "=":
            a, op, b, c = w[0], w[1], w[2], w[4]
        elif _is_number(w[0]) and w[1] == "=" and _is_op(w[3]) and _is_number(w[4]):
            before = items[k - 1] if k > 0 else None
            after = items[k + 5] if k + 5 < len(items) else None
            if _is_op(before) or _is_op(after) or after == "=":
                continue
            c, a, op, b = w[0], w[2], w[3], w[4]
        else:
            continue
        if not all(_is_number(r) for r in (a, b, c)):
            continue
        assert isinstance(a, Reading) and isinstance(b, Reading) and isinstance(c, Reading)
        assert isinstance(op, str)
        kind = _KIND[op]
        out.append(Written(a, kind, b, c, _right(kind, _value(a), _value(b), _value(c))))
    return out


def derived_values(summary: str, found_fact: Callable[[Reading], tuple[int, ...]]) -> Derived:
    """G10.1-G10.3 over the summary. `found_fact` gives the calls that show a reading as a
    found fact (G4), or () for anything else (echo, count, own total, nothing). A result
    written negative grounds nothing (G10.3: an undercharge is no overcharge)."""
    out = Derived()
    for calc in written(summary):
        a, kind, b, c = calc.a, calc.kind, calc.b, calc.c
        if not calc.right:
            out.wrong.add(c.value)
            continue
        if minus(c.text):
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
            out.grounds.setdefault(cents_of(calc), set()).update(calls)  # G10.5
    return out
