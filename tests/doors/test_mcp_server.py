"""The MCP door (`python -m doors.mcp_server`), driven by the official MCP client library.

Each test starts the server itself, over stdio (a child process the client spawns) or
streamable HTTP on 127.0.0.1 (a child process started here, bounded in time, then stopped), and
checks what a client sees: the nine tools, the reference solution graded full marks, LedgerEnv's
own error results, and sessions that never share a database. Skipped without the `[mcp]` extra.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

import anyio
import pytest

pytest.importorskip("mcp", reason="needs the [mcp] extra: pip install -e '.[mcp]'")

from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp_types import CallToolResult

from doors.mcp_server import COMPLAINT_HEADING, NO_SESSION_ERROR
from env.generation.generator import generate
from env.generation.splits import split_seeds
from env.ledger_env import LedgerEnv, system_prompt
from env.scenario import Scenario, reveal_truth
from tests.doors.vf_eval import ROOT
from tests.support.snippets import python_blocks, run_snippet


def _one_affected_invoice() -> Scenario:
    """The first eval scenario that owes exactly one invoice (one credit note to draft)."""
    for seed in split_seeds("eval"):
        scenario = generate("eval", seed)
        if len(reveal_truth(scenario).overcharges) == 1:
            return scenario
    raise AssertionError("no eval scenario owes exactly one invoice")


_PLAYED = _one_affected_invoice()
SCENARIO = _PLAYED.scenario_id
SERVER = [sys.executable, "-m", "doors.mcp_server", "--scenario", SCENARIO]
CUSTOMER = _PLAYED.customer_id
((AFFECTED, OWED_CENTS),) = reveal_truth(_PLAYED).overcharges.items()
OWED = f"{OWED_CENTS // 100}.{OWED_CENTS % 100:02d}"
LIMIT_S = 60
Connect = Callable[[], AbstractAsyncContextManager[Client]]


@asynccontextmanager
async def _http_server() -> AsyncIterator[str]:
    """The server on a free port of 127.0.0.1; yields its URL and stops it afterwards."""
    process = subprocess.Popen(
        [*SERVER, "--http", "--port", "0"], cwd=ROOT, stderr=subprocess.PIPE, text=True
    )
    try:
        assert process.stderr is not None
        with anyio.fail_after(LIMIT_S):
            line = await anyio.to_thread.run_sync(process.stderr.readline)
        found = re.search(r"at (http://127\.0\.0\.1:\d+/mcp)", line)
        assert found, f"no URL in the server's first line: {line!r}"
        yield found.group(1)
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@asynccontextmanager
async def _server(transport: str) -> AsyncIterator[Connect]:
    """Yields a function that opens a new client session on one running server."""
    if transport == "http":
        async with _http_server() as url:
            yield lambda: Client(url)
    else:  # each stdio client spawns its own server process: the process is the session
        params = StdioServerParameters(command=SERVER[0], args=SERVER[1:], cwd=str(ROOT))
        yield lambda: Client(stdio_client(params))


def _run(transport: str, body: Callable[[Connect], Any]) -> None:
    async def main() -> None:
        with anyio.fail_after(LIMIT_S * 2):
            async with _server(transport) as connect:
                await body(connect)

    anyio.run(main)


def _json(result: CallToolResult, block: int = 0) -> dict[str, Any]:
    return json.loads(result.content[block].text)  # type: ignore[union-attr]


async def _play_reference(client: Client) -> CallToolResult:
    result = None
    for step in reveal_truth(_PLAYED).reference:
        result = await client.call_tool(step.name, step.arguments)
    assert result is not None
    return result


TRANSPORTS = pytest.mark.parametrize("transport", ["stdio", "http"])


@TRANSPORTS
def test_the_server_lists_exactly_the_nine_tools_with_ledger_envs_schemas(transport):
    async def body(connect: Connect) -> None:
        async with connect() as client:
            tools = (await client.list_tools()).tools
        listed = [
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
        assert listed == LedgerEnv.tool_specs()

    _run(transport, body)


@TRANSPORTS
def test_the_server_instructions_are_the_rollouts_system_prompt_and_the_complaint(transport):
    async def body(connect: Connect) -> None:
        async with connect() as client:
            instructions = client.instructions
        assert instructions is not None
        prompt, complaint = instructions.split(f"\n\n{COMPLAINT_HEADING}\n\n")
        assert [prompt, complaint] == [system_prompt(), _PLAYED.complaint]

    _run(transport, body)


@TRANSPORTS
def test_the_reference_solution_is_graded_a_grounded_success_with_full_marks(transport):
    async def body(connect: Connect) -> None:
        async with connect() as client:
            submitted = await _play_reference(client)
            after = await client.call_tool("get_customer", {"customer_id": CUSTOMER})
        assert not submitted.is_error and _json(submitted)["status"] == "submitted"
        grade = _json(submitted, 1)["grade"]
        assert grade["success"] and grade["grounded_success"]
        assert grade["reward"]["total"] == 1.0 and grade["reward"]["binary"] == 1.0
        assert grade["reward"]["terms"]["evidence"] == 0.2
        assert after.is_error and "the episode is over" in _json(after)["error"]
        async with connect() as client:  # a new session is a new episode
            again = await _play_reference(client)
        assert _json(again, 1)["grade"]["grounded_success"]

    _run(transport, body)


@TRANSPORTS
def test_a_malformed_call_gets_ledger_envs_error_result_and_the_session_goes_on(transport):
    expected = LedgerEnv(_PLAYED).call("get_invoice", '{"invoice_id": 5}')

    async def body(connect: Connect) -> None:
        async with connect() as client:
            malformed = await client.call_tool("get_invoice", {"invoice_id": 5})
            unknown = await client.call_tool("refund_everything", {})
            customer = await client.call_tool("get_customer", {"customer_id": CUSTOMER})
        assert malformed.is_error and malformed.content[0].text == expected
        assert unknown.is_error and "unknown tool" in _json(unknown)["error"]
        assert not customer.is_error and _json(customer)["customer_id"] == CUSTOMER

    _run(transport, body)


@TRANSPORTS
def test_two_concurrent_sessions_never_see_each_others_credit_notes(transport):
    note = {"invoice_id": AFFECTED, "amount": OWED, "reason": "Verified trial charge"}
    invoice = {"invoice_id": note["invoice_id"]}

    async def body(connect: Connect) -> None:
        async with connect() as first, connect() as second:
            drafted = await first.call_tool("draft_credit_note", note)
            seen_by_first = _json(await first.call_tool("get_invoice", invoice))
            seen_by_second = _json(await second.call_tool("get_invoice", invoice))
            second_draft = await second.call_tool("draft_credit_note", note)
        assert not drafted.is_error
        assert seen_by_first["amount_credited"] == OWED and seen_by_first["credit_notes"]
        assert seen_by_second["amount_credited"] == "0.00" and seen_by_second["credit_notes"] == []
        assert not second_draft.is_error  # the full amount is still uncredited in its database

    _run(transport, body)


def test_a_sessionless_http_request_is_refused_rather_than_given_a_shared_database():
    async def body(connect: Connect) -> None:
        async with connect() as client:
            url = client.server
        async with Client(url, mode="2026-07-28") as sessionless:  # type: ignore[arg-type]
            result = await sessionless.call_tool("get_customer", {"customer_id": CUSTOMER})
        assert result.is_error and _json(result)["error"] == NO_SESSION_ERROR

    _run("http", body)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--scenario", "eval-5"], "seed 5 is outside split 'eval'"),
        (["--scenario", "bogus"], "is not <split>-<seed>"),
        (["--scenario", SCENARIO, "--port", "9000"], "--port needs --http"),
    ],
)
def test_a_bad_command_line_is_one_clear_line_and_exit_status_2(args, message):
    done = subprocess.run(
        [sys.executable, "-m", "doors.mcp_server", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=LIMIT_S,
        check=False,
    )
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and message in done.stderr


def _doors_readme_snippet(marker: str) -> str:
    """The one ```python block of doors/README.md that contains `marker`."""
    text = (ROOT / "doors" / "README.md").read_text(encoding="utf-8")
    [block] = [code for code in python_blocks(text) if marker in code]
    return block


def test_the_readmes_mcp_client_example_runs_as_written():
    done = run_snippet(_doors_readme_snippet("doors.mcp_server"), timeout_s=LIMIT_S * 2)

    assert done.returncode == 0, done.stderr[-2000:]
    scenario = generate("eval", 100021)
    assert done.stdout.startswith(scenario.complaint)
    assert "9 tools: get_customer, " in done.stdout
    assert "'success': True, 'grounded_success': False" in done.stdout  # eval-100021: no_error
    assert "'reward': {'variant': 'shaped', 'total': 0.0" in done.stdout
