"""The reward's reader against every row of the token grammar's edge-case table
(rewards/README.md "Reading: the token grammar"; the rows live in `tests/reading_cases.py`, and
`tests/eval/test_reading_grammar.py` runs the same rows through the grader's reader)."""

from __future__ import annotations

import pytest

from rewards.derived import calculations, derive
from rewards.display import render
from rewards.numbers import Token, read_items, read_text
from tests.reading_cases import CALCULATIONS, CASES, RENDERED, Item


def _item(item: Token | str | None) -> Item:
    if isinstance(item, Token):
        flags = ("c" if item.integer else "") + ("-" if item.negative else "")
        return (item.kind, item.value, flags)
    return item


@pytest.mark.parametrize(("written", "expected"), CASES, ids=[c[0] for c in CASES])
def test_the_reward_reads_every_edge_case_as_the_grammar_says(written, expected) -> None:
    assert [_item(i) for i in read_items(written)] == expected
    tokens = [e for e in expected if isinstance(e, tuple)]
    assert [_item(t) for t in read_text(written)] == tokens


@pytest.mark.parametrize(("summary", "expected"), CALCULATIONS, ids=[c[0] for c in CALCULATIONS])
def test_the_reward_reads_every_calculation_as_the_grammar_says(summary, expected) -> None:
    found = [
        (c.left.value, c.op, c.right.value, c.result.value, c.holds) for c in calculations(summary)
    ]
    assert found == expected


def _facts(*values: str):
    def fact(token: Token) -> tuple[int, ...]:
        return (0,) if token.value in values and not token.integer else ()

    return fact


def test_a_negative_result_grounds_nothing_even_when_it_holds() -> None:
    # G10.3: "b - a = -X, undercharged by X" must not ground an overcharge of X
    derived = derive("400.00 - 1027.03 = -627.03, undercharged", _facts("400", "1027.03"))
    assert derived.grounded == {} and derived.wrong == frozenset()
    derived = derive("1027.03 - 400.00 = 627.03", _facts("400", "1027.03"))
    assert derived.grounded == {"627.03": (0,)}


def test_result_first_and_glued_products_ground_their_result() -> None:
    for summary in ("612.32 = 2 × 306.16", "2 * 306.16 = 612.32", "306.16x2 = 612.32"):
        assert derive(summary, _facts("306.16")).grounded == {"612.32": (0,)}, summary


def test_a_list_marker_never_glues_a_count_onto_an_amount() -> None:
    for summary in ("(1): 306.16", "1. 306.16", "- 1 306.16"[2:], "| 1 | 306.16 |"):
        values = [t.value for t in read_text(summary)]
        assert "306.16" in values or summary == "1 306.16", (summary, values)
    assert [t.value for t in read_text("1 306.16")] == ["1306.16"]  # a thousands group


@pytest.mark.parametrize(("written", "expected"), RENDERED, ids=[c[0] for c in RENDERED])
def test_the_reward_reads_a_summary_as_it_is_displayed(written, expected) -> None:
    assert [_item(i) for i in read_items(render(written))] == expected
