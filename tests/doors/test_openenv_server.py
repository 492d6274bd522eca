"""The OpenEnv door (`python -m doors.openenv_server`), driven by openenv-core's own client.

Two servers run as child processes on free ports of 127.0.0.1 for the whole module: a roomy one
for the parity and isolation tests, and one with two sessions and a 1 s idle timeout for the
bound, the vanished client and the reaper. `LedgerGymClient` is openenv-core's `MCPToolClient`
reading LedgerGym's observations. Skipped without the `[openenv]` extra.
"""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("openenv.core", reason="needs the [openenv] extra: pip install -e '.[openenv]'")

from openenv.core.env_server.mcp_types import CallToolAction

from agent.program_policy import reference_policy, reference_program
from doors.openenv_client import LedgerGymClient
from doors.openenv_env import CLOSED, NO_EPISODE
from doors.openenv_types import EpisodeStarted, ToolResult
from env.generation.generator import generate
from env.ledger_env import LedgerEnv
from env.scenario import Scenario
from tests.doors.players import eval_scenarios, rollout_reward, uncredited_policy
from tests.doors.players import uncredited_program as uncredited
from tests.doors.test_mcp_server import (
    _PLAYED,
    AFFECTED,
    CUSTOMER,
    OWED,
    SCENARIO,
    _doors_readme_snippet,
)
from tests.doors.vf_eval import ROOT
from tests.support.snippets import run_snippet

START_S = 120  # openenv-core imports gradio: a cold start on a busy machine takes a while
CLIENTS = 4  # concurrent clients in the parity test


def _start(*args: str) -> subprocess.Popen[str]:
    command = [sys.executable, "-m", "doors.openenv_server", "--port", "0", *args]
    return subprocess.Popen(command, cwd=ROOT, stderr=subprocess.PIPE, text=True)


def _url(process: subprocess.Popen[str]) -> str:
    assert process.stderr is not None
    line = process.stderr.readline()  # bounded by the fixture's process timeout below
    found = re.search(r"at (http://127\.0\.0\.1:\d+)", line)
    assert found, f"no URL in the server's first line: {line!r}"
    return found.group(1)


def _stop(process: subprocess.Popen[str]) -> None:
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


@pytest.fixture(scope="module")
def servers() -> Iterator[dict[str, str]]:
    """Both servers, started together (their imports overlap), stopped after the module."""
    roomy = _start("--max-sessions", "16", "--session-timeout", "300")
    small = _start("--max-sessions", "2", "--session-timeout", "1")
    timer = threading.Timer(START_S, lambda: [_stop(roomy), _stop(small)])
    timer.start()
    try:
        urls = {"roomy": _url(roomy), "small": _url(small)}
        timer.cancel()
        yield urls
    finally:
        timer.cancel()
        _stop(roomy)
        _stop(small)


def _capacity(url: str) -> dict[str, Any]:
    with urllib.request.urlopen(f"{url}/capacity", timeout=10) as response:
        return dict(json.loads(response.read()))


def _wait_for_active(url: str, count: int, limit_s: float = 20) -> None:
    deadline = time.monotonic() + limit_s
    while _capacity(url)["active_sessions"] != count:
        assert time.monotonic() < deadline, f"still {_capacity(url)} after {limit_s} s"
        time.sleep(0.2)


def _call(name: str, **arguments: Any) -> CallToolAction:
    return CallToolAction(tool_name=name, arguments=arguments)


def _result(outcome: Any) -> dict[str, Any]:
    assert isinstance(outcome.observation, ToolResult)
    return dict(json.loads(outcome.observation.result))


def test_the_server_lists_exactly_the_nine_tools_with_ledger_envs_schemas(servers):
    async def body() -> list[dict[str, Any]]:
        async with LedgerGymClient(servers["roomy"]) as client:
            tools = await client.list_tools(use_cache=False)
        return [
            {
                "type": "function",
                "function": {
                    "name": tool.name,
                    "description": tool.description,
                    "parameters": tool.input_schema,
                },
            }
            for tool in tools
        ]

    assert asyncio.run(body()) == LedgerEnv.tool_specs()


def test_every_eval_scenario_scores_what_the_rollout_gives_term_by_term(servers):
    jobs = [(scenario, program) for scenario in eval_scenarios() for program in ("ref", "unc")]
    verdicts: dict[tuple[str, str], Any] = {}

    async def worker(queue: asyncio.Queue[tuple[Scenario, str]]) -> None:
        async with LedgerGymClient(servers["roomy"]) as client:
            while not queue.empty():
                scenario, program = queue.get_nowait()
                started = await client.reset(scenario_id=scenario.scenario_id)
                assert isinstance(started.observation, EpisodeStarted)
                assert started.observation.complaint == scenario.complaint
                play = reference_program if program == "ref" else uncredited
                final = await client.play(play(scenario))
                assert final is not None and final.done, scenario.scenario_id
                verdicts[scenario.scenario_id, program] = final

    async def body() -> None:
        queue: asyncio.Queue[tuple[Scenario, str]] = asyncio.Queue()
        for job in jobs:
            queue.put_nowait(job)
        await asyncio.gather(*(worker(queue) for _ in range(CLIENTS)))

    asyncio.run(body())
    assert len(verdicts) == 200
    for scenario, program in jobs:
        final = verdicts[scenario.scenario_id, program]
        metadata = final.observation.metadata
        policy = reference_policy() if program == "ref" else uncredited_policy()
        for variant in ("shaped", "binary"):
            expected = rollout_reward(policy, scenario, variant)
            got = metadata["rewards"][variant]
            where = f"{scenario.scenario_id} {program} {variant}"
            assert (got["total"], got["terms"]) == (expected.total, expected.terms), where
        assert final.reward == metadata["rewards"]["shaped"]["total"]
        assert metadata["scenario_id"] == scenario.scenario_id
        assert metadata["grounded_success"] == (metadata["rewards"]["binary"]["total"] == 1.0)


