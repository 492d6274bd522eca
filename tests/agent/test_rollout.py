"""The shared rollout over real HTTP: an OpenAI-compatible scripted server on 127.0.0.1."""

from __future__ import annotations

import asyncio
import json

import openai
import pytest

from agent.api_policies import OpenAICompatiblePolicy, _classify
from agent.policy import (
    ContextLengthExceeded,
    PolicyError,
    RequestRejected,
    ServerUnreachable,
    TransientPolicyError,
)
from agent.program_policy import reference_policy
from agent.retry import RetryBudgetSpent, RetrySettings, ServerWatch
from agent.rollout import RolloutConfig, run_episode
from agent.trajectory import Trajectory
from env.generation.generator import generate
from env.scenario import reveal_truth
from tests.support.scripted_server import (
    UNPARSED_400,
    ScriptedOpenAIServer,
    malformed_call_turn,
    replay_responder,
    text_turn,
    tool_call_turn,
)

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
    assert isinstance(trajectory, Trajectory)
    choices = [m for m in trajectory.messages_and_choices if not isinstance(m, dict)]
    assert choices == trajectory.choices()
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
        result = run(policy, scenario, retry=RetrySettings(backoff_s=0.01))
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
        ("json parser could not parse region as JSON.", RequestRejected),
    ],
)
def test_a_400_ends_one_episode_as_a_context_overflow_or_a_rejected_request(message, kind):
    error = _classify(_bad_request(message), "vllm")
    assert isinstance(error, kind)
    assert not isinstance(error, (TransientPolicyError, PolicyError))


FAST = RetrySettings(backoff_s=0.01, backoff_max_s=0.05, unreachable_after_s=0.3)


def http_policy(server: ScriptedOpenAIServer, **kwargs) -> OpenAICompatiblePolicy:
    return OpenAICompatiblePolicy(
        base_url=server.base_url, model_name="scripted", api_key="x", **kwargs
    )


@pytest.mark.parametrize(
    ("mode", "error"),
    [("http500", "HTTP 500: Internal Server Error"), ("http400", "HTTP 400: " + UNPARSED_400)],
)
def test_a_call_the_server_cannot_parse_ends_the_episode_as_a_server_error_after_two_retries(
    mode, error
):
    """transformers serve up to 5.24 answers a plain 500, from 5.25 a 400: the same outcome."""
    scenario = generate(*SCENARIO)
    script = [tool_call_turn("get_invoice", '{"invoice_id": ')] * 3
    with ScriptedOpenAIServer(replay_responder(script), malformed_calls=mode) as server:
        result = run(http_policy(server), scenario, retry=FAST)
        asked = len(server.requests)

    assert asked == 3  # the request and two retries; never resampled until it parses
    assert result.stats.end_reason == "server_error"
    assert result.error == f"{error} ({server.base_url})"
    assert result.stats.retry_causes[0].startswith(error.split(":")[0])
    assert not result.reward.submitted


def test_a_malformed_call_returned_as_text_is_scored_as_a_text_reply_with_the_raw_call():
    scenario = generate(*SCENARIO)
    script = [
        tool_call_turn("get_customer", {"customer_id": scenario.customer_id}),
        malformed_call_turn("get_invoice"),
    ]
    with ScriptedOpenAIServer(replay_responder(script)) as server:
        result = run(http_policy(server), scenario)

    assert result.stats.end_reason == "text_reply"
    assert result.stats.finish_reasons == ["tool_calls", "stop"]
    assert "<tool_call>" in result.messages[-1]["content"]
    assert result.error is None and result.record.tool_calls == 1


def test_vllm_style_malformed_tool_calls_become_text_too():
    scenario = generate(*SCENARIO)
    script = [tool_call_turn("get_invoice", '{"invoice_id": ')]
    with ScriptedOpenAIServer(replay_responder(script), malformed_calls="text") as server:
        result = run(http_policy(server), scenario)

    assert result.stats.end_reason == "text_reply"
    assert '"name": "get_invoice"' in result.messages[-1]["content"]


def test_a_length_cut_reply_ends_as_finish_length_and_peak_context_is_kept():
    scenario = generate(*SCENARIO)
    script = [{"content": "Let me think about the invoices and", "finish_reason": "length"}]
    with ScriptedOpenAIServer(replay_responder(script)) as server:
        result = run(http_policy(server), scenario)

    assert result.stats.end_reason == "finish_length"
    assert result.stats.peak_context_tokens > 100
    assert result.stats.generation_s > 0


def test_refused_connections_for_the_configured_time_stop_the_run():
    scenario = generate(*SCENARIO)
    server = ScriptedOpenAIServer(replay_responder(reference_script(scenario))).start()
    policy = http_policy(server)
    server.stop()

    with pytest.raises(ServerUnreachable, match="every connection refused"):
        run(policy, scenario, retry=FAST)


def test_transient_failures_stop_when_the_runs_retry_budget_is_spent():
    scenario = generate(*SCENARIO)
    with ScriptedOpenAIServer(replay_responder(reference_script(scenario))) as server:
        server.fail_next(1000, 503)
        with pytest.raises(RetryBudgetSpent, match="retry budget"):
            run(http_policy(server), scenario, retry=FAST, watch=ServerWatch(budget_s=0.2))


def test_every_retry_is_reported_with_its_cause():
    scenario = generate(*SCENARIO)
    lines: list[str] = []
    with ScriptedOpenAIServer(replay_responder(reference_script(scenario))) as server:
        server.fail_next(1, 429)
        server.fail_next(1, 502)
        result = run(http_policy(server), scenario, retry=FAST, report=lines.append)

    assert result.stats.retry_causes == ["HTTP 429", "HTTP 502"]
    assert "HTTP 429" in lines[0] and scenario.scenario_id in lines[0]
    assert result.stats.end_reason == "submitted" and result.reward.success


def test_the_servers_retry_after_is_honoured():
    scenario = generate(*SCENARIO)
    script = replay_responder(reference_script(scenario))
    with ScriptedOpenAIServer(script, retry_after_s=0.3) as server:
        server.fail_next(1, 429)
        result = run(http_policy(server), scenario, retry=FAST)

    assert result.stats.retry_causes == ["HTTP 429"]
    assert result.stats.queue_s >= 0.3 and result.reward.success
