"""Tests for env/engine/money.py: cents <-> two-decimal strings, half-up rounding, exact rates."""

from __future__ import annotations

from decimal import Decimal
from fractions import Fraction

import pytest

from env.engine.money import (
    BadAmount,
    format_cents,
    format_rate,
    parse_amount,
    parse_rate,
    round_half_up,
)


@pytest.mark.parametrize(
    ("cents", "text"),
    [
        (0, "0.00"),
        (5, "0.05"),
        (50, "0.50"),
        (100, "1.00"),
        (1482, "14.82"),
        (123456789, "1234567.89"),
        (-5, "-0.05"),
        (-100, "-1.00"),
        (-14820, "-148.20"),
    ],
)
def test_format_cents_writes_two_decimals_and_a_leading_minus(cents: int, text: str) -> None:
    assert format_cents(cents) == text


@pytest.mark.parametrize(
    ("text", "cents"),
    [
        ("14.82", 1482),
        ("14.8", 1480),
        ("14", 1400),
        ("0", 0),
        ("0.00", 0),
        ("0.01", 1),
        (" 3.50 ", 350),
        ("007.10", 710),
        ("999999999999.99", 99999999999999),
    ],
)
def test_parse_amount_reads_plain_decimals_with_at_most_two_places(text: str, cents: int) -> None:
    assert parse_amount(text) == cents


@pytest.mark.parametrize(
    "text",
    ["1.234", "-1", "1,000", "$5", "", " ", ".5", "5.", "+1", "1e3", "12.5 EUR", "EUR 12.50",
     "1 000", "0x10", "NaN", "inf", "1.2.3", "1000000000000.00", "12.50\n3"],
)  # fmt: skip
def test_parse_amount_refuses_anything_but_a_plain_two_decimal_amount(text: str) -> None:
    with pytest.raises(BadAmount):
        parse_amount(text)


def test_parse_amount_error_says_what_is_accepted() -> None:
    with pytest.raises(BadAmount, match=r"148\.20"):
        parse_amount("1,000")


@pytest.mark.parametrize("cents", [0, 1, 9, 10, 99, 100, 101, 1482, 10**12 - 1])
def test_format_and_parse_round_trip(cents: int) -> None:
    assert parse_amount(format_cents(cents)) == cents


def test_parse_amount_refuses_non_ascii_digits() -> None:
    # `\d` would match any Unicode digit and int() reads them, so "١٢.٣٤" (Arabic-Indic) would
    # parse as 1234 cents and a credit note could be drafted with it: amounts are ASCII only.
    with pytest.raises(BadAmount):
        parse_amount("١٢.٣٤")


def test_round_half_up_rounds_an_exact_half_cent_up_not_to_even() -> None:
    # banker's rounding would give 52 and 2; half-up gives 53 and 3
    assert round_half_up(Fraction(105, 2)) == 53
    assert round_half_up(Fraction(5, 2)) == 3
    assert round_half_up(Decimal("2.5")) == 3
    assert round_half_up(Fraction(7, 2)) == 4


def test_round_half_up_rounds_negative_halves_away_from_zero() -> None:
    assert round_half_up(Fraction(-105, 2)) == -53


def test_round_half_up_keeps_below_half_down_and_integers_as_they_are() -> None:
    assert round_half_up(Fraction(10499, 200)) == 52  # 52.495
    assert round_half_up(Fraction(10501, 200)) == 53  # 52.505
    assert round_half_up(1482) == 1482


def test_parse_rate_is_exact_and_format_rate_writes_the_shortest_decimal() -> None:
    assert parse_rate("0.0825") == Fraction(33, 400)
    assert format_rate(Fraction(33, 400)) == "0.0825"
    assert format_rate(Fraction(19, 100)) == "0.19"
    assert format_rate(parse_rate("0.92140")) == "0.9214"


@pytest.mark.parametrize("text", ["0.0825", "0.19", "0.9213", "1.3650", "0.08375", "1", "0"])
def test_a_rate_survives_format_and_parse_exactly(text: str) -> None:
    assert parse_rate(format_rate(parse_rate(text))) == parse_rate(text)
