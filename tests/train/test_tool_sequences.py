"""Training records each group's tool-call sequences, and the report reads them back as diversity.

Episodes are real: scripted programs played through `agent.rollout.run_episode` (the trajectory
ART trains on) and through `LedgerTrlEnv` (what TRL's GRPOTrainer drives), on eval scenarios.
No trainer is needed: ART and transformers are not imported here.
"""

from __future__ import annotations

import asyncio
import json
from types import SimpleNamespace

from agent.program_policy import ProgramPolicy, reference_policy
from agent.rollout import run_episode
from env.generation.generator import generate
from env.generation.splits import split_seeds
from env.scenario import reveal_truth
from eval.report.diversity import COLLAPSE_BELOW, collapse_warning, collapses, row_diversity
from eval.report.load import load_train_metrics
from training.tool_sequences import (
    art_metrics,
    called_tools,
    mean_diversity,
    sequence_digest,
    trl_fields,
)
from training.trl.episode_env import LedgerTrlEnv


def _scenario():  # type: ignore[no-untyped-def]
    return generate("eval", split_seeds("eval", 1)[0])


def _customer_only(scenario):  # type: ignore[no-untyped-def]
    yield reveal_truth(scenario).reference[0]


def test_an_art_trajectory_yields_the_tools_its_rollout_called():
    scenario = _scenario()
    result = asyncio.run(run_episode(reference_policy(), scenario))
    names = called_tools(result.trajectory.messages_and_choices)
    assert names == [call.name for call in result.record.tool_log]
    assert names[-1] == "submit_findings" and len(names) == len(reveal_truth(scenario).reference)


def test_art_groups_log_their_mean_diversity_and_nothing_for_lone_rollouts():
    scenario = _scenario()
    same = [asyncio.run(run_episode(reference_policy(), scenario)).trajectory for _ in range(2)]
    other = asyncio.run(run_episode(ProgramPolicy("short", _customer_only), scenario)).trajectory
    groups = [SimpleNamespace(trajectories=same), SimpleNamespace(trajectories=[*same, other])]
    assert art_metrics(groups) == {"data/tool_sequence_diversity": round((1 / 2 + 2 / 3) / 2, 6)}
    assert art_metrics([SimpleNamespace(trajectories=[other])]) == {}


def test_a_trl_episode_reports_the_digest_of_the_tools_it_called():
    scenario = _scenario()
    outcomes = []
    env = LedgerTrlEnv(sink=outcomes.append)
    env.reset(scenario.split, scenario.seed)
    calls = reveal_truth(scenario).reference[:3]
    for call in calls:
        getattr(env, call.name)(**call.arguments)
    env.get_reward()
    assert outcomes[0].tool_sequence == sequence_digest([call.name for call in calls])
    assert outcomes[0].tool_sequence != sequence_digest([call.name for call in calls[:2]])


def test_trl_rows_round_trip_through_the_report_loader(tmp_path):
    fields = trl_fields([("a", "x1"), ("b", "y"), ("a", "x2"), ("b", "y"), ("c", "z")])
    assert fields["group_tool_sequences"] == [["x1", "x2"], ["y", "y"], ["z"]]
    assert fields["tool_sequence_diversity"] == 0.75  # (1 + 1/2) / 2; the lone "c" left out
    rows = [
        {"step": 1, "episodes": 5, "reward_mean": 0.1, **fields},
        {"step": 2, "episodes": 5, "reward_mean": 0.2},  # a log from before the field
    ]
    path = tmp_path / "metrics.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    steps = load_train_metrics(path).steps
    assert [step.tool_sequence_diversity for step in steps] == [0.75, None]


def test_collapse_needs_three_logged_steps_in_a_row_below_the_threshold():
    low, high = COLLAPSE_BELOW - 0.05, COLLAPSE_BELOW + 0.05
    assert collapses([(1, low), (2, low), (3, high), (4, low), (5, low)]) == []
    assert collapses([(1, high), (2, low), (3, None), (4, low), (5, low), (6, high)]) == [(2, 5)]
    assert collapses([(1, low), (2, low), (3, low)]) == [(1, 3)]
    assert collapse_warning("run", []) is None
    assert "steps 2–5" in str(collapse_warning("run", [(2, 5)]))
    assert mean_diversity([["a", "a", "a", "a"]]) == 0.25
    assert row_diversity({"data/tool_sequence_diversity": 0.4}) == 0.4
