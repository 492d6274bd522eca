"""`python -m eval.regrade`: a stored run re-scored from its tool logs, never re-played.

The run is written by `eval.run.evaluate` under an older reward (the evidence term weighted
0.30 instead of the design's 0.20, a deliberate reward change) with the reference and the
uncredited reference; re-grading must move exactly the evidence term of the episodes that
earned it, keep every verdict, write the new summary and the table of changes, keep lines it
cannot rebuild, and refuse a run of another generator unless asked to regenerate.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

import ledgergym
from agent.program_policy import reference_policy
from agent.rollout import RolloutConfig
from env.generation.generator import generate
from env.versions import generator_hash, tool_contract_hash
from eval.episode_log import EPISODES, RUN_CONFIG
from eval.regrade import main, regrade_run
from eval.run import evaluate
from rewards.reward import RewardConfig
from tests.doors.players import uncredited_policy

SEEDS = (100000, 100001, 100002)
OLD_REWARD = RewardConfig(evidence=0.30)  # the reward the run was written under


def _write_run(run_dir: Path, policy_name: str) -> None:
    policy = reference_policy() if policy_name == "reference" else uncredited_policy()
    config = {
        "model": policy_name, "split": "eval", "k": 1, "tool_budget": 30,
        "tool_contract": tool_contract_hash(), "generator": generator_hash(),
    }  # fmt: skip
    scenarios = [generate("eval", seed) for seed in SEEDS]
    asyncio.run(
        evaluate(
            policy, scenarios, k=1, run_dir=run_dir, config=config,
            rollout=RolloutConfig(reward=OLD_REWARD), concurrency=1,
        )
    )  # fmt: skip


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    made = {}
    for name in ("reference", "uncredited"):
        made[name] = tmp_path_factory.mktemp(name)
        _write_run(made[name], name)
    return made


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_regrading_moves_exactly_the_changed_reward_term_and_keeps_every_verdict(runs, tmp_path):
    old = _lines(runs["reference"] / EPISODES)
    assert all(line["reward_terms"]["evidence"] == 0.30 for line in old)
    summary = regrade_run(runs["reference"], tmp_path)
    new = _lines(tmp_path / EPISODES)
    assert [line["scenario_id"] for line in new] == [line["scenario_id"] for line in old]
    for before, after in zip(old, new, strict=True):
        assert after["grade"] == before["grade"] and after["success"] == before["success"]
        assert after["reward_terms"] == {**before["reward_terms"], "evidence": 0.20}
        assert after["reward_total"] == pytest.approx(1.0)
    changes = json.loads((tmp_path / "changes.json").read_text())["changes"]
    assert [c["terms"] for c in changes] == [{"evidence": [0.30, 0.20]}] * len(SEEDS)
    assert all(c["verdict"] == {} for c in changes)
    assert "evidence 0.3 → 0.2" in (tmp_path / "changes.md").read_text()
    assert summary["stamp"]["ledgergym_version"] == ledgergym.__version__
    assert summary["mean_reward"] == pytest.approx(1.0)
    assert (tmp_path / "summary.md").exists() and (runs["reference"] / "summary.json").exists()


def test_an_episode_that_earned_no_evidence_is_not_listed(runs, tmp_path):
    old = _lines(runs["uncredited"] / EPISODES)
    regrade_run(runs["uncredited"], tmp_path)
    listed = {
        c["scenario_id"] for c in json.loads((tmp_path / "changes.json").read_text())["changes"]
    }
    earned = {line["scenario_id"] for line in old if line["reward_terms"]["evidence"]}
    assert listed == earned


def test_lines_it_cannot_rebuild_are_kept_as_stored_and_say_why(runs, tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / RUN_CONFIG).write_text((runs["reference"] / RUN_CONFIG).read_text())
    lines = _lines(runs["reference"] / EPISODES)
    lines[0]["tool_log"] = None  # an old line
    lines[1]["tool_log"][2]["result_sha256"] = "0" * 64  # a scenario that changed
    (run / EPISODES).write_text("".join(json.dumps(line) + "\n" for line in lines))
    regrade_run(run, tmp_path / "out")
    kept = json.loads((tmp_path / "out" / "changes.json").read_text())["kept"]
    third = lines[1]["tool_log"][2]["name"]
    assert kept == {
        f"eval-{SEEDS[0]}#0": "no tool log (written before eval.regrade existed)",
        f"eval-{SEEDS[1]}#0": f"diverged at call 3 ({third}): the scenario changed",
    }
    assert _lines(tmp_path / "out" / EPISODES)[0] == lines[0]


def test_a_run_of_another_generator_is_refused_unless_its_scenarios_are_regenerated(
    runs, tmp_path, capsys
):
    run = tmp_path / "run"
    run.mkdir()
    config = json.loads((runs["reference"] / RUN_CONFIG).read_text())
    (run / RUN_CONFIG).write_text(json.dumps({**config, "generator": "000000000000"}))
    (run / EPISODES).write_text((runs["reference"] / EPISODES).read_text())
    assert main([str(run)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--fresh-scenarios" in err and "000000000000" in err
    assert not (run / "regrade").exists()
    assert main([str(run), "--fresh-scenarios"]) == 0
    assert (run / "regrade" / "changes.md").exists()
