"""The nine LedgerGym tools as MCP tools over one `LedgerEnv`: what both doors list and call.

Names, descriptions and input schemas are `LedgerEnv.tool_specs()` as they stand, never derived
again from a signature; a call hands its arguments to `LedgerEnv.call` unchecked, so every refusal
is LedgerEnv's own `{"error": ...}` text returned as a result (`isError` set), never raised. This
is why the doors register low-level MCP handlers: the SDK's decorated tools would validate the
arguments first and answer in their own words.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

from mcp_types import CallToolResult, ListToolsResult, TextContent, Tool

from env.ledger_env import LedgerEnv


def ledger_tools(tool_type: Any = Tool) -> list[Any]:
    """The nine tools in MCP form, in the contract's order (`tool_type`: OpenEnv's own copy of
    MCP's `Tool` class takes the same fields)."""
    return [
        tool_type(
            name=spec["function"]["name"],
            description=spec["function"]["description"],
            input_schema=spec["function"]["parameters"],
        )
        for spec in LedgerEnv.tool_specs()
    ]


def list_tools_handler() -> Callable[[Any, Any], Awaitable[ListToolsResult]]:
    """The low-level tools/list handler both doors register: the nine tools, every time."""
    listed = ListToolsResult(tools=ledger_tools())

    async def list_tools(ctx: Any, params: Any) -> ListToolsResult:
        return listed

    return list_tools


def arguments_text(arguments: dict[str, Any] | None) -> str:
    """The JSON text `LedgerEnv.call` expects, written as the rollout's scripted policies write
    it (`json.dumps` defaults), so a replayed solution logs the same arguments either way.

    Trap: the MCP SDK has already parsed the request, so a JSON number arrives as a binary float;
    one with more than 17 significant digits reaches LedgerEnv rounded. Decimal strings, which
    the tool descriptions ask for, arrive exactly.
    """
    return json.dumps({} if arguments is None else arguments)


def run_tool(env: LedgerEnv, name: str, arguments: dict[str, Any] | None) -> CallToolResult:
    """One call through `LedgerEnv.call`; its result text is passed on byte for byte."""
    text = env.call(name, arguments_text(arguments))
    return tool_result(text)


def tool_result(text: str, *extra: str) -> CallToolResult:
    """A LedgerEnv result (a JSON object) as an MCP result; `extra` blocks follow it."""
    is_error = "error" in json.loads(text)
    blocks = [TextContent(type="text", text=part) for part in (text, *extra)]
    return CallToolResult(content=blocks, is_error=is_error)
