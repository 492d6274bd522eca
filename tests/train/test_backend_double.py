"""FakeBackendForTests keeps ART's step, checkpoint and logging contract on CPU, offline."""

from __future__ import annotations

import asyncio
import inspect
import json
import socket
from pathlib import Path
from typing import Any

import art
import pytest
from art.types import LocalTrainResult

from tests.support.scripted_server import (
    ScriptedOpenAIServer,
    replay_responder,
    text_turn,
    tool_call_turn,
)
from tests.train.backend_double import LOCAL_BACKEND_TRAIN_KWARGS, FakeBackendForTests
from tests.train.toy_rollout import SYSTEM_PROMPT, TOOLS, USER_COMPLAINT, Turn, sampled_token_ids
from tests.train.toy_tokenizer import build_toy_tokenizer
from training.art.fixes import prepare_groups_for_training

PROJECT = "ledgergym-tests"
INFERENCE_URL = "http://127.0.0.1:9/v1"  # never contacted unless a test starts a server


@pytest.fixture
def no_network(monkeypatch):
    """Any connection other than to 127.0.0.1 fails the test."""
    real_connect = socket.socket.connect

    def local_only(sock: socket.socket, address: Any) -> Any:
        if isinstance(address, tuple) and address[0] not in ("127.0.0.1", "localhost"):
            raise AssertionError(f"network access attempted: {address}")
        return real_connect(sock, address)

    monkeypatch.setattr(socket.socket, "connect", local_only)
    monkeypatch.delenv("WANDB_API_KEY", raising=False)


def new_model() -> art.TrainableModel:
    return art.TrainableModel(
        name="agent-001",
        project=PROJECT,
        base_model="Qwen/Qwen3.5-4B",
        report_metrics=[],  # no W&B even when WANDB_API_KEY is set
        _internal_config=art.dev.InternalModelConfig(
            chat_template_kwargs={"enable_thinking": False},
            chat_template_tool_schema_format="vllm_openai",
        ),
    )


def group_with_rewards(*rewards: float) -> art.TrajectoryGroup:
    messages = [{"role": "user", "content": USER_COMPLAINT}]
    return art.TrajectoryGroup(
        art.Trajectory(messages_and_choices=list(messages), reward=reward) for reward in rewards
    )


async def register_and_train(
    path: Path, steps: int
) -> tuple[FakeBackendForTests, art.TrainableModel, list[LocalTrainResult]]:
    backend = FakeBackendForTests(path=path, inference_base_url=INFERENCE_URL)
    model = new_model()
    await model.register(backend)
    results = [
        await backend.train(model, [group_with_rewards(1.0, 0.0)], learning_rate=1e-5)
        for _ in range(steps)
    ]
    return backend, model, results


def test_register_saves_step_zero_and_points_inference_at_the_given_server(tmp_path):
    backend = FakeBackendForTests(path=tmp_path, inference_base_url=INFERENCE_URL)
    server_config = art.dev.OpenAIServerConfig(server_args={"tool_call_parser": "qwen3_coder"})

    async def scenario() -> art.TrainableModel:
        model = new_model()
        await model.register(backend, _openai_client_config=server_config)
        return model

    model = asyncio.run(scenario())
    assert backend.server_configs == [server_config]  # where LocalBackend takes vLLM's parser
    model_dir = tmp_path / PROJECT / "models" / "agent-001"
    assert (model_dir / "checkpoints" / "0000").is_dir()
    assert json.loads((model_dir / "model.json").read_text())["name"] == "agent-001"
    assert model.inference_base_url == INFERENCE_URL
    assert model.get_inference_name() == "agent-001@0"


def test_two_train_calls_write_checkpoints_0001_and_0002(tmp_path):
    _, model, results = asyncio.run(register_and_train(tmp_path, steps=2))
    checkpoints = tmp_path / PROJECT / "models" / "agent-001" / "checkpoints"
    assert sorted(p.name for p in checkpoints.iterdir()) == ["0000", "0001", "0002"]
    assert [result.step for result in results] == [1, 2]
    assert results[-1].checkpoint_path == str(checkpoints / "0002")
    assert model.get_inference_name() == "agent-001@2"


def test_train_records_each_calls_groups_and_keyword_arguments(tmp_path):
    backend, _, results = asyncio.run(register_and_train(tmp_path, steps=2))
    assert [call.kwargs for call in backend.train_calls] == [{"learning_rate": 1e-5}] * 2
    assert [len(call.groups) for call in backend.train_calls] == [1, 1]
    assert results[0].metrics["data/step_num_groups_trainable"] == 1.0
    assert results[0].metrics["loss/learning_rate"] == 1e-5
    assert results[0].metrics["data/step_num_gradient_steps"] == 1.0


def test_a_new_backend_and_model_resume_at_the_last_step(tmp_path):
    asyncio.run(register_and_train(tmp_path, steps=2))

    async def resume() -> tuple[int, int]:
        model = new_model()
        backend = FakeBackendForTests(path=tmp_path, inference_base_url=INFERENCE_URL)
        await model.register(backend)
        before = await model.get_step()
        result = await backend.train(model, [group_with_rewards(1.0, 0.5)])
        return before, result.step

    assert asyncio.run(resume()) == (2, 3)


