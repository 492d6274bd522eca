"""`python -m checks.agreement`: the binary reward and the grader's grounded success agree.

A small run (50 random episodes, every cheat of `checks.hacks.cheats` once) goes through the CLI;
the verdict logic that decides the exit status is tested on hand-made rows, since a real
disagreement cannot be produced without breaking one of the two implementations.
"""

from __future__ import annotations

import contextlib
import io
import json
from collections.abc import Generator
from pathlib import Path

import pytest

from checks.agreement import (
    Verdict,
    disagreements,
    exit_status,
    judge,
    main,
    play,
    print_report,
    splits,
)
from checks.hacks.cheats import CHEATS
from env.generation.generator import generate
from env.generation.splits import split_assignment, split_seeds
from env.scenario import Scenario, ToolCall, reveal_truth


def verdict(binary: float, grounded: bool, *, success: bool = True, why: str = "") -> Verdict:
    return Verdict("hand-made", "eval-1", binary, success, success, grounded, False, False, why)


@pytest.fixture(scope="module")
def small_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[int, str, list[dict]]:
    out = tmp_path_factory.mktemp("agreement") / "verdicts.json"
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        # the surface-cue cheats are left out here: their model policy's fit takes seconds
        status = main(
            ["--episodes", "50", "--cheat-scenarios", "1", "--no-surface", "--json", str(out)]
        )
    return status, printed.getvalue(), json.loads(out.read_text(encoding="utf-8"))


def test_a_small_run_has_no_binary_vs_grounded_disagreement(small_run) -> None:
    status, printed, rows = small_run

    assert status == 0
    assert "\n0 binary-vs-grounded disagreements" in printed
    assert len(rows) == 50 + len(CHEATS)
    assert sum(r["source"] == "random" for r in rows) == 50
    assert {r["source"] for r in rows} - {"random"} == {c.name for c in CHEATS}
    assert all((r["binary"] == 1.0) == r["grounded_success"] for r in rows)
    # the run is not trivially empty: both verdicts occur
    assert any(r["grounded_success"] for r in rows) and not all(r["grounded_success"] for r in rows)


def test_the_two_sides_also_agree_on_success_and_the_hallucination_flag(small_run) -> None:
    _, printed, rows = small_run

    assert all(r["reward_success"] == r["success"] for r in rows)
    assert all(r["reward_hallucinated"] == r["grader_hallucinated"] for r in rows)
    assert f"success (reward's conditions vs grader's): agree {len(rows)}, differ 0" in printed


def test_every_success_that_is_not_grounded_is_listed_with_its_reason(small_run) -> None:
    _, printed, rows = small_run
    split_rows = [r for r in rows if r["success"] and not r["grounded_success"]]

    assert split_rows, "the cheats that cite invented numbers on a right answer make splits"
    assert f"\n{len(split_rows)} successes that are not grounded successes:" in printed
    for row in split_rows:
        assert row["why_not_grounded"]
        assert f"{row['scenario_id']:<16} {row['why_not_grounded']}" in printed
    assert all(r["why_not_grounded"] == "" for r in rows if r not in split_rows)


def test_a_disagreement_in_either_direction_makes_the_exit_status_one() -> None:
    agreeing = [verdict(1.0, True), verdict(0.0, False), verdict(0.0, False, success=False)]
    rewarded_ungrounded = verdict(1.0, False, why="'123.45' untraceable")
    grounded_unrewarded = verdict(0.0, True)

    assert exit_status(agreeing) == 0 and disagreements(agreeing) == []
    assert exit_status([*agreeing, rewarded_ungrounded]) == 1
    assert exit_status([grounded_unrewarded, *agreeing]) == 1
    assert disagreements([*agreeing, rewarded_ungrounded, grounded_unrewarded]) == [
        rewarded_ungrounded,
        grounded_unrewarded,
    ]


def test_the_report_prints_each_disagreement_and_returns_its_status(capsys) -> None:
    rows = [verdict(1.0, True), verdict(1.0, False, why="no found fact")]

    assert print_report(rows) == 1
    printed = capsys.readouterr().out
    assert "| binary 1 | 1 | 1 |" in printed
    assert "1 binary-vs-grounded disagreements" in printed
    assert "DISAGREE hand-made eval-1: binary 1.0, grounded False" in printed
    assert splits(rows) == [rows[1]]


def _faulted() -> Scenario:
    for seed in split_seeds("eval"):
        if split_assignment("eval", seed).label == "wrong_tax_rate":
            return generate("eval", seed)
    raise LookupError("wrong_tax_rate")


def _reference_with(scenario: Scenario, extra: str) -> Generator[ToolCall, str, None]:
    """The reference solution with `extra` appended to its summary."""
    *steps, submit = reveal_truth(scenario).reference
    for step in steps:
        _result = yield step  # the tool's answer: the reference does not need it
    arguments = dict(submit.arguments)
    arguments["summary"] = f"{arguments['summary']} {extra}"
    yield ToolCall("submit_findings", arguments)


def test_an_invented_number_on_a_right_answer_is_a_split_that_names_the_number() -> None:
    scenario = _faulted()
    invented = "98765.43"
    record = play(scenario, _reference_with(scenario, invented))
    assert not any("98765" in r.result or "98,765" in r.result for r in record.tool_log)

    row = judge("invented", scenario, record)

    assert row.success and row.reward_success
    assert not row.grounded_success and row.binary == 0.0
    assert row.why_not_grounded == "'98765.43' untraceable"


def test_the_reference_solution_is_a_grounded_success_on_both_sides() -> None:
    scenario = _faulted()

    row = judge("reference", scenario, play(scenario, _reference_with(scenario, "")))

    assert row.grounded_success and row.binary == 1.0 and row.why_not_grounded == ""


def test_a_negative_size_or_an_unwritable_json_path_is_a_one_line_error(
    tmp_path: Path, capsys
) -> None:
    assert main(["--episodes", "-1"]) == 2
    assert "--episodes must be 0 or more" in capsys.readouterr().err

    status = main(["--episodes", "0", "--cheat-scenarios", "0", "--json", str(tmp_path)])

    error = capsys.readouterr().err
    assert status == 2
    assert error.startswith(f"error: cannot write --json {tmp_path}") and error.count("\n") == 1
