"""The run files carry the recipe (issue 37): warm starts, shared cold starts, the ablation."""

from __future__ import annotations

import pytest

from training.art.shared_cold_start import cold_start_key
from training.runs import RunConfig, available_runs, load_run_config

ART_RUNS = [name for name in available_runs() if load_run_config(name).trainer == "art"]


def test_every_grpo_run_but_the_ablation_warm_starts_on_the_auditor_at_loras_sft_rate():
    for name in ART_RUNS:
        run = load_run_config(name)
        if name == "direct-grpo-01":
            assert run.cold_start is None and run.probe.on_low == "warn"
            continue
        cold = run.cold_start
        assert cold is not None, name
        assert (cold.teacher, cold.epochs, cold.learning_rate) == ("auditor", 2, 1e-4), name
        assert 400 <= cold.scenarios <= 800 and cold.balanced, name
        assert run.probe.enabled and run.probe.on_low == "stop", name


def test_the_two_main_runs_share_their_cold_start_and_seed_and_differ_in_the_reward_alone():
    binary, shaped = load_run_config("binary-01"), load_run_config("shaped-01")
    assert cold_start_key(binary) == cold_start_key(shaped) and binary.seed == shaped.seed
    dump = {name: load_run_config(name).model_dump() for name in ("binary-01", "shaped-01")}
    differ = {key for key in dump["binary-01"] if dump["binary-01"][key] != dump["shaped-01"][key]}
    assert differ == {"name", "description", "reward", "loss"}
    assert binary.loss.model_copy(update={"scale_rewards": False}) == shaped.loss


def test_shaped_runs_and_tool_cost_runs_do_not_divide_by_the_groups_std():
    for name in ART_RUNS:
        run = load_run_config(name)
        if run.reward.variant == "shaped" or run.reward.tool_call_cost > 0:
            assert run.loss.scale_rewards is False, name


def test_one_invocation_walks_the_curriculum_to_l3_in_150_steps():
    for name in ART_RUNS:
        run = load_run_config(name)
        assert (run.grpo.max_steps, run.data.curriculum) == (150, ["L1", "L2", "L3"]), name
        assert run.grpo.oversample == (2.0 if name == "direct-grpo-01" else 1.5), name
        assert (run.grpo.group_size, run.grpo.groups_per_step) == (8, 8), name
        assert run.grpo.max_grad_norm == 0.1, name


def test_a_teacher_that_reads_the_answer_is_refused_with_one_line():
    with pytest.raises(ValueError, match="reads the hidden answer"):
        RunConfig.model_validate({"name": "x", "cold_start": {"teacher": "reference"}})
