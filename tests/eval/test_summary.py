"""The summary's statistics on a small synthetic episodes.jsonl, and the run comparison."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from eval import compare
from eval.episode_log import EpisodeLine, EpisodeLog, read_episodes
from eval.stats import wilson_interval
from eval.summary import render_markdown, summarize, write_summary

STAMP = {"model": "synthetic", "split": "eval", "ledgergym_version": "9.9.9"}
STAMP |= {"commit": "abc", "date": "2026-01-01"}


def line(scenario: str, sample: int, success: bool, **fields: Any) -> EpisodeLine:
    labels = {"s1": ("duplicate_payment", "L1"), "s2": ("no_error", "L2")}
    label, difficulty = labels.get(scenario, ("timezone_period_boundary", "L3"))
    error = fields.pop("error", None)
    grade = None if error else {"success": success, "submitted": True, **fields.pop("grade", {})}
    return EpisodeLine(
        scenario_id=scenario,
        sample=sample,
        split="eval",
        seed=0,
        label=label,
        difficulty=difficulty,
        policy="synthetic",
        success=success,
        error=error,
        grade=grade,
        **fields,
    )


# s1: 2/2 successes, s2: 1/2, s3 (held-out class): 0/2 with one error line
LINES = [
    line("s1", 0, True, tool_calls=8, turns=9, cost_usd=0.03, reward_total=1.0),
    line("s1", 1, True, tool_calls=10, turns=11, cost_usd=0.03, reward_total=1.0),
    line("s2", 0, True, tool_calls=6, turns=7, cost_usd=0.02, reward_total=1.0),
    line("s2", 1, False, tool_calls=4, turns=5, cost_usd=0.01, grade={"false_reversal": True}),
    line("s3", 0, False, tool_calls=2, turns=3, grade={"hallucinated_numbers": True}),
    line("s3", 1, False, error="ValueError: boom"),
]


@pytest.fixture
def summary(tmp_path: Path) -> dict[str, Any]:
    log = EpisodeLog(tmp_path / "episodes.jsonl")
    for item in LINES:
        log.append(item)
    log.close()
    return summarize(read_episodes(tmp_path / "episodes.jsonl"), k=2, stamp=STAMP)


def test_pass_at_1_and_k_are_the_means_over_scenarios(summary):
    # pass^1 = mean(2/2, 1/2, 0/2) = 0.5; pass^2 = mean(C(2,2)/C(2,2), 0, 0) = 1/3
    assert summary["overall"]["pass1"]["estimate"] == pytest.approx(0.5)
    assert summary["overall"]["passk"]["estimate"] == pytest.approx(1 / 3)
    low, high = summary["overall"]["pass1"]["low"], summary["overall"]["pass1"]["high"]
    assert 0.0 <= low <= 0.5 <= high <= 1.0
    assert (summary["scenarios"], summary["episodes"], summary["errors"]) == (3, 6, 1)


def test_groups_report_pass_at_1_pass_at_k_and_n(summary):
    by_label = summary["by_root_cause"]
    assert list(by_label) == ["duplicate_payment", "timezone_period_boundary", "no_error"]
    assert by_label["no_error"]["n"] == 1
    assert by_label["no_error"]["pass1"]["estimate"] == pytest.approx(0.5)
    assert by_label["no_error"]["passk"]["estimate"] == 0.0
    assert summary["by_difficulty"]["L1"]["passk"]["estimate"] == 1.0


def test_the_held_out_class_is_reported_apart_from_the_trained_classes(summary):
    assert summary["heldout"]["n"] == 1 and summary["heldout"]["pass1"]["estimate"] == 0.0
    assert summary["trained_classes"]["n"] == 2
    assert summary["trained_classes"]["pass1"]["estimate"] == pytest.approx(0.75)


def test_rates_are_wilson_intervals_over_graded_episodes(summary):
    # five graded episodes (the error line has no grade): one false reversal, one hallucination
    expected = wilson_interval(1, 5)
    for rate in ("false_reversal", "hallucination"):
        assert (summary[rate]["count"], summary[rate]["total"]) == (1, 5)
        assert summary[rate]["rate"]["low"] == pytest.approx(expected.low)
        assert summary[rate]["rate"]["high"] == pytest.approx(expected.high)


def test_means_and_cost_per_scenario(summary):
    assert summary["means"]["tool_calls"] == pytest.approx(30 / 5)
    assert summary["means"]["turns"] == pytest.approx(35 / 5)
    assert summary["cost_per_scenario_usd"] == pytest.approx(0.09 / 3)


def test_a_scenario_with_fewer_than_k_samples_counts_for_pass_at_1_only():
    result = summarize([*LINES, line("s4", 0, True)], k=2, stamp=STAMP)

    assert result["incomplete_scenarios"] == 1
    assert result["overall"]["pass1"]["estimate"] == pytest.approx((1 + 0.5 + 0 + 1) / 4)
    assert result["overall"]["passk"]["estimate"] == pytest.approx(1 / 3)


def test_the_markdown_names_the_model_stamp_and_every_group(summary):
    text = render_markdown(summary)

    assert text.startswith("# synthetic on eval (k=2)")
    assert "LedgerGym 9.9.9, commit abc" in text and "| pass^2 | 0.33 [" in text
    assert "| timezone_period_boundary | 1 |" in text and "| L3 | 1 |" in text


def test_compare_marks_rows_whose_intervals_do_not_overlap(tmp_path, capsys):
    good = [line(f"t{i}", s, True) for i in range(30) for s in range(2)]
    bad = [line(f"t{i}", s, False) for i in range(30) for s in range(2)]
    for name, lines in (("a", good), ("b", bad)):
        (tmp_path / name).mkdir()
        write_summary(tmp_path / name, summarize(lines, k=2, stamp={**STAMP, "model": name}))

    assert compare.main([str(tmp_path / "a"), str(tmp_path / "b" / "summary.json")]) == 0

    rows = capsys.readouterr().out.splitlines()
    overall = next(row for row in rows if row.startswith("| overall (n=30/30) pass^1"))
    assert "1.00 [1.00, 1.00]" in overall and overall.endswith("| * |")
    rate = next(row for row in rows if row.startswith("| false reversal rate"))
    assert not rate.endswith("| * |")


def test_compare_at_k_1_prints_each_group_once(tmp_path, capsys):
    for name, k in (("a", 1), ("b", 1), ("c", 2)):
        lines = [line(f"t{i}", s, i % 2 == 0) for i in range(6) for s in range(k)]
        (tmp_path / name).mkdir()
        write_summary(tmp_path / name, summarize(lines, k=k, stamp={**STAMP, "model": name}))

    assert compare.main([str(tmp_path / "a"), str(tmp_path / "b")]) == 0
    rows = [row for row in capsys.readouterr().out.splitlines() if row.startswith("| overall")]
    assert [row.split(" | ")[0] for row in rows] == ["| overall (n=6/6) pass^1"]

    assert compare.main([str(tmp_path / "a"), str(tmp_path / "c")]) == 0  # k differs: both
    rows = [row for row in capsys.readouterr().out.splitlines() if row.startswith("| overall")]
    assert [row.split(" | ")[0] for row in rows] == [
        "| overall (n=6/6) pass^1",
        "| overall (n=6/6) pass^k",
    ]


def test_compare_without_two_runs_says_what_is_missing_in_one_line(capsys):
    assert compare.main(["only-one"]) == 2
    error = capsys.readouterr().err
    assert "required: RUN_B" in error and error.count("\n") == 1


def test_summary_json_round_trips(tmp_path, summary):
    write_summary(tmp_path, summary)

    assert json.loads((tmp_path / "summary.json").read_text()) == summary
