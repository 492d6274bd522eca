"""train.py's GRPO loop (`training.art.loop.train`) end to end on CPU with FakeBackendForTests.

The policy is a scripted model served over HTTP on 127.0.0.1 and reached through ART's own
client; rollouts go through agent.rollout, graded validation through eval.grader.
"""

from __future__ import annotations

import asyncio
import json

import pyarrow.parquet
import pytest
from openai.types.chat.chat_completion import Choice

from tests.support.scripted_server import ScriptedOpenAIServer
from tests.train.loop_fixtures import (
    FailOnceServer,
    fake_backend,
    scripted_model,
    small_run,
)
from training.art import run_state
from training.art.backends import train_kwargs
from training.art.loop import TrainingSummary, train
from training.art.run_state import RunChanged
from training.art.validation import validation_scenarios
from training.data_order import DataPlan
from training.runs import RunConfig


def run_loop(
    run: RunConfig,
    data: DataPlan,
    server: ScriptedOpenAIServer,
    lines: list[str] | None = None,
    **options: object,
):
    backend = fake_backend(run, server)
    say = (lines if lines is not None else []).append
    summary = asyncio.run(train(run, backend, data, say=say, **options))  # type: ignore[arg-type]
    return summary, backend


def history(run: RunConfig) -> list[dict]:
    return run_state.read_history(run_state.model_dir(run))


def train_rows(run: RunConfig) -> dict[int, dict]:
    return {row["step"]: row for row in history(run) if "data/prep_groups_in" in row}


def val_rows(run: RunConfig) -> dict[int, dict]:
    return {row["step"]: row for row in history(run) if run_state.PASS1_KEY in row}


@pytest.fixture(scope="module")
def three_steps(tmp_path_factory: pytest.TempPathFactory):
    """One 3-step run shared by the tests that only read what it left behind."""
    run = small_run(tmp_path_factory.mktemp("three-steps") / "art")
    data, responder = scripted_model(run, steps=3)
    lines: list[str] = []
    with ScriptedOpenAIServer(responder) as server:
        summary, backend = run_loop(run, data, server, lines)
    return run, data, summary, backend, server, lines


def test_three_steps_train_one_checkpoint_each_on_the_planned_scenarios(three_steps):
    run, data, summary, backend, _, _ = three_steps
    assert [report.step for report in summary.steps] == [1, 2, 3]
    assert summary.stopped_by == "max_steps" and summary.last_step == 3
    for index, report in enumerate(summary.steps):
        assert report.scenario_ids == [f"train-{seed}" for seed in data.batch(index)]
    assert [call.step for call in backend.train_calls] == [1, 2, 3]
    assert [call.kwargs for call in backend.train_calls] == [train_kwargs(run)] * 3


def test_after_each_validation_only_the_latest_and_the_best_checkpoint_are_kept(three_steps):
    run, _, _, _, _, lines = three_steps
    checkpoints = run_state.checkpoint_steps(run_state.model_dir(run))
    best = max(row[run_state.PASS1_KEY] for row in val_rows(run).values())
    assert 3 in checkpoints and 1 not in checkpoints and len(checkpoints) <= 2
    assert all(val_rows(run)[step][run_state.PASS1_KEY] == best for step in checkpoints)
    assert any(line.startswith("  kept checkpoints (latest, best val pass^1)") for line in lines)


def test_per_episode_token_totals_survive_arts_gather(three_steps):
    run, _, _, _, _, _ = three_steps
    for row in train_rows(run).values():  # ART's own "completion_tokens" is a per-turn mean
        assert row["train/episode_completion_tokens"] > 0
        assert row["train/episode_prompt_tokens"] > row["train/episode_completion_tokens"]


