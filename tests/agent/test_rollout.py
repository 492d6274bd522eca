"""The shared rollout over real HTTP: an OpenAI-compatible scripted server on 127.0.0.1."""

from __future__ import annotations

import asyncio
import json

import openai
import pytest

from agent.api_policies import OpenAICompatiblePolicy, _classify
from agent.art_import import art
from agent.policy import ContextLengthExceeded, PolicyError, TransientPolicyError
from agent.program_policy import reference_policy
from agent.rollout import RolloutConfig, run_episode
from agent.scripted_server import (
    ScriptedOpenAIServer,
    replay_responder,
    text_turn,
    tool_call_turn,
)
from env.generator import generate
from env.scenario import reveal_truth

SCENARIO = ("eval", 100000)


def reference_script(scenario) -> list[dict]:
    return [tool_call_turn(c.name, c.arguments) for c in reveal_truth(scenario).reference]


def run(policy, scenario, **config):
    return asyncio.run(run_episode(policy, scenario, RolloutConfig(**config)))


def test_the_reference_policy_scores_full_marks_and_keeps_every_message():
    scenario = generate(*SCENARIO)
    result = run(reference_policy(), scenario)
    assert result.reward.total == 1.0
    trajectory = result.trajectory
    assert isinstance(trajectory, art.Trajectory)
    choices = [m for m in trajectory.messages_and_choices if not isinstance(m, dict)]
    tool_messages = [
        m
        for m in trajectory.messages_and_choices
        if isinstance(m, dict) and m.get("role") == "tool"
    ]
    assert len(choices) == len(tool_messages) == len(reveal_truth(scenario).reference)
    assert trajectory.metadata["label"] == reveal_truth(scenario).label
    assert trajectory.metrics["tool_calls"] == len(tool_messages)


def test_an_http_policy_replays_the_reference_and_malformed_calls_become_error_messages():
    scenario = generate(*SCENARIO)
    script = [
        tool_call_turn("get_invoice", "{not json"),
        tool_call_turn("refund_everything", {"customer_id": scenario.customer_id}),
        *reference_script(scenario),
    ]
    with ScriptedOpenAIServer(replay_responder(script)) as server:
        policy = OpenAICompatiblePolicy(
            base_url=server.base_url, model_name="scripted", api_key="x"
        )
        result = run(policy, scenario)
    assert result.reward.submitted and result.reward.success
    first_results = [json.loads(r.result) for r in result.record.tool_log[:2]]
    assert "not valid JSON" in first_results[0]["error"]
    assert "unknown tool" in first_results[1]["error"]
    assert result.trajectory.metrics["tool_errors"] == 2


def test_transient_errors_are_retried_and_do_not_count_as_turns():
    scenario = generate(*SCENARIO)
    with ScriptedOpenAIServer(
        replay_responder(reference_script(scenario)), fail_first=2, retry_after_s=0.0
    ) as server:
        policy = OpenAICompatiblePolicy(
            base_url=server.base_url, model_name="scripted", api_key="x"
        )
        result = run(policy, scenario, backoff_s=0.01)
    assert result.stats.retries == 2
    assert result.stats.turns == len(reveal_truth(scenario).reference)
    assert result.reward.success


def test_a_text_only_reply_ends_the_episode_without_a_submission():
    scenario = generate(*SCENARIO)
    script = [
        tool_call_turn("get_customer", {"customer_id": scenario.customer_id}),
        text_turn("I think you are fine."),
    ]
    with ScriptedOpenAIServer(replay_responder(script)) as server:
        policy = OpenAICompatiblePolicy(
            base_url=server.base_url, model_name="scripted", api_key="x"
        )
        result = run(policy, scenario)
    assert result.stats.ended_by_text
    assert not result.reward.submitted
    assert result.reward.total <= 0.0


def test_the_turn_budget_truncates_a_policy_that_never_submits():
    scenario = generate(*SCENARIO)
    script = [tool_call_turn("get_customer", {"customer_id": scenario.customer_id})] * 5
    with ScriptedOpenAIServer(replay_responder(script)) as server:
        policy = OpenAICompatiblePolicy(
            base_url=server.base_url, model_name="scripted", api_key="x"
        )
        result = run(policy, scenario, max_turns=3)
    assert result.stats.turns == 3
    assert result.record.truncated and not result.reward.submitted


def _bad_request(message: str) -> openai.BadRequestError:
    import httpx

    request = httpx.Request("POST", "http://127.0.0.1/v1/chat/completions")
    response = httpx.Response(400, request=request, json={"error": {"message": message}})
    return openai.BadRequestError(message, response=response, body={"message": message})


@pytest.mark.parametrize(
    ("message", "kind"),
    [
        ("This model's maximum context length is 32768 tokens", ContextLengthExceeded),
        ("unsupported parameter: foo", PolicyError),
    ],
)
def test_a_context_overflow_ends_one_episode_but_other_bad_requests_stop_the_run(message, kind):
    assert isinstance(_classify(_bad_request(message), "vllm"), kind)
    assert not isinstance(_classify(_bad_request(message), "vllm"), TransientPolicyError)
