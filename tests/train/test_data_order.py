"""training.data_order: step N's scenarios follow from the run alone, easy to hard, filtered."""

from __future__ import annotations

from collections import Counter
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest

from env.generation.splits import split_assignment
from env.scenario import reveal_truth
from training.data_order import (
    TRAIN_LABELS,
    DataPlanError,
    cold_start_seeds,
    curriculum_seeds,
    plan_data,
    step_scenarios,
)
from training.filter import FilterFile, FilterHeader, ScenarioRate
from training.runs import RunConfig


def make_run(**sections: dict[str, Any]) -> RunConfig:
    data: dict[str, Any] = {
        "name": "order-test",
        "seed": 1,
        "data": {"split": "train", "limit": 60},
        "grpo": {"group_size": 2, "groups_per_step": 4, "oversample": 1.0, "max_steps": 9},
    }
    for name, values in sections.items():
        data[name] = {**data.get(name, {}), **values}
    return RunConfig.model_validate(data)


def difficulties(run: RunConfig, seeds: list[int]) -> set[str]:
    return {split_assignment(run.data.split, seed).difficulty for seed in seeds}


def write_filter(path: Path, rates: dict[int, tuple[int, int]], split: str = "train") -> str:
    header = FilterHeader(
        model="scripted", split=split, samples=4, tool_budget=30, tool_contract="x", generator="y"
    )
    rows = {
        f"{split}-{seed}": ScenarioRate(
            scenario_id=f"{split}-{seed}",
            seed=seed,
            difficulty="L1",
            label="no_error",
            samples=samples,
            successes=successes,
        )
        for seed, (successes, samples) in rates.items()
    }
    path.write_text(FilterFile(header=header, scenarios=rows).model_dump_json())
    return str(path)


def test_the_same_run_always_takes_the_same_scenarios_at_each_step():
    run = make_run()
    first, second = plan_data(run), plan_data(run)
    assert [first.batch(step) for step in range(12)] == [second.batch(step) for step in range(12)]
    assert first.fingerprint() == second.fingerprint()


def test_another_seed_takes_the_scenarios_in_another_order():
    a, b = plan_data(make_run()), plan_data(make_run(data={"shuffle_seed": 5}))
    assert [a.batch(step) for step in range(9)] != [b.batch(step) for step in range(9)]
    assert a.fingerprint() != b.fingerprint()


def test_the_curriculum_walks_from_easy_to_hard_in_equal_phases():
    run = make_run()
    plan = plan_data(run)
    assert [(p.difficulty, p.first_step, p.end_step) for p in plan.phases] == [
        ("L1", 0, 3),
        ("L2", 3, 6),
        ("L3", 6, 9),
    ]
    assert difficulties(run, plan.batch(0)) == {"L1"}
    assert difficulties(run, plan.batch(4)) == {"L2"}
    assert difficulties(run, plan.batch(8)) == {"L3"}
    assert difficulties(run, plan.batch(20)) == {"L3"}  # past max_steps: the last phase goes on


def test_the_pool_is_the_first_limit_seeds_of_the_curriculum_difficulties():
    run = make_run(data={"curriculum": ["L2"]})
    plan = plan_data(run)
    assert [p.difficulty for p in plan.phases] == ["L2"]
    assert sorted(plan.phases[0].seeds) == curriculum_seeds("train", ["L2"], 60)


def test_a_stage_smaller_than_its_phase_is_reshuffled_and_reused():
    run = make_run(data={"limit": 9}, grpo={"max_steps": 30})
    plan = plan_data(run)
    phase = plan.phases[0]
    taken = [seed for step in range(phase.first_step, phase.end_step) for seed in plan.batch(step)]
    assert set(taken) == set(phase.seeds)
    size = len(phase.seeds)
    assert taken[:size] != taken[size : 2 * size]


