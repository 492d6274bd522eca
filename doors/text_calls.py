"""Tool calls as plain text, for doors whose trainer hands the environment the model's text.

SkyRL's generator renders the prompt with the chat template alone (no `tools=`) and passes each
reply to the environment as text, so the tools must be described in the system prompt and the
calls read back out of the reply. The format is the one Qwen-family chat templates teach: the
schemas inside `<tools></tools>`, each call a `<tool_call>` block holding
`{"name": ..., "arguments": {...}}`. Qwen3.5's own form (`<function=NAME>` with one
`<parameter=KEY>` block per argument, vLLM's `qwen3_coder` parser) is read too: a parameter whose
schema type is not a string is read as JSON, as that parser does. A reply holding a `<tool_call>`
that cannot be read has no calls, as vLLM's parsers turn such a reply into plain text.
Used by `doors.skyrl_env`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

OPEN, CLOSE = "<tool_call>", "</tool_call>"
_BLOCK = re.compile(r"<tool_call>(.*?)</tool_call>", re.DOTALL)
_FUNCTION = re.compile(r"^\s*<function=([^>\s]+)>(.*)</function>\s*$", re.DOTALL)
_PARAMETER = re.compile(r"<parameter=([^>\s]+)>(.*?)</parameter>", re.DOTALL)


@dataclass(frozen=True)
class TextCall:
    name: str
    arguments: str  # JSON object text, as `LedgerEnv.call` takes it


def tools_prompt(tools: list[dict[str, Any]]) -> str:
    """The tool section appended to the system prompt: the schemas and how to call them."""
    schemas = "\n".join(json.dumps(tool, ensure_ascii=False) for tool in tools)
    return (
        "# Tools\n\n"
        "You can call the functions whose signatures are listed inside <tools></tools>:\n"
        f"<tools>\n{schemas}\n</tools>\n\n"
        "To call one, write a JSON object with its name and arguments inside "
        f"{OPEN}{CLOSE} tags:\n"
        f'{OPEN}\n{{"name": <function-name>, "arguments": <args-json-object>}}\n{CLOSE}'
    )


def read_calls(text: str, tools: list[dict[str, Any]]) -> list[TextCall]:
    """The calls in a reply, in order; [] when there are none or one cannot be read."""
    if OPEN not in text:
        return []
    blocks = _BLOCK.findall(text)
    if not blocks or text.count(OPEN) != len(blocks):  # an unclosed block: cut, unreadable
        return []
    calls = []
    for block in blocks:
        call = _json_call(block) or _xml_call(block, _types(tools))
        if call is None:
            return []
        calls.append(call)
    return calls


def call_text(name: str, arguments: str) -> str:
    """A call as a model writes it in the JSON form (what `tools_prompt` asks for)."""
    body = json.dumps({"name": name, "arguments": json.loads(arguments)}, ensure_ascii=False)
    return f"{OPEN}\n{body}\n{CLOSE}"


def _json_call(block: str) -> TextCall | None:
    try:
        data = json.loads(block)
    except ValueError:
        return None
    if not isinstance(data, dict) or not isinstance(data.get("name"), str):
        return None
    arguments = data.get("arguments", {})
    if isinstance(arguments, str):  # some templates write the arguments as a JSON string
        return TextCall(data["name"], arguments)
    return TextCall(data["name"], json.dumps(arguments, ensure_ascii=False))


def _xml_call(block: str, types: dict[str, dict[str, str]]) -> TextCall | None:
    match = _FUNCTION.match(block)
    if match is None:
        return None
    name, body = match.group(1), match.group(2)
    arguments: dict[str, Any] = {}
    for key, raw in _PARAMETER.findall(body):
        value = raw.removeprefix("\n").removesuffix("\n")
        arguments[key] = _typed(value, types.get(name, {}).get(key, "string"))
    return TextCall(name, json.dumps(arguments, ensure_ascii=False))


def _typed(value: str, kind: str) -> Any:
    if kind == "string":
        return value
    try:
        return json.loads(value)
    except ValueError:
        return value


def _types(tools: list[dict[str, Any]]) -> dict[str, dict[str, str]]:
    """tool name -> argument -> its JSON schema type ("string" where none is given)."""
    found: dict[str, dict[str, str]] = {}
    for tool in tools:
        function = tool.get("function", {})
        properties = function.get("parameters", {}).get("properties", {})
        found[function.get("name", "")] = {
            key: str(schema.get("type", "string")) for key, schema in properties.items()
        }
    return found