def test_delete_checkpoints_keeps_the_latest_and_the_best_validated_step(tmp_path, no_network):
    async def scenario() -> None:
        _, model, _ = await register_and_train(tmp_path, steps=3)
        for step, reward in [(1, 0.9), (2, 0.4), (3, 0.6)]:
            await model.log(metrics={"reward": reward}, step=step, split="val")
        await model.delete_checkpoints()  # reads history.jsonl with polars (pinned <2)

    asyncio.run(scenario())
    checkpoints = tmp_path / PROJECT / "models" / "agent-001" / "checkpoints"
    assert sorted(p.name for p in checkpoints.iterdir()) == ["0001", "0003"]


def test_train_rejects_a_keyword_local_backend_does_not_take(tmp_path):
    async def scenario() -> None:
        model = new_model()
        backend = FakeBackendForTests(path=tmp_path, inference_base_url=INFERENCE_URL)
        await model.register(backend)
        await backend.train(model, [group_with_rewards(1.0, 0.0)], lr=1e-5)

    with pytest.raises(TypeError, match="lr"):
        asyncio.run(scenario())


def test_the_keyword_list_matches_the_installed_local_backend():
    local_backend = pytest.importorskip("art.local.backend")
    parameters = inspect.signature(local_backend.LocalBackend.train).parameters
    keywords = {n for n, p in parameters.items() if p.kind is inspect.Parameter.KEYWORD_ONLY}
    assert keywords == LOCAL_BACKEND_TRAIN_KWARGS


def test_model_log_writes_history_and_trajectories_without_network(tmp_path, no_network):
    async def scenario() -> None:
        model = new_model()
        backend = FakeBackendForTests(path=tmp_path, inference_base_url=INFERENCE_URL)
        await model.register(backend)
        groups = [group_with_rewards(1.0, 0.0)]
        result = await backend.train(model, groups)
        await model.log(groups, metrics=result.metrics, step=result.step, split="train")

    asyncio.run(scenario())
    model_dir = tmp_path / PROJECT / "models" / "agent-001"
    rows = [json.loads(line) for line in (model_dir / "history.jsonl").read_text().splitlines()]
    assert rows[-1]["step"] == 1
    assert rows[-1]["train/reward"] == 0.5
    assert "loss/train" in rows[-1]
    assert (model_dir / "trajectories" / "train" / "0001.parquet").is_file()
    assert "_metrics_builder_state" in json.loads((model_dir / "state.json").read_text())


def reply_tokens(tokenizer) -> Any:
    """Logprob tokens as ART's vLLM returns them ('token_id:N') for a scripted reply."""

    def tokens(reply: dict[str, Any]) -> list[str]:
        calls = tuple((call["name"], json.loads(call["arguments"])) for call in reply["tool_calls"])
        turn = Turn(calls=calls, answer=reply.get("content") or "")
        return [f"token_id:{i}" for i in sampled_token_ids(tokenizer, turn)]

    return tokens


async def scripted_rollout(model: art.TrainableModel, reward: float) -> art.Trajectory:
    trajectory = art.Trajectory(
        messages_and_choices=[
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": USER_COMPLAINT},
        ],
        tools=TOOLS,
        reward=reward,
    )
    client = model.openai_client()  # needs openai<3 (pinned): ART passes an httpx.Timeout
    for _ in range(3):
        response = await client.chat.completions.create(
            model=model.get_inference_name(),
            messages=trajectory.messages(),  # type: ignore[arg-type]
            tools=TOOLS,  # type: ignore[arg-type]
            logprobs=True,
        )
        choice = response.choices[0]
        trajectory.messages_and_choices.append(choice)
        for call in choice.message.tool_calls or []:
            result = {"role": "tool", "tool_call_id": call.id, "content": '{"ok": true}'}
            trajectory.messages_and_choices.append(result)  # type: ignore[arg-type]
    return trajectory


def test_a_scripted_rollout_is_gathered_prepared_trained_and_logged(tmp_path, no_network):
    tokenizer = build_toy_tokenizer()
    script = [
        tool_call_turn("get_invoice", {"invoice_id": "INV-1001"}),
        tool_call_turn("list_payments", {"invoice_id": "INV-1001"}),
        text_turn("The customer paid INV-1001 twice."),
    ]
    server = ScriptedOpenAIServer(replay_responder(script), reply_tokenizer=reply_tokens(tokenizer))

    async def scenario() -> FakeBackendForTests:
        backend = FakeBackendForTests(
            path=tmp_path, inference_base_url=server.base_url, tokenizer=tokenizer
        )
        model = new_model()
        await model.register(backend)
        groups = await art.gather_trajectory_groups(
            [art.TrajectoryGroup(scripted_rollout(model, reward) for reward in (1.0, 0.0))],
            pbar_desc=None,
        )
        prepared, stats = prepare_groups_for_training(groups)
        result = await backend.train(model, prepared, learning_rate=1e-5)
        metrics = result.metrics | stats.as_metrics()
        await model.log(groups, metrics=metrics, step=result.step, split="train")
        return backend

    with server:
        backend = asyncio.run(scenario())
    for body in server.requests:  # ART's client adds the model's chat_template_kwargs
        assert body["chat_template_kwargs"] == {"enable_thinking": False}
        assert body["model"] == "agent-001@0"
    tokenized = backend.train_calls[0].tokenized
    assert tokenized is not None and len(tokenized) == 2
    tool_call_id = tokenizer.convert_tokens_to_ids("<tool_call>")
    for result in tokenized:
        assert len(result.choice_offsets) == 3
        # once in the template's tools preamble, then each sampled call exactly once
        assert result.token_ids.count(tool_call_id) == 1 + 2
