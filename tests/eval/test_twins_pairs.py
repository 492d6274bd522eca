"""Evidence dependence on counterfactual twins (`eval.twins`, `eval.report.twins_section`).

Pairing is tested on hand-written episode lines (each measure can fail), then end to end:
`python -m eval.run --twins` with the complaint-following baseline, and the report's section.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agent.ladder import complaint_label as guess_label
from eval.episode_log import EpisodeLine, RunLogError, check_run_config
from eval.report.build import build_report
from eval.run import main
from eval.twins import pair_episodes, rate, summarize_pairs


def _line(scenario: str, seed: int, label: str, answer: str | None, **grade: Any) -> EpisodeLine:
    success = grade.pop("success", False)
    return EpisodeLine(
        scenario_id=scenario,
        sample=0,
        split="eval",
        seed=seed,
        label=label,
        difficulty="L2",
        policy="fixture",
        success=success,
        grade={"reported_label": answer, "credits": grade.pop("credits", {}), **grade},
    )


def test_pairs_tell_evidence_following_from_complaint_following_and_false_reversals() -> None:
    originals = [
        _line("eval-1", 1, "coupon_not_applied", "coupon_not_applied", success=True),
        _line("eval-2", 2, "wrong_tax_rate", "wrong_tax_rate", success=True),
        _line("eval-3", 3, "seat_count_mismatch", "no_error"),
        _line("eval-4", 4, "no_error", "no_error", success=True),  # its own twin: no pair
    ]
    twins = [
        _line("eval-twin-1", 1, "no_error", "no_error", success=True),
        _line("eval-twin-2", 2, "no_error", "wrong_tax_rate", credits={"INV-A": 100}),
        _line("eval-twin-3", 3, "no_error", "no_error", success=True),
    ]
    pairs = {p.seed: p for p in pair_episodes(originals, twins)}
    assert sorted(pairs) == [1, 2, 3]
    assert [pairs[s].both_right for s in (1, 2, 3)] == [True, False, False]
    assert [pairs[s].complaint_following for s in (1, 2, 3)] == [False, True, False]
    assert [pairs[s].evidence_blind for s in (1, 2, 3)] == [False, True, True]
    assert [pairs[s].twin_false_reversal for s in (1, 2, 3)] == [False, True, False]
    summary = summarize_pairs(list(pairs.values()))
    assert summary["twin_false_reversals"] == 1
    assert summary["by"]["label"]["wrong_tax_rate"]["complaint_following"] == 1
    share = rate(list(pairs.values()), "both_right")
    assert share.estimate == 1 / 3 and share.low < 1 / 3 < share.high


def test_the_keyword_guess_reads_only_the_complaints_words() -> None:
    assert guess_label("You charged us twice for March") == "duplicate_payment"
    assert guess_label("Our VAT looks wrong") == "wrong_tax_rate"
    assert guess_label("We cancelled in May and were billed again") == "billed_after_cancellation"


def test_a_twins_run_reports_a_complaint_follower_as_evidence_blind(tmp_path: Path) -> None:
    out = tmp_path / "run"
    argv = ["--model", "complaint-guess", "--split", "eval", "--twins", "--k", "1"]
    assert main([*argv, "--limit", "10", "--out", str(out)]) == 0
    summary = json.loads((out / "twins.json").read_text(encoding="utf-8"))
    assert summary["pairs"] >= 5
    assert summary["overall"]["both_right"]["estimate"] == 0.0
    assert summary["overall"]["evidence_blind"]["estimate"] >= 0.8
    page = build_report([out], tmp_path / "report").read_text(encoding="utf-8")
    assert "Evidence dependence (twins)" in page and "data-twins='complaint-guess'" in page


def test_a_twins_run_and_a_plain_run_never_share_a_directory(tmp_path: Path) -> None:
    plain = {"model": "auditor", "split": "eval", "k": 1}  # a run from before --twins: no key
    check_run_config(tmp_path, plain)
    with pytest.raises(RunLogError, match="twins False -> True"):
        check_run_config(tmp_path, {**plain, "twins": True})
    assert check_run_config(tmp_path, {**plain, "twins": False}) == []