def test_groups_whose_outcomes_tie_are_dropped_before_training_and_counted(three_steps):
    run, _, summary, backend, _, lines = three_steps
    for report in summary.steps:  # one varied group per batch, two all-reference groups
        assert (report.groups, report.zero_variance_groups, report.trained_groups) == (3, 2, 1)
    assert [len(call.groups) for call in backend.train_calls] == [1, 1, 1]
    rows = train_rows(run)
    assert sorted(rows) == [1, 2, 3]
    assert rows[1]["data/groups_gathered"] == 3.0 and rows[1]["data/groups_kept"] == 1.0
    assert rows[1]["data/groups_dropped_tied"] == 2.0 and rows[1]["data/groups_short"] == 2.0
    assert rows[1]["data/prep_groups_in"] == 1.0  # only the kept group reaches the repairs
    # tool-call diversity (training.tool_sequences): the varied group 2/2, the others 1/2 each
    assert rows[1]["data/tool_sequence_diversity"] == pytest.approx(2 / 3)
    assert any("dropped 2 outcome-tied + 0 surplus" in line for line in lines)


def test_the_original_groups_are_logged_and_the_repaired_copies_trained(three_steps):
    run, _, _, backend, _, _ = three_steps
    logged = run_state.model_dir(run) / "trajectories" / "train"
    assert sorted(path.name for path in logged.iterdir()) == [f"{s:04d}.parquet" for s in (1, 2, 3)]
    rows = pyarrow.parquet.read_table(logged / "0001.parquet").to_pylist()
    assert len(rows) == 6  # every rollout of the step, not only the two trained
    assistant_calls = [
        m["tool_calls"] for row in rows for m in row["messages"] if m["role"] == "assistant"
    ]
    assert sum(bool(calls) for calls in assistant_calls) > 6  # intermediate calls kept in the log
    trained = backend.train_calls[0].groups[0]
    for trajectory in trained.trajectories:
        choices = [m for m in trajectory.messages_and_choices if isinstance(m, Choice)]
        assert all(not choice.message.tool_calls for choice in choices[:-1])


def test_every_request_names_the_current_checkpoint_and_disables_thinking(three_steps):
    _, _, _, _, server, _ = three_steps
    names = {body["model"] for body in server.requests}
    assert names == {"loop-test@0", "loop-test@1", "loop-test@2", "loop-test@3"}
    assert all(
        body["chat_template_kwargs"] == {"enable_thinking": False}  # no template named more
        for body in server.requests
    )
    assert all(body["logprobs"] is True for body in server.requests)


def test_validation_runs_at_step_zero_every_two_steps_and_at_the_end(three_steps):
    run, _, summary, _, _, _ = three_steps
    assert [result.step for result in summary.validations] == [0, 2, 3]
    rows = val_rows(run)
    assert sorted(rows) == [0, 2, 3]
    assert all(row[run_state.PASS1_KEY] == 1.0 for row in rows.values())  # references pass
    assert "val/reward" in rows[0]


def test_the_run_config_and_data_fingerprint_are_saved_beside_the_checkpoints(three_steps):
    run, data, _, _, _, _ = three_steps
    saved = json.loads((run_state.model_dir(run) / run_state.RUN_FILE).read_text())
    assert saved["fingerprint"] == run.fingerprint()
    assert saved["data_fingerprint"] == data.fingerprint()
    assert saved["run"]["grpo"]["group_size"] == 2


def test_a_failed_rollout_is_logged_and_dropped_and_the_step_still_trains(tmp_path):
    run = small_run(tmp_path / "art", grpo={"max_steps": 1})
    data, responder = scripted_model(run, steps=1)
    failing = f"train-{data.batch(0)[1]}"  # an all-reference group
    lines: list[str] = []
    with FailOnceServer(responder, failing) as server:
        summary, backend = run_loop(run, data, server, lines)
    report = summary.steps[0]
    assert report.failed_rollouts == 1
    assert report.trained_groups == 1  # the varied group still trains
    assert train_rows(run)[1]["data/failed_rollouts"] == 1.0
    assert any(f"rollout failed on {failing} (dropped)" in line for line in lines)
    assert len(backend.train_calls) == 1


