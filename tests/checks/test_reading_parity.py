"""`python -m checks.reading_parity` at a reduced count: the two readers agree on every token,
and the fuzz reports (and fails on) a disagreement when one reader is made to read differently."""

from __future__ import annotations

import contextlib
import io

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
    assert "ok: 0 disagreements over 1,000 summaries" in printed
    assert "calculations that hold" in printed and "kind id" in printed


def test_a_reader_that_reads_one_token_differently_fails_the_check(monkeypatch) -> None:
    real = reading_parity._grader_item

    def skewed(item):  # the grader made to read every id in lower case
        found = real(item)
        return (*found[:3], found[3].lower(), *found[4:]) if found[2:3] == ("id",) else found

    monkeypatch.setattr(reading_parity, "_grader_item", skewed)
    status, printed = _run("--summaries", "300")
    assert status == 1
    assert "FAIL:" in printed and "'id'" in printed and "summary:" in printed


def test_a_bad_count_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert reading_parity.main(["--summaries", "0"]) == 2
    assert "error" in capsys.readouterr().err
