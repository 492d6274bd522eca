"""Failure classification over real HTTP, through the real openai and litellm clients.

The scripted server returns each status, hangs, dies mid-run or refuses connections; the
policies must sort each into the kind the rollout acts on (agent/policy.py), by exception type.
"""

from __future__ import annotations

import asyncio
import os
import socket
from collections.abc import Iterator
from typing import Any

import pytest

from agent.api_policies import LiteLLMPolicy, OpenAICompatiblePolicy
from agent.policy import (
    ConnectFailed,
    ContextLengthExceeded,
    ServerFailure,
    TransientPolicyError,
)
from tests.support.scripted_server import ScriptedOpenAIServer, text_turn

pytestmark = pytest.mark.filterwarnings("ignore:Pydantic serializer warnings:UserWarning")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
USER = [{"role": "user", "content": "Why was I charged twice?"}]
ROUTES = ("openai", "litellm")


def policy(route: str, base_url: str, **kwargs: Any) -> Any:
    if route == "openai":
        return OpenAICompatiblePolicy(
            base_url=base_url, model_name="scripted", api_key="x", **kwargs
        )
    return LiteLLMPolicy(model_id="openai/scripted", api_base=base_url, api_key="x", **kwargs)


@pytest.fixture(scope="module")
def runner() -> Iterator[asyncio.Runner]:
    """One loop for every call: litellm keeps logging work on the loop it ran on."""
    with asyncio.Runner() as loop_runner:
        yield loop_runner


@pytest.fixture
def server() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer(lambda body: text_turn("ok")) as running:
        yield running


def ask(runner: asyncio.Runner, chosen: Any) -> Any:
    return runner.run(chosen.respond(USER, [], None))  # type: ignore[arg-type]


def failure(runner: asyncio.Runner, chosen: Any) -> Exception:
    with pytest.raises(Exception) as raised:
        ask(runner, chosen)
    return raised.value


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("status", [429, 502, 503, 504, 529])
def test_overload_statuses_are_transient(route, status, server, runner):
    server.fail_next(1, status)

    error = failure(runner, policy(route, server.base_url))

    assert isinstance(error, TransientPolicyError) and not isinstance(error, ConnectFailed)
    assert error.cause in (f"HTTP {status}", "timeout")  # litellm maps 504 to its Timeout
    assert ask(runner, policy(route, server.base_url)).choice.message.content == "ok"


@pytest.mark.parametrize("route", ROUTES)
def test_a_plain_http_500_is_a_server_failure_with_its_status_and_message(route, server, runner):
    server.fail_next(1, 500, plain=True)

    error = failure(runner, policy(route, server.base_url))

    assert isinstance(error, ServerFailure) and error.status == 500
    assert "Internal Server Error" in str(error)


@pytest.mark.parametrize("route", ROUTES)
def test_a_hung_server_times_out_as_transient_within_the_timeout(route, server, runner):
    server.hang()

    error = failure(runner, policy(route, server.base_url, timeout_s=0.3))

    assert isinstance(error, TransientPolicyError) and error.cause == "timeout"


@pytest.mark.parametrize("route", ROUTES)
def test_a_server_dying_mid_run_resets_then_refuses(route, runner):
    with ScriptedOpenAIServer(lambda body: text_turn("ok"), die_after=1) as dying:
        chosen = policy(route, dying.base_url)
        assert ask(runner, chosen).choice.message.content == "ok"
        during = failure(runner, chosen)
        after = failure(runner, chosen)

    assert isinstance(during, TransientPolicyError)
    assert isinstance(after, ConnectFailed) and after.cause == "connection refused"


@pytest.mark.parametrize("route", ROUTES)
def test_a_refused_connection_is_recognised_by_type(route, runner):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]

    error = failure(runner, policy(route, f"http://127.0.0.1:{port}/v1"))

    assert isinstance(error, ConnectFailed)


@pytest.mark.parametrize("route", ROUTES)
def test_the_context_guard_asks_only_for_the_room_left(route, runner):
    with ScriptedOpenAIServer(lambda body: text_turn("ok"), max_model_len=400) as limited:
        chosen = policy(route, limited.base_url, context_length=400, max_tokens=2048)
        ask(runner, chosen)
        asked = limited.requests[0]["max_tokens"]

        assert 16 <= asked < 400
        long = [{"role": "user", "content": "word " * 2000}]
        with pytest.raises(ContextLengthExceeded):
            runner.run(chosen.respond(long, [], None))  # type: ignore[arg-type]
        assert len(limited.requests) == 1  # refused before sending


@pytest.mark.parametrize("route", ROUTES)
def test_without_a_guard_the_servers_context_error_ends_the_episode_not_the_run(route, runner):
    with ScriptedOpenAIServer(lambda body: text_turn("ok"), max_model_len=100) as limited:
        error = failure(runner, policy(route, limited.base_url, max_tokens=2048))

    assert isinstance(error, ContextLengthExceeded)


def test_registry_sampling_reaches_the_request(server, runner):
    chosen = policy("openai", server.base_url, sampling={"top_p": 0.9, "top_k": 20})
    ask(runner, chosen)

    body = server.requests[0]
    assert (body["top_p"], body["top_k"]) == (0.9, 20)