def test_a_refused_validation_episode_is_a_failure_and_training_goes_on(tmp_path):
    run = small_run(tmp_path / "art", grpo={"max_steps": 1})
    data, responder = scripted_model(run, steps=1)
    failing = validation_scenarios(run)[0].scenario_id
    with FailOnceServer(responder, failing) as server:
        summary, backend = run_loop(run, data, server)
    first = summary.validations[0]
    assert (first.step, first.pass1, first.failed_rollouts) == (0, 0.5, 1)
    assert val_rows(run)[0]["val/failed_rollouts"] == 1.0
    assert val_rows(run)[0]["val/exception_rate"] == 0.5
    assert [report.step for report in summary.steps] == [1] and len(backend.train_calls) == 1
    assert summary.validations[-1].pass1 == 1.0


def test_a_step_with_no_varied_group_moves_the_checkpoint_on_without_groups(tmp_path):
    run = small_run(tmp_path / "art", grpo={"max_steps": 1})
    data, responder = scripted_model(run, steps=1)
    responder.varied = set()
    with ScriptedOpenAIServer(responder) as server:
        summary, backend = run_loop(run, data, server)
    assert summary.steps[0].trained_groups == 0
    assert [call.groups for call in backend.train_calls] == [[]]
    row = train_rows(run)[1]
    assert row["data/groups_dropped_tied"] == 3.0 and row["data/groups_kept"] == 0.0
    assert row["data/step_num_gradient_steps"] == 0.0


def test_the_wall_clock_limit_stops_after_a_finished_step(tmp_path):
    run = small_run(tmp_path / "art", grpo={"wall_clock_hours": 1e-7})
    data, responder = scripted_model(run, steps=3)
    lines: list[str] = []
    with ScriptedOpenAIServer(responder) as server:
        summary, _ = run_loop(run, data, server, lines)
    assert summary.stopped_by == "wall_clock"
    assert [report.step for report in summary.steps] == [1]
    assert run_state.checkpoint_steps(run_state.model_dir(run)) == [0, 1]
    assert any("wall-clock limit" in line for line in lines)


def test_a_stopped_run_resumes_at_the_next_step_with_the_next_scenarios(tmp_path):
    run = small_run(tmp_path / "art")
    data, responder = scripted_model(run, steps=3)
    with ScriptedOpenAIServer(responder) as server:
        first: TrainingSummary = run_loop(run, data, server, max_steps=2)[0]
        second: TrainingSummary = run_loop(run, data, server)[0]
    assert [report.step for report in first.steps] == [1, 2]
    assert second.first_step == 2
    assert [report.step for report in second.steps] == [3]
    assert second.steps[0].scenario_ids == [f"train-{seed}" for seed in data.batch(2)]
    assert sorted(val_rows(run)) == [0, 2, 3]  # step 2 is not validated twice


def test_a_newest_checkpoint_without_adapter_files_is_set_aside_and_its_step_retrained(tmp_path):
    run = small_run(tmp_path / "art", grpo={"max_steps": 2}, validation={"every_steps": 5})
    data, responder = scripted_model(run, steps=2)
    directory = run_state.model_dir(run)
    lines: list[str] = []
    with ScriptedOpenAIServer(responder) as server:
        run_loop(run, data, server, max_steps=1)
        (directory / "checkpoints" / "0001" / "adapter_model.safetensors").unlink()  # a cut save
        second, _ = run_loop(run, data, server, lines)
    assert any("checkpoint 0001 holds no adapter files" in line for line in lines)
    assert (directory / "checkpoints" / "0001.incomplete").is_dir()
    assert second.first_step == 0
    assert [report.step for report in second.steps] == [1, 2]
    assert second.steps[0].scenario_ids == [f"train-{seed}" for seed in data.batch(0)]