def test_the_filter_keeps_only_scenarios_solved_sometimes(tmp_path):
    seeds = curriculum_seeds("train", ["L1", "L2", "L3"], 12)
    rates = {seed: (2, 4) for seed in seeds[:8]} | {seeds[8]: (0, 4), seeds[9]: (4, 4)}
    path = write_filter(tmp_path / "rates.json", rates)
    plan = plan_data(make_run(data={"limit": 12, "filter": path}))
    assert sorted(seed for phase in plan.phases for seed in phase.seeds) == sorted(seeds[:8])
    summary = plan.filter
    assert summary is not None
    assert (summary.kept, summary.never_solved, summary.always_solved, summary.unmeasured) == (
        8,
        1,
        1,
        2,
    )


def test_a_filter_measured_on_another_split_is_refused(tmp_path):
    path = write_filter(tmp_path / "rates.json", {200_000: (1, 2)}, split="val")
    with pytest.raises(DataPlanError, match="measured split 'val'"):
        plan_data(make_run(data={"filter": path}))


def test_a_missing_filter_file_is_one_clear_error(tmp_path):
    with pytest.raises(DataPlanError, match="cannot read the filter file"):
        plan_data(make_run(data={"filter": str(tmp_path / "absent.json")}))


def test_a_filter_that_leaves_nothing_is_refused(tmp_path):
    seeds = curriculum_seeds("train", ["L1", "L2", "L3"], 4)
    path = write_filter(tmp_path / "rates.json", {seed: (4, 4) for seed in seeds})
    with pytest.raises(DataPlanError, match="no train scenarios left"):
        plan_data(make_run(data={"limit": 4, "filter": path}))


def test_unbalanced_cold_start_scenarios_come_right_after_the_grpo_pool():
    run = make_run()
    pool = {seed for phase in plan_data(run).phases for seed in phase.seeds}
    demos = cold_start_seeds(run, 5, balanced=False)
    assert len(demos) == 5 and not pool & set(demos)
    assert demos == curriculum_seeds("train", ["L1", "L2", "L3"], 65)[60:]


def test_balanced_cold_start_scenarios_give_every_root_cause_and_level_an_equal_share():
    run = make_run()
    pool = {seed for phase in plan_data(run).phases for seed in phase.seeds}
    demos = cold_start_seeds(run, 2 * 36 + 5)
    cells = Counter(
        (split_assignment("train", s).label, split_assignment("train", s).difficulty) for s in demos
    )
    assert len(set(demos)) == len(demos) and not pool & set(demos) and min(demos) > max(pool)
    assert len(cells) == 36 and set(cells.values()) == {2, 3}  # 12 causes x 3 levels
    assert {label for label, _ in cells} == {*TRAIN_LABELS} and "no_error" in TRAIN_LABELS
    assert demos[:36] == cold_start_seeds(run, 36)  # any prefix is itself balanced


def test_with_twins_each_faulted_scenario_of_a_step_brings_its_twin() -> None:
    run = make_run(data={"twins": True})
    seeds = plan_data(run).batch(0)
    scenarios = step_scenarios(run.data.split, seeds, twins=run.data.twins)
    plain = step_scenarios(run.data.split, seeds)
    assert [s.scenario_id for s in plain] == [f"train-{seed}" for seed in seeds]
    twins = [s for s in scenarios if "-twin-" in s.scenario_id]
    faulted = [s for s in plain if reveal_truth(s).label != "no_error"]
    assert len(twins) == len(faulted) and len(scenarios) == len(seeds) + len(faulted)
    for original, paired in pairwise(scenarios):
        if "-twin-" in paired.scenario_id:  # right after its original, same complaint
            assert paired.complaint == original.complaint
            assert reveal_truth(paired).label == "no_error"


def test_twins_are_refused_on_the_trl_path() -> None:
    with pytest.raises(ValueError, match="twins needs trainer 'art'"):
        RunConfig.model_validate(
            {
                "name": "trl-twins",
                "trainer": "trl",
                "data": {"twins": True},
                "trl": {},
            }
        )
