"""The scripted OpenAI-compatible server answers the real openai and litellm clients offline."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import openai
import pytest
from openai.types.chat.chat_completion import Choice

from tests.support.scripted_server import (
    ScriptedOpenAIServer,
    replay_responder,
    text_turn,
    tool_call,
    tool_call_turn,
)

# litellm's own success logging dumps its Choices with pydantic serializer warnings; not ours.
pytestmark = pytest.mark.filterwarnings("ignore:Pydantic serializer warnings:UserWarning")

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_invoice",
            "description": "Returns one invoice.",
            "parameters": {
                "type": "object",
                "properties": {"invoice_id": {"type": "string"}},
                "required": ["invoice_id"],
            },
        },
    }
]
USER = [{"role": "user", "content": "Why was I charged twice?"}]
MALFORMED = '{"invoice_id": "INV-7F3K2Q"'


@pytest.fixture(scope="module")
def litellm() -> ModuleType:
    """Imported once per module (about 2-3 s); the local cost map keeps it offline."""
    os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    import litellm

    litellm.suppress_debug_info = True
    return litellm


@pytest.fixture(scope="module")
def runner() -> Iterator[asyncio.Runner]:
    """One event loop for all litellm calls: litellm queues success logging on the running loop,
    and a loop closed by `asyncio.run` would leave those coroutines never awaited."""
    with asyncio.Runner() as loop_runner:
        yield loop_runner


@pytest.fixture
def server() -> Iterator[ScriptedOpenAIServer]:
    script = [tool_call_turn("get_invoice", {"invoice_id": "INV-7F3K2Q"}), text_turn("Done.")]
    with ScriptedOpenAIServer(replay_responder(script)) as running:
        yield running


def chat(
    base_url: str, messages: list[dict[str, Any]], *, model: str = "scripted", **kwargs: Any
) -> Any:
    """One request through the real AsyncOpenAI client, without client-side retries."""

    async def call() -> Any:
        async with openai.AsyncOpenAI(base_url=base_url, api_key="x", max_retries=0) as client:
            return await client.chat.completions.create(model=model, messages=messages, **kwargs)

    return asyncio.run(call())


def litellm_chat(runner: asyncio.Runner, litellm: ModuleType, base_url: str, **kwargs: Any) -> Any:
    """One litellm call on the module's event loop, where litellm's logging worker lives."""
    return runner.run(
        litellm.acompletion(
            model="openai/scripted", api_base=base_url, api_key="x", messages=USER, **kwargs
        )
    )


def test_openai_client_gets_a_choice_with_tool_calls_logprobs_and_usage(server):
    completion = chat(server.base_url, USER, tools=TOOLS, logprobs=True)

    choice = completion.choices[0]
    assert isinstance(choice, Choice)
    assert choice.finish_reason == "tool_calls"
    call = choice.message.tool_calls[0]
    assert call.id.startswith("call_")
    assert call.type == "function"
    assert (call.function.name, call.function.arguments) == (
        "get_invoice",
        '{"invoice_id": "INV-7F3K2Q"}',
    )
    tokens = choice.logprobs.content
    assert "".join(t.token for t in tokens) == 'get_invoice{"invoice_id": "INV-7F3K2Q"}'
    assert all(t.logprob == -0.1 and bytes(t.bytes).decode() == t.token for t in tokens)
    assert completion.object == "chat.completion"
    assert completion.usage.total_tokens == (
        completion.usage.prompt_tokens + completion.usage.completion_tokens
    )
    assert server.requests[0]["tools"] == TOOLS


def test_a_reply_tokenizer_can_emit_vllm_style_token_id_logprobs():
    tokenizer = lambda reply: ["token_id:9707", "token_id:151645"]  # noqa: E731
    with ScriptedOpenAIServer(
        lambda body: text_turn("Hello"), reply_tokenizer=tokenizer
    ) as running:
        choice = chat(running.base_url, USER).choices[0]

    assert [t.token for t in choice.logprobs.content] == ["token_id:9707", "token_id:151645"]


def test_replay_responder_answers_by_the_number_of_assistant_turns_so_far(server):
    first = chat(server.base_url, USER, tools=TOOLS).choices[0]
    call = first.message.tool_calls[0]
    history = [
        *USER,
        first.message.model_dump(exclude_none=True),
        {"role": "tool", "tool_call_id": call.id, "content": '{"total": "12.40"}'},
    ]

    second = chat(server.base_url, history, tools=TOOLS).choices[0]

    assert second.finish_reason == "stop"
    assert second.message.content == "Done."
    assert second.message.tool_calls == []


def test_replay_past_the_end_of_the_script_is_a_server_error_naming_the_turn(server):
    history = [*USER, {"role": "assistant", "content": "a"}, {"role": "assistant", "content": "b"}]

    with pytest.raises(openai.InternalServerError, match="asked for turn 3"):
        chat(server.base_url, history)


def test_malformed_tool_arguments_pass_through_unchanged():
    turn = {"content": None, "tool_calls": [tool_call("get_invoice", MALFORMED)]}
    with ScriptedOpenAIServer(lambda body: turn) as running:
        choice = chat(running.base_url, USER, tools=TOOLS).choices[0]

    assert choice.message.tool_calls[0].function.arguments == MALFORMED
    assert choice.message.content is None


def test_first_requests_fail_until_fail_first_is_used_up():
    with ScriptedOpenAIServer(lambda body: text_turn("ok"), fail_first=2) as running:
        for _ in range(2):
            with pytest.raises(openai.InternalServerError) as failure:
                chat(running.base_url, USER)
            assert failure.value.status_code == 503
        assert chat(running.base_url, USER).choices[0].message.content == "ok"
        assert len(running.requests) == 3


def test_openai_client_retries_fast_when_the_server_sends_retry_after():
    async def call(base_url: str) -> Any:
        async with openai.AsyncOpenAI(base_url=base_url, api_key="x", max_retries=2) as client:
            return await client.chat.completions.create(model="scripted", messages=USER)

    responder = lambda body: text_turn("ok")  # noqa: E731
    with ScriptedOpenAIServer(responder, fail_first=2, retry_after_s=0.01) as running:
        completion = asyncio.run(call(running.base_url))
        assert completion.choices[0].message.content == "ok"
        assert len(running.requests) == 3


def test_concurrent_requests_are_served_in_parallel_threads_and_all_recorded():
    async def many(base_url: str) -> list[Any]:
        async with openai.AsyncOpenAI(base_url=base_url, api_key="x", max_retries=0) as client:
            calls = [
                client.chat.completions.create(model="scripted", messages=USER) for _ in range(6)
            ]
            return await asyncio.gather(*calls)

    with ScriptedOpenAIServer(lambda body: text_turn("ok"), latency_s=0.25) as running:
        started = time.monotonic()
        completions = asyncio.run(many(running.base_url))
        elapsed = time.monotonic() - started

    assert [c.choices[0].message.content for c in completions] == ["ok"] * 6
    assert len(running.requests) == 6
    assert 0.25 <= elapsed < 6 * 0.25  # six in sequence would take 1.5 s


def test_streaming_requests_are_refused_with_an_openai_error(server):
    with pytest.raises(openai.BadRequestError, match="streaming is not supported"):
        chat(server.base_url, USER, stream=True)


def test_a_streaming_server_sends_the_same_turn_as_server_sent_events():
    turn = tool_call_turn("get_invoice", {"invoice_id": "INV-7F3K2Q"}, content="Looking.")

    async def streamed(base_url: str) -> Any:
        async with openai.AsyncOpenAI(base_url=base_url, api_key="x", max_retries=0) as client:
            options = {"include_usage": True}
            stream = client.chat.completions.stream(
                model="scripted", messages=USER, stream_options=options
            )
            async with stream as events:
                return await events.get_final_completion()

    with ScriptedOpenAIServer(lambda body: turn, streaming=True) as running:
        completion = asyncio.run(streamed(running.base_url))

    [choice] = completion.choices
    [call] = choice.message.tool_calls or []
    assert choice.message.content == "Looking." and choice.finish_reason == "tool_calls"
    assert (call.function.name, call.function.arguments) == (
        "get_invoice",
        turn["tool_calls"][0]["arguments"],
    )
    assert completion.usage is not None and completion.usage.total_tokens > 0


def test_strict_model_refuses_a_stale_model_name_like_vllm():
    with (
        ScriptedOpenAIServer(lambda body: text_turn("ok"), strict_model=True) as running,
        pytest.raises(openai.NotFoundError, match="does not exist"),
    ):
        chat(running.base_url, USER, model="old-step-3")


def test_requests_without_an_api_key_get_401(server):
    request = urllib.request.Request(
        server.base_url + "/chat/completions",
        data=json.dumps({"model": "scripted", "messages": USER}).encode(),
        headers={"Content-Type": "application/json"},
    )
    with pytest.raises(urllib.error.HTTPError) as failure:
        urllib.request.urlopen(request, timeout=5)

    assert failure.value.code == 401
    assert json.loads(failure.value.read())["error"]["code"] == "invalid_api_key"
    assert server.requests == []


def test_models_endpoint_lists_the_served_model(server):
    async def models() -> list[str]:
        async with openai.AsyncOpenAI(base_url=server.base_url, api_key="x") as client:
            return [model.id async for model in client.models.list()]

    assert asyncio.run(models()) == ["scripted"]


def test_litellm_returns_choices_that_convert_to_openai_choices(server, litellm, runner):
    response = litellm_chat(runner, litellm, server.base_url, tools=TOOLS, logprobs=True)

    raw = response.choices[0]
    assert type(raw).__name__ == "Choices" and not isinstance(raw, Choice)
    assert response._hidden_params["response_cost"] is None  # model not in the cost map
    dumped = raw.model_dump(
        warnings=False,
        exclude={"provider_specific_fields": True, "message": {"provider_specific_fields"}},
    )
    choice = Choice.model_validate(dumped)
    assert choice.message.tool_calls[0].function.name == "get_invoice"
    assert choice.logprobs is not None and choice.logprobs.content
    assert server.requests[0]["model"] == "scripted"


def test_litellm_cost_needs_a_price_for_unknown_models(server, litellm, runner):
    response = litellm_chat(runner, litellm, server.base_url)

    with pytest.raises(Exception, match="isn't mapped yet"):
        litellm.completion_cost(completion_response=response)
    prices = {"input_cost_per_token": 1e-6, "output_cost_per_token": 2e-6}
    cost = litellm.completion_cost(completion_response=response, custom_cost_per_token=prices)
    usage = response.usage
    assert cost == pytest.approx(usage.prompt_tokens * 1e-6 + usage.completion_tokens * 2e-6)


def test_stopping_releases_the_port_even_with_a_kept_alive_connection():
    running = ScriptedOpenAIServer(lambda body: text_turn("ok")).start()
    port = running.port

    async def call_and_keep_open() -> None:
        client = openai.AsyncOpenAI(base_url=running.base_url, api_key="x")
        await client.chat.completions.create(model="scripted", messages=USER)
        started = time.monotonic()
        running.stop()
        assert time.monotonic() - started < 1.0
        await client.close()

    asyncio.run(call_and_keep_open())

    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", port), timeout=1)
    with socket.socket() as again:
        again.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        again.bind(("127.0.0.1", port))
    assert not any(t.name == f"scripted-openai-{port}" for t in threading.enumerate())


def test_a_malformed_call_comes_back_as_text_like_vllm_or_as_a_plain_500_like_transformers():
    turn = {"content": None, "tool_calls": [tool_call("get_invoice", MALFORMED)]}
    with ScriptedOpenAIServer(lambda body: turn, malformed_calls="text") as running:
        choice = chat(running.base_url, USER, tools=TOOLS).choices[0]
    assert choice.message.tool_calls == [] and choice.finish_reason == "stop"
    expected = f'<tool_call>\n{{"name": "get_invoice", "arguments": {MALFORMED}\n</tool_call>'
    assert choice.message.content == expected

    with (
        ScriptedOpenAIServer(lambda body: turn, malformed_calls="http500") as running,
        pytest.raises(openai.InternalServerError) as failure,
    ):
        chat(running.base_url, USER, tools=TOOLS)
    assert failure.value.status_code == 500
    assert failure.value.response.text == "Internal Server Error"


def test_a_dead_server_restarts_on_the_same_port():
    running = ScriptedOpenAIServer(lambda body: text_turn("ok"), die_after=0).start()
    port = running.port
    with pytest.raises(openai.APIConnectionError):
        chat(running.base_url, USER)
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", port), timeout=1)

    running.die_after = None
    with running:
        assert running.port == port
        assert chat(running.base_url, USER).choices[0].message.content == "ok"


def test_max_model_len_is_listed_and_enforced_like_vllm():
    async def models(base_url: str) -> list[Any]:
        async with openai.AsyncOpenAI(base_url=base_url, api_key="x") as client:
            return [model async for model in client.models.list()]

    with ScriptedOpenAIServer(lambda body: text_turn("ok"), max_model_len=64) as running:
        (listed,) = asyncio.run(models(running.base_url))
        with pytest.raises(openai.BadRequestError, match="maximum context length is 64"):
            chat(running.base_url, USER, max_tokens=60)
        assert chat(running.base_url, USER, max_tokens=8).choices[0].message.content == "ok"

    assert listed.model_extra["max_model_len"] == 64