def test_a_changed_config_is_refused_on_resume_unless_forced(tmp_path):
    run = small_run(tmp_path / "art", grpo={"max_steps": 1})
    data, responder = scripted_model(run, steps=2)
    changed = small_run(tmp_path / "art", grpo={"max_steps": 1, "learning_rate": 3e-5})
    with ScriptedOpenAIServer(responder) as server:
        run_loop(run, data, server)
        with pytest.raises(RunChanged, match=r"grpo\.learning_rate"):
            run_loop(changed, data, server)
        forced, _ = run_loop(changed, data, server, force=True)
    assert forced.notes and "--force" in forced.notes[0]
    saved = json.loads((run_state.model_dir(run) / run_state.RUN_FILE).read_text())
    assert saved["fingerprint"] == changed.fingerprint()
    assert saved["forced"][0]["at_step"] == 1


def test_the_cold_start_runs_sft_once_and_grpo_counts_from_its_checkpoint(tmp_path):
    cold = {"teacher": "auditor", "scenarios": 2, "samples": 1, "shared": False}
    run = small_run(tmp_path / "art", grpo={"max_steps": 2}, cold_start=cold)
    data, responder = scripted_model(run, steps=2)
    with ScriptedOpenAIServer(responder) as server:
        first, backend = run_loop(run, data, server, max_steps=1)
        second, resumed = run_loop(run, data, server)
    assert [len(call.trajectories) for call in backend.sft_calls] == [2 * 2]  # 2 epochs
    assert backend.sft_calls[0].config.learning_rate == 1e-4  # the recipe's LoRA SFT rate
    assert resumed.sft_calls == []
    assert [report.step for report in first.steps] == [2]  # checkpoint 1 is the SFT
    assert [report.step for report in second.steps] == [3]
    assert second.steps[0].scenario_ids == [f"train-{seed}" for seed in data.batch(1)]
    state = run_state.read_sft_state(run_state.model_dir(run))
    assert state is not None and state.grpo_start_step == 1 and state.trajectories == 2


def test_a_history_line_cut_mid_write_is_repaired_and_validation_still_prunes(tmp_path):
    """ART's delete_checkpoints (run for real by the double, with polars) reads history.jsonl."""
    run = small_run(tmp_path / "art")
    data, responder = scripted_model(run, steps=3)
    directory = run_state.model_dir(run)
    history_file = directory / run_state.HISTORY_FILE
    lines: list[str] = []
    with ScriptedOpenAIServer(responder) as server:
        run_loop(run, data, server, max_steps=2)
        whole = history_file.read_bytes()
        history_file.write_bytes(whole + b'{"step": 3, "train/rew')  # killed mid-write
        second, _ = run_loop(run, data, server, lines)
    assert [report.step for report in second.steps] == [3]
    assert any("1 unreadable line(s)" in line and "corrupt-1" in line for line in lines)
    assert (directory / "history.jsonl.corrupt-1").read_bytes().startswith(whole)
    assert sorted(val_rows(run)) == [0, 2, 3]
    assert any(line.startswith("  kept checkpoints") for line in lines)
    assert 1 not in run_state.checkpoint_steps(directory)  # pruned after the validation at 3


def test_pruning_that_fails_after_a_repair_is_logged_and_the_run_goes_on(tmp_path):
    run = small_run(tmp_path / "art")
    data, responder = scripted_model(run, steps=3)
    directory = run_state.model_dir(run)
    lines: list[str] = []
    with ScriptedOpenAIServer(responder) as server:
        run_loop(run, data, server, max_steps=2)
        with (directory / run_state.HISTORY_FILE).open("a") as history_file:
            # valid JSON that polars cannot put in one column with the numbers (SchemaError)
            history_file.write(json.dumps({"step": 2, run_state.PASS1_KEY: {"bad": 1}}) + "\n")
        second, _ = run_loop(run, data, server, lines)
    assert [report.step for report in second.steps] == [3]
    assert [result.step for result in second.validations] == [3]
    warnings = [line for line in lines if line.startswith("warning: checkpoints not pruned")]
    assert len(warnings) == 1 and "kept all" in warnings[0]
