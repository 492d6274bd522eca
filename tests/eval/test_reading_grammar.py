"""The grader's reader against every row of the token grammar's edge-case table
(rewards/README.md "Reading: the token grammar"; the rows live in `tests/reading_cases.py`, and
`tests/rewards/test_reading_grammar.py` runs the same rows through the reward's reader). The
grader imports nothing from `rewards/`, and neither does this test."""

from __future__ import annotations

import pytest

from eval.grounding.derive import derived_values, minus, written
from eval.grounding.display import rendered
from eval.grounding.notation import Reading
from eval.grounding.read import read, read_with_signs
from tests.reading_cases import CALCULATIONS, CASES, RENDERED, Item

_OP = {"add": "+", "sub": "-", "mul": "*", "div": "/"}


def _item(item: Reading | str | None) -> Item:
    if isinstance(item, Reading):
        negative = item.kind == "number" and minus(item.text)
        flags = ("c" if item.whole else "") + ("-" if negative else "")
        return (item.kind, item.value, flags)
    return item


@pytest.mark.parametrize(("text", "expected"), CASES, ids=[c[0] for c in CASES])
def test_the_grader_reads_every_edge_case_as_the_grammar_says(text, expected) -> None:
    assert [_item(i) for i in read_with_signs(text)] == expected
    tokens = [e for e in expected if isinstance(e, tuple)]
    assert [_item(r) for r in read(text)] == tokens


@pytest.mark.parametrize(("summary", "expected"), CALCULATIONS, ids=[c[0] for c in CALCULATIONS])
def test_the_grader_reads_every_calculation_as_the_grammar_says(summary, expected) -> None:
    found = [(c.a.value, _OP[c.kind], c.b.value, c.c.value, c.right) for c in written(summary)]
    assert found == expected


def _facts(*values: str):
    def fact(reading: Reading) -> tuple[int, ...]:
        return (0,) if reading.value in values and not reading.whole else ()

    return fact


def test_a_negative_result_grounds_nothing_even_when_it_holds() -> None:
    # G10.3: "b - a = -X, undercharged by X" must not ground an overcharge of X
    derived = derived_values("400.00 - 1027.03 = -627.03, undercharged", _facts("400", "1027.03"))
    assert derived.grounds == {} and derived.wrong == set()
    derived = derived_values("1027.03 - 400.00 = 627.03", _facts("400", "1027.03"))
    assert derived.grounds == {"627.03": {0}}


def test_result_first_and_glued_products_ground_their_result() -> None:
    for summary in ("612.32 = 2 × 306.16", "2 * 306.16 = 612.32", "306.16x2 = 612.32"):
        assert derived_values(summary, _facts("306.16")).grounds == {"612.32": {0}}, summary


@pytest.mark.parametrize(("written", "expected"), RENDERED, ids=[c[0] for c in RENDERED])
def test_the_grader_reads_a_summary_as_it_is_displayed(written, expected) -> None:
    assert [_item(i) for i in read_with_signs(rendered(written))] == expected
