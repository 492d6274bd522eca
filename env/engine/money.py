"""Money: integer cents inside, two-decimal strings outside.

Every conversion between the two lives here so that rounding is done one way everywhere:
half-up to the cent on exact decimals (never binary floats).
"""

from __future__ import annotations

import re
from decimal import ROUND_HALF_UP, Decimal
from fractions import Fraction
from functools import lru_cache

CURRENCIES = ("USD", "EUR", "GBP", "CAD", "AUD")
_AMOUNT = re.compile(r"^[0-9]{1,12}(\.[0-9]{1,2})?$")  # ASCII digits only


class BadAmount(ValueError):
    """An amount string that is not a non-negative decimal with at most two decimals."""


def round_half_up(value: Fraction | Decimal | int) -> int:
    """Rounds an exact amount of cents to a whole cent, halves away from zero."""
    if isinstance(value, int):
        return value
    if isinstance(value, Fraction):  # integer arithmetic: exact, and no Decimal context limits
        whole, rest = divmod(abs(value.numerator), value.denominator)
        if 2 * rest >= value.denominator:
            whole += 1
        return whole if value.numerator >= 0 else -whole
    return int(value.quantize(Decimal(1), rounding=ROUND_HALF_UP))


def format_cents(cents: int) -> str:
    """1482 -> "14.82"; -5 -> "-0.05"."""
    sign = "-" if cents < 0 else ""
    whole, frac = divmod(abs(cents), 100)
    return f"{sign}{whole}.{frac:02d}"


def parse_amount(text: str) -> int:
    """ "14.82" -> 1482. Refuses signs, thousands separators and a third decimal."""
    text = text.strip()
    if not _AMOUNT.match(text):
        raise BadAmount(
            f"amount {text!r} is not a plain decimal like '148.20' (digits, optional '.' "
            "and at most two decimals, no currency symbol or sign)"
        )
    whole, _, frac = text.partition(".")
    return int(whole) * 100 + int((frac + "00")[:2])


@lru_cache(maxsize=4096)
def parse_rate(text: str) -> Fraction:
    """A rate kept as an exact decimal string ("0.0825") -> Fraction."""
    return Fraction(Decimal(text))


def format_rate(rate: Fraction) -> str:
    """Fraction(33, 400) -> "0.0825": the shortest exact decimal; whole numbers print as "1"."""
    text = format(Decimal(rate.numerator) / Decimal(rate.denominator), "f")
    if "." in text:
        text = text.rstrip("0")
        if text.endswith("."):
            text += "0"
    return text
