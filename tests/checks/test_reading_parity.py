"""`python -m checks.reading_parity` at a reduced count: the two readers render alike, agree on
every token and read the digits the rendered text shows; the fuzz reports (and fails on) a
disagreement when one reader is made to read differently, and a display mismatch when a reader
splits a number a person sees as one."""

from __future__ import annotations

import contextlib
import io
import re

import pytest

from checks import reading_parity


def _run(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        status = reading_parity.main(list(argv))
    return status, out.getvalue()


def test_the_two_readers_agree_on_a_thousand_generated_summaries() -> None:
    status, printed = _run("--summaries", "1000", "--seed", "3")
    assert status == 0, printed
    assert "ok: 0 disagreements and 0 display mismatches over 1,000 summaries" in printed
    assert "calculations that hold" in printed and "kind id" in printed
    assert "summaries read otherwise once rendered" in printed


def test_a_reader_that_reads_one_token_differently_fails_the_check(monkeypatch) -> None:
    real = reading_parity._grader_item

    def skewed(item):  # the grader made to read every id in lower case
        found = real(item)
        return (*found[:3], found[3].lower(), *found[4:]) if found[2:3] == ("id",) else found

    monkeypatch.setattr(reading_parity, "_grader_item", skewed)
    status, printed = _run("--summaries", "300")
    assert status == 1
    assert "FAIL:" in printed and "'id'" in printed and "summary:" in printed


def test_the_display_check_fails_a_reader_that_splits_a_displayed_number(monkeypatch) -> None:
    assert reading_parity.display_mismatch("refunded 9226.04 and 5\n7") is None
    real = reading_parity.read_text

    def split(text: str):  # the reward made to read a number's first digit apart
        return real(re.sub("([0-9])([0-9])", "\\1 - \\2", text, count=1))

    monkeypatch.setattr(reading_parity, "read_text", split)
    found = reading_parity.display_mismatch("refunded 9226.04")
    assert found is not None and "the reward reads digit runs ['9', '226', '04']" in found
    status, printed = _run("--summaries", "300")
    assert status == 1 and "display mismatches:" in printed


def test_both_sides_render_with_the_same_html_rules() -> None:
    from eval.grounding import display as grader
    from rewards import display as reward

    assert grader.BLOCK_ELEMENTS == reward._BLOCK_TAGS
    assert set(reward._SHOWN_ATTRIBUTES) == grader.SHOWN_ATTRIBUTES
    assert grader._DEFAULT_IGNORABLE == reward._IGNORABLE


def test_a_bad_count_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert reading_parity.main(["--summaries", "0"]) == 2
    assert "error" in capsys.readouterr().err


def _tex_commands() -> list[str]:
    from eval.grounding import display as grader
    from rewards import display as reward

    return sorted(grader.TEX_SHIFTING | reward._TEX_MOVING)


@pytest.mark.parametrize("command", _tex_commands())
def test_both_readers_read_a_formula_with_a_shifting_tex_command_as_unreadable(command) -> None:
    from eval.grounding.display import rendered
    from rewards.display import render

    formula = f"paid \\(9\\{command}{{x}} 1027.03\\)"
    assert render(formula) == rendered(formula)
    assert "\u202e" in render(formula), command


@pytest.mark.parametrize("command", ["def", "newcommand", "let", "require", "DeclareMathOperator"])
def test_a_macro_defined_anywhere_makes_every_line_unreadable_in_both(command) -> None:
    from eval.grounding.display import rendered
    from rewards.display import render

    text = f"Refunded 120.56.\n\n\\(\\{command}\\r{{9}}\\)\n\nthen \\(\\r1027.03\\)"
    lines = [line for line in render(text).split("\n") if line.strip("\u202e ")]
    assert render(text) == rendered(text)
    assert lines and all(line.startswith("\u202e") for line in lines)