def test_a_malformed_call_gets_ledger_envs_exact_error_and_the_session_goes_on(servers):
    expected = LedgerEnv(_PLAYED).call("get_invoice", '{"invoice_id": 5}')

    async def body() -> tuple[Any, ...]:
        async with LedgerGymClient(servers["roomy"]) as client:
            before = await client.step(_call("get_customer", customer_id=CUSTOMER))
            await client.reset(scenario_id=SCENARIO)
            malformed = await client.step(_call("get_invoice", invoice_id=5))
            unknown = await client.step(_call("refund_everything"))
            customer = await client.step(_call("get_customer", customer_id=CUSTOMER))
            return before, malformed, unknown, customer

    before, malformed, unknown, customer = asyncio.run(body())
    assert before.observation.error.message == NO_EPISODE
    assert malformed.observation.result == expected and not malformed.done
    assert "unknown tool" in _result(unknown)["error"]
    assert _result(customer)["customer_id"] == CUSTOMER


def test_a_bad_reset_is_refused_in_one_line_and_the_session_goes_on(servers):
    async def body() -> tuple[str, Any]:
        async with LedgerGymClient(servers["roomy"]) as client:
            with pytest.raises(RuntimeError) as refused:
                await client.reset(scenario_id="eval-5")
            started = await client.reset(split="eval", seed=_PLAYED.seed)
            return str(refused.value), started

    message, started = asyncio.run(body())
    assert "seed 5 is outside split 'eval'" in message and "\n" not in message
    assert started.observation.scenario_id == SCENARIO


def test_concurrent_sessions_on_one_scenario_never_see_each_others_writes(servers):
    note = {"invoice_id": AFFECTED, "amount": OWED, "reason": "Verified trial charge"}

    async def body() -> tuple[Any, ...]:
        async with LedgerGymClient(servers["roomy"]) as a, LedgerGymClient(servers["roomy"]) as b:
            await asyncio.gather(a.reset(scenario_id=SCENARIO), b.reset(scenario_id=SCENARIO))
            drafted = await a.step(_call("draft_credit_note", **note))
            seen = await asyncio.gather(
                a.step(_call("get_invoice", invoice_id=AFFECTED)),
                b.step(_call("get_invoice", invoice_id=AFFECTED)),
            )
            second = await b.step(_call("draft_credit_note", **note))
            return drafted, *seen, second

    drafted, seen_by_a, seen_by_b, second = asyncio.run(body())
    assert "error" not in _result(drafted)
    assert _result(seen_by_a)["amount_credited"] == OWED and _result(seen_by_a)["credit_notes"]
    assert _result(seen_by_b)["amount_credited"] == "0.00"
    assert _result(seen_by_b)["credit_notes"] == []
    assert "error" not in _result(second)  # the whole amount is still uncredited in b's copy


def test_a_session_past_the_bound_is_refused_and_a_vanished_client_frees_its_own(servers):
    url = servers["small"]
    _wait_for_active(url, 0)

    async def body() -> dict[str, Any]:
        first, second = LedgerGymClient(url), LedgerGymClient(url)
        await first.connect()
        await first.reset(scenario_id=SCENARIO)
        await first.step(_call("get_customer", customer_id=CUSTOMER))
        await second.connect()
        await second.reset(scenario_id=SCENARIO)
        async with LedgerGymClient(url) as third:
            # the server speaks first when it refuses, then closes: read that message as it
            # came (a request sent now could meet the closed socket instead of the answer)
            refusal = await third._receive()
        first._ws.transport.abort()  # type: ignore[union-attr]  # gone mid-episode, no close
        await second.close()
        return refusal

    refusal = asyncio.run(body())
    assert refusal["type"] == "error" and refusal["data"]["code"] == "CAPACITY_REACHED"
    assert refusal["data"]["message"].startswith("Server at capacity: 2/2 sessions active")
    _wait_for_active(url, 0)  # both freed: the closed one and the one that vanished


def test_an_idle_session_is_freed_and_then_says_so(servers):
    url = servers["small"]
    _wait_for_active(url, 0)

    async def body() -> Any:
        async with LedgerGymClient(url) as client:
            await client.reset(scenario_id=SCENARIO)
            await asyncio.to_thread(_wait_for_active, url, 0)  # idle: the reaper frees it
            return await client.step(_call("get_customer", customer_id=CUSTOMER))

    after = asyncio.run(body())
    assert after.observation.error.message == CLOSED


def test_help_works_and_a_bad_flag_is_one_line_with_exit_status_2():
    def run(*args: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "doors.openenv_server", *args]
        return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=60)

    helped = run("--help")
    assert helped.returncode == 0 and "--max-sessions" in helped.stdout
    bad = run("--session-timeout", "0")
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1
    assert "must be more than 0 seconds" in bad.stderr


def test_the_readmes_openenv_snippet_runs_as_written(servers):
    code = _doors_readme_snippet("LedgerGymClient")
    assert "http://127.0.0.1:8000" in code and "asyncio.run(main())" in code
    done = run_snippet(code.replace("http://127.0.0.1:8000", servers["roomy"]), timeout_s=START_S)

    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith(generate("eval", 100021).complaint)
    assert "9 tools: get_customer, " in done.stdout and "done: True reward: 0.0" in done.stdout
