"""The recipe in the GRPO loop (issue 37), on CPU with FakeBackendForTests and a scripted model:
dynamic sampling's refill, the outcome-tied filter under a tool cost, the shared warm start and
the base-rate probe. Each test reads what reached `backend.train` / `train_sft` and the logs.
"""

from __future__ import annotations

import asyncio
import json

import pyarrow.parquet
import pytest

from tests.support.scripted_server import ScriptedOpenAIServer
from tests.train.adapter_fixtures import write_lora_adapter
from tests.train.loop_fixtures import fake_backend, scripted_model, small_run
from training.art import run_state
from training.art.loop import train
from training.art.probe_phase import PROBE_STATE_FILE, ProbeStopped
from training.art.shared_cold_start import adopt, cold_start_key, publish, shared_dir
from training.data_order import DataPlan
from training.runs import RunConfig


def run_loop(run: RunConfig, data: DataPlan, server: ScriptedOpenAIServer, lines: list[str]):
    backend = fake_backend(run, server)
    summary = asyncio.run(train(run, backend, data, say=lines.append))
    return summary, backend


def trained_ids(call) -> list[str]:
    return [group.metadata["scenario_id"] for group in call.groups]


def train_row(run: RunConfig, step: int) -> dict:
    rows = run_state.read_history(run_state.model_dir(run))
    return next(r for r in rows if r.get("step") == step and "data/groups_gathered" in r)


def test_a_step_gathers_extra_groups_and_trains_the_first_ones_whose_outcome_has_spread(tmp_path):
    run = small_run(
        tmp_path / "art", grpo={"groups_per_step": 2, "oversample": 2.0, "max_steps": 1}
    )
    data, responder = scripted_model(run, steps=1)
    batch = [f"train-{seed}" for seed in data.batch(0)]
    responder.varied = set(batch[1:])  # the first group ties; three have spread
    lines: list[str] = []
    with ScriptedOpenAIServer(responder) as server:
        summary, backend = run_loop(run, data, server, lines)

    assert len(batch) == 4  # 2 groups x oversample 2
    assert trained_ids(backend.train_calls[0]) == batch[1:3]  # the first two informative, in order
    report = summary.steps[0]
    assert (report.groups, report.trained_groups) == (4, 2)
    assert (report.zero_variance_groups, report.surplus_groups, report.short_groups) == (1, 1, 0)
    row = train_row(run, 1)
    assert row["data/groups_gathered"] == 4 and row["data/groups_kept"] == 2
    assert row["data/groups_dropped_tied"] == 1 and row["data/groups_dropped_surplus"] == 1
    assert any("dropped 1 outcome-tied + 1 surplus" in line for line in lines)


def test_with_a_tool_cost_a_group_whose_outcomes_tie_is_not_trained_though_its_rewards_differ(
    tmp_path,
):
    run = small_run(
        tmp_path / "art",
        reward={"variant": "binary", "tool_call_cost": 0.01},
        grpo={"max_steps": 1},
    )
    data, responder = scripted_model(run, steps=1)
    batch = [f"train-{seed}" for seed in data.batch(0)]
    responder.varied = {batch[0]}  # success and failure: an outcome spread
    responder.padded = {batch[1]}  # every episode succeeds, one with an extra call
    with ScriptedOpenAIServer(responder) as server:
        summary, backend = run_loop(run, data, server, [])

    logged = run_state.model_dir(run) / "trajectories" / "train" / "0001.parquet"
    rows = pyarrow.parquet.read_table(logged).to_pylist()  # every rollout, as ART logged it
    rewards = sorted(
        r["reward"] for r in rows if json.loads(r["group_metadata"])["scenario_id"] == batch[1]
    )
    assert len(rewards) == 2 and rewards[0] < rewards[1]  # the rewards differ by lambda
    assert rewards[1] - rewards[0] == pytest.approx(0.01)
    assert trained_ids(backend.train_calls[0]) == [batch[0]]  # only the outcome-mixed group
    assert summary.steps[0].zero_variance_groups == 2


def test_two_runs_with_the_same_cold_start_train_it_once_and_start_grpo_from_the_same_weights(
    tmp_path,
):
    cold = {"teacher": "auditor", "scenarios": 3, "epochs": 2}
    binary = small_run(tmp_path / "art", reward={"variant": "binary"}, grpo={"max_steps": 1},
                       cold_start=cold)  # fmt: skip
    shaped = binary.model_copy(update={"name": "loop-test-shaped"})
    shaped = shaped.model_copy(
        update={"reward": shaped.reward.model_copy(update={"variant": "shaped"})}
    )
    assert cold_start_key(binary) == cold_start_key(shaped)  # the reward is not part of it
    data, responder = scripted_model(binary, steps=1)
    lines: list[str] = []
    with ScriptedOpenAIServer(responder) as server:
        _, first = run_loop(binary, data, server, lines)
        second_summary, second = run_loop(shaped, data, server, lines)

    assert len(first.sft_calls) == 1 and second.sft_calls == []
    assert (shared_dir(binary, cold_start_key(binary)) / "checkpoint").is_dir()
    assert second_summary.first_step == 1  # registered on the adopted SFT checkpoint
    assert any(line.startswith("cold start: the shared SFT checkpoint") for line in lines)
    assert second_summary.steps[0].step == 2  # GRPO numbering as in the run that trained it
    state = run_state.read_sft_state(run_state.model_dir(shaped))
    assert state is not None and state.grpo_start_step == 1 and state.shared_key


