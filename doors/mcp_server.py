"""An MCP server for one BillSleuth scenario: every MCP session is one episode on its own database.

    python -m doors.mcp_server --scenario eval-100021                # stdio
    python -m doors.mcp_server --scenario eval-100021 --http --port 8765   # http://127.0.0.1:8765/mcp

The nine tools come from `doors.mcp_tools` (LedgerEnv's schemas, LedgerEnv's error results).
The server's `instructions` (in the initialize result) are the task: the rollout's system prompt,
then the customer's complaint under `COMPLAINT_HEADING`.
`submit_findings` ends the episode and adds the grade. A session is an episode: over stdio the
process is the session; over HTTP the server refuses the sessionless 2026-07-28 probe, after
which the official client falls back to the session handshake (`Mcp-Session-Id`) by itself.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import sys
from collections.abc import Sequence
from typing import Any

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from doors.mcp_tools import list_tools_handler, run_tool, tool_result
from doors.scenario_ids import scenario_argument
from doors.verdict import judge_episode, verdict_summary
from env.cli import Parser, UsageError, positive_int, run_command
from env.episode import record_episode
from env.ledger_env import DEFAULT_TOOL_BUDGET, LedgerEnv, system_prompt
from env.scenario import Scenario

DEFAULT_PORT = 8765
COMPLAINT_HEADING = "## The customer's message"
STDIO_SESSION = "stdio"  # a stdio server has one client for its whole life
NO_SESSION_ERROR = (
    "this server keeps one episode per MCP session and the request carried none; "
    "connect with the session handshake (protocol 2025-11-25 or earlier)"
)


class EpisodeSessions:
    """One LedgerEnv per MCP session, opened on the session's first tool call."""

    def __init__(self, scenario: Scenario, tool_budget: int) -> None:
        self.scenario = scenario
        self.tool_budget = tool_budget
        self._envs: dict[str, LedgerEnv] = {}

    def env_for(self, session: str) -> LedgerEnv:
        if session not in self._envs:
            self._envs[session] = LedgerEnv(self.scenario, tool_budget=self.tool_budget)
        return self._envs[session]

    def close(self, session: str) -> None:
        env = self._envs.pop(session, None)
        if env is not None:
            env.close()

    def close_all(self) -> None:
        for session in list(self._envs):
            self.close(session)


def task_instructions(scenario: Scenario, tool_budget: int) -> str:
    """What a model behind an MCP client reads first: the rollout's system prompt and user turn."""
    return f"{system_prompt(tool_budget)}\n\n{COMPLAINT_HEADING}\n\n{scenario.complaint}"


def _session_of(ctx: ServerRequestContext[Any, Any]) -> str | None:
    """The request's session: its `Mcp-Session-Id` over HTTP; stdio has only one."""
    request = ctx.request
    if request is None:
        return STDIO_SESSION
    return request.headers.get("mcp-session-id")


def build_server(sessions: EpisodeSessions, *, allow_sessionless: bool) -> Server[Any]:
    """The low-level MCP server with tools/list and tools/call. Unless `allow_sessionless`, it
    refuses the sessionless 2026-07-28 probe (HTTP, where such requests could not be told apart);
    over stdio the process is the session, so both protocol eras serve one episode."""
    list_tools = list_tools_handler()

    async def call_tool(
        ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        session = _session_of(ctx)
        if session is None:
            return tool_result(json.dumps({"error": NO_SESSION_ERROR}))
        env = sessions.env_for(session)
        was_submitted = env.submitted
        result = run_tool(env, params.name, params.arguments)
        if env.submitted and not was_submitted:  # this call ended the episode: add the grade
            verdict = judge_episode(sessions.scenario, record_episode(env))
            grade = json.dumps({"grade": verdict_summary(verdict)})
            result.content.append(types.TextContent(type="text", text=grade))
        return result

    async def refuse_sessionless(
        ctx: ServerRequestContext[Any, Any], params: types.RequestParams
    ) -> types.DiscoverResult:
        raise MCPError(
            types.UNSUPPORTED_PROTOCOL_VERSION,
            "an episode is a session: use the session handshake",
            {"supported": list(HANDSHAKE_PROTOCOL_VERSIONS)},
        )

    server: Server[Any] = Server(
        "ledgergym",
        version="0.1.0",
        instructions=task_instructions(sessions.scenario, sessions.tool_budget),
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )
    if not allow_sessionless:
        server.add_request_handler("server/discover", types.RequestParams, refuse_sessionless)
    return server


async def serve_stdio(server: Server[Any]) -> None:
    from mcp.server.stdio import stdio_server

    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


async def serve_http(server: Server[Any], sessions: EpisodeSessions, port: int) -> None:
    """Streamable HTTP on 127.0.0.1 only; a session's database is freed when the client ends
    the session (HTTP DELETE) or the server stops."""
    import uvicorn

    inner = server.streamable_http_app(host="127.0.0.1")

    async def app(scope: Any, receive: Any, send: Any) -> None:
        await inner(scope, receive, send)
        if scope["type"] == "http" and scope["method"] == "DELETE":
            headers = dict(scope["headers"])
            ended = headers.get(b"mcp-session-id")
            if ended is not None:
                sessions.close(ended.decode("latin-1"))

    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", port))
    listener.listen(2048)  # before the banner: a client that read it can connect at once
    url = f"http://127.0.0.1:{listener.getsockname()[1]}/mcp"
    print(f"serving {sessions.scenario.scenario_id} at {url}", file=sys.stderr, flush=True)
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    await uvicorn.Server(config).serve(sockets=[listener])


def port_number(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"must be between 0 and 65535, got {value}")
    return value


def _parser() -> argparse.ArgumentParser:
    parser = Parser(prog="python -m doors.mcp_server", description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", required=True, help="scenario id, e.g. eval-100021")
    parser.add_argument("--tool-budget", type=positive_int, default=DEFAULT_TOOL_BUDGET)
    # transport
    parser.add_argument("--http", action="store_true", help="streamable HTTP, not stdio")
    parser.add_argument(
        "--port", type=port_number, help="with --http (default 8765; 0 picks a free one)"
    )
    return parser


def _main(argv: Sequence[str] | None) -> int:
    args = _parser().parse_args(argv)
    scenario = scenario_argument(args.scenario)
    if args.port is not None and not args.http:
        raise UsageError("--port needs --http")
    sessions = EpisodeSessions(scenario, args.tool_budget)
    server = build_server(sessions, allow_sessionless=not args.http)
    try:
        if args.http:
            port = DEFAULT_PORT if args.port is None else args.port
            asyncio.run(serve_http(server, sessions, port))
        else:
            asyncio.run(serve_stdio(server))
    except KeyboardInterrupt:
        pass
    finally:
        sessions.close_all()
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    return run_command("python -m doors.mcp_server", _main, argv)


if __name__ == "__main__":
    raise SystemExit(main())
