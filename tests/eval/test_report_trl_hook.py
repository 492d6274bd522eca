"""The TRL run's ending: eval runs written as run directories, then `python -m eval.report`.

Scripted policies stand in for the warm-start and trained models (the tiny-model run itself is
tests/train/test_trl_runner.py); what is tested is what `training.trl.runner` calls at its end.
"""

from __future__ import annotations

import json

from agent.program_policy import ProgramPolicy, reference_policy
from agent.rollout import RolloutConfig
from checks.hacks.cheats import CHEATS
from env.generation.generator import generate
from eval.episode_log import read_episodes
from training.trl.report import EVAL_AFTER, EVAL_BEFORE, evaluate, write_run_report


def test_evaluate_writes_an_eval_run_directory_the_report_reads(tmp_path):
    scenarios = [generate("val", 200_000), generate("val", 200_001)]
    summary = evaluate(reference_policy(), scenarios, RolloutConfig(), tmp_path / "run")
    lines = read_episodes(tmp_path / "run" / "episodes.jsonl")
    assert [line.scenario_id for line in lines] == [s.scenario_id for s in scenarios]
    assert summary.success_rate == 1.0 and all(line.success for line in lines)
    config = json.loads((tmp_path / "run" / "run.json").read_text())
    assert config["k"] == 1 and config["split"] == "val" and config["model"] == "reference"
    evaluate(reference_policy(), scenarios[:1], RolloutConfig(), tmp_path / "run")
    assert len(read_episodes(tmp_path / "run" / "episodes.jsonl")) == 1  # a rerun replaces it


def test_the_trl_run_ends_by_writing_its_report_from_eval_runs_and_metrics(tmp_path, capsys):
    scenarios = [generate("val", 200_000), generate("val", 200_002)]
    never = next(cheat for cheat in CHEATS if cheat.name == "never_credit")
    evaluate(
        ProgramPolicy("warm-start", never.program),
        scenarios,
        RolloutConfig(),
        tmp_path / EVAL_BEFORE,
    )
    evaluate(reference_policy(), scenarios, RolloutConfig(), tmp_path / EVAL_AFTER)
    row = {
        "step": 1,
        "episodes": 2,
        "reward_mean": 0.4,
        "terms": {"root_cause": 0.35},
        "zero_variance_group_share": 0.0,
        "tool_calls_mean": 4.0,
        "trl": {},
    }
    (tmp_path / "metrics.jsonl").write_text(json.dumps(row) + "\n")
    page = write_run_report(tmp_path)
    assert page == tmp_path / "report" / "index.html" and page.is_file()
    report = json.loads((tmp_path / "report" / "report.json").read_text())
    assert report["training"][0]["source"] == "trl"
    assert [run["name"] for run in report["runs"]] == ["warm-start", "reference"]
    assert report["paired"][0]["shared_scenarios"] == 2
    assert "local machine time per scenario" in report["runs"][0]["cost"]["formula"]
    assert f"report: {page}" in capsys.readouterr().out