def test_the_warm_start_is_validated_with_its_format_error_rate_before_grpo_step_one(tmp_path):
    run = small_run(tmp_path / "art", grpo={"max_steps": 1},
                    cold_start={"teacher": "auditor", "scenarios": 2, "shared": False})  # fmt: skip
    data, responder = scripted_model(run, steps=1)
    lines: list[str] = []
    with ScriptedOpenAIServer(responder) as server:
        summary, _ = run_loop(run, data, server, lines)

    first = summary.validations[0]
    assert first.step == 1  # the SFT checkpoint, before GRPO step 1 made checkpoint 2
    assert first.format_error_rate == 0.0
    rows = run_state.read_history(run_state.model_dir(run))
    val = next(r for r in rows if r.get("step") == 1 and run_state.PASS1_KEY in r)
    assert val["val/format_error_rate"] == 0.0
    assert any("validation at step 1" in line and "format errors" in line for line in lines)


def test_a_probe_below_its_minimum_stops_the_run_before_any_grpo_step(tmp_path):
    probe = {"enabled": True, "scenarios": 3, "k": 2, "min_success": 0.9}
    run = small_run(tmp_path / "art", grpo={"max_steps": 1}, probe=probe)
    data, responder = scripted_model(run, steps=1)
    probed = set(responder.by_complaint)  # every scenario: half the episodes quit
    responder.varied = {s.scenario_id for s in responder.by_complaint.values()}
    lines: list[str] = []
    stopped = pytest.raises(ProbeStopped, match=r"min_success 0\.9")
    with ScriptedOpenAIServer(responder) as server, stopped:
        run_loop(run, data, server, lines)

    assert probed
    directory = run_state.model_dir(run)
    assert (directory / PROBE_STATE_FILE).is_file()
    assert run_state.checkpoint_steps(directory) == [0]  # nothing trained
    assert any(line.startswith("probe of loop-test") for line in lines)
    assert any("grounded success 50.0%" in line for line in lines)


def test_a_probe_set_to_warn_goes_on_and_is_not_repeated_on_resume(tmp_path):
    probe = {"enabled": True, "scenarios": 3, "k": 2, "min_success": 0.9, "on_low": "warn"}
    run = small_run(tmp_path / "art", grpo={"max_steps": 2}, probe=probe)
    data, responder = scripted_model(run, steps=2)
    responder.varied = {s.scenario_id for s in responder.by_complaint.values()}
    lines: list[str] = []
    with ScriptedOpenAIServer(responder) as server:
        first, _ = run_loop(run, data, server, lines)
        requests = len(server.requests)
        rerun = small_run(tmp_path / "art", grpo={"max_steps": 2}, probe=probe)
        run_loop(rerun, data, server, lines)
        assert len(server.requests) == requests  # done: no probe, no step, no validation

    assert [r.step for r in first.steps] == [1, 2]
    assert any(line.startswith("warning: the probe of checkpoint 0") for line in lines)


def test_an_adopted_cold_start_is_the_published_checkpoint_byte_for_byte(tmp_path):
    cold = {"teacher": "auditor", "scenarios": 3}
    first = small_run(tmp_path / "art", cold_start=cold)
    other = first.model_copy(update={"name": "loop-test-other"})
    source = run_state.model_dir(first) / "checkpoints" / "0001"
    write_lora_adapter(source, first.lora.target_modules, rank=first.lora.rank)
    state = run_state.SftState(start_step=0, grpo_start_step=1, trajectories=3, teacher="auditor")

    published = publish(first, run_state.model_dir(first), 1, state)
    line = adopt(other, run_state.model_dir(other))

    assert published is not None and line is not None and "trained by loop-test" in line
    adopted = run_state.model_dir(other) / "checkpoints" / "0001"
    for name in ("adapter_model.safetensors", "adapter_config.json"):
        assert (adopted / name).read_bytes() == (source / name).read_bytes()
    assert adopt(other, run_state.model_dir(other)) is None  # once: it has a checkpoint now
    changed = other.model_copy(update={"seed": other.seed + 1})  # another shuffle: another key
    assert cold_start_key(changed) != cold_start_key(other)
