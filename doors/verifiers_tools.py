"""The verifiers tool server of one rollout: LedgerEnv's nine tools over MCP, in its own process.

verifiers launches it once per rollout (`python -m doors.verifiers_tools`; the task arrives over
the rollout's channel), so every rollout has its own LedgerEnv and its own database copy. After
each call it writes the episode so far into the rollout's shared state (`EpisodeState`); the host
rebuilds the `EpisodeRecord` from it and scores with LedgerGym's reward and grader.
"""

from __future__ import annotations

import base64
from typing import TYPE_CHECKING, Any, ClassVar

import mcp_types as types
from pydantic import BaseModel, Field
from verifiers.v1 import State, Toolset, ToolsetConfig

from doors.mcp_tools import list_tools_handler, run_tool
from env.episode import EpisodeRecord
from env.findings import Findings
from env.generation.generator import generate
from env.ledger_env import LedgerEnv, ToolRecord
from env.scenario import Scenario

if TYPE_CHECKING:
    from mcp.server.context import ServerRequestContext
    from mcp.server.mcpserver import MCPServer


class LoggedCall(BaseModel):
    name: str
    arguments: str
    result: str
    is_error: bool


class EpisodeState(State):
    """The episode as the tool server last saw it; rewritten whole after every call."""

    episode_id: str = ""
    tool_log: list[LoggedCall] = Field(default_factory=list)
    findings: dict[str, Any] | None = None  # the submitted findings, as JSON
    database: str = ""  # base64 of the SQLite image after the last call; "" before any call
    done: bool = False  # submitted, or the tool budget is spent

    def record(self, scenario: Scenario) -> EpisodeRecord:
        """The `EpisodeRecord` `record_episode` would have taken of the tool server's LedgerEnv.

        Every end but a submission counts as truncated, as in `run_episode`."""
        findings = None if self.findings is None else Findings.model_validate(self.findings)
        image = base64.b64decode(self.database) if self.database else scenario.database
        return EpisodeRecord(
            scenario_id=scenario.scenario_id,
            episode_id=self.episode_id,
            final_database=image,
            findings=findings,
            tool_log=tuple(ToolRecord(**call.model_dump()) for call in self.tool_log),
            truncated=findings is None,
        )


def remember(env: LedgerEnv, state: EpisodeState) -> None:
    state.episode_id = env.episode_id
    state.tool_log = [LoggedCall(**vars(record)) for record in env.tool_log]
    state.findings = None if env.findings is None else env.findings.model_dump(mode="json")
    state.database = base64.b64encode(env.final_database()).decode("ascii")
    state.done = env.done


class LedgerToolset(Toolset[ToolsetConfig, EpisodeState]):
    TOOL_PREFIX: ClassVar[str | None] = None  # the model sees the contract's bare tool names

    def __init__(self, config: ToolsetConfig) -> None:
        super().__init__(config)
        self.env: LedgerEnv | None = None

    async def setup_task(self, task: Any) -> None:
        """`task` is the rollout's `BillSleuthTaskData` (split, seed, tool budget)."""
        scenario = generate(task.split, task.seed)
        self.env = LedgerEnv(scenario, tool_budget=task.tool_budget)

    def register(self, mcp: MCPServer) -> None:
        # verifiers hands over a high-level MCPServer, whose decorated tools would check the
        # arguments against a Python signature and answer in the SDK's words; the low-level
        # handlers go in underneath so LedgerEnv sees every call (doors.mcp_tools).
        server = mcp._lowlevel_server
        list_tools = list_tools_handler()

        async def call_tool(
            ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
        ) -> types.CallToolResult:
            if self.env is None:
                raise RuntimeError("the rollout's task never arrived (setup_task did not run)")
            result = run_tool(self.env, params.name, params.arguments)
            remember(self.env, self.state)
            return result

        server.add_request_handler("tools/list", types.PaginatedRequestParams, list_tools)
        server.add_request_handler(
            "tools/call", types.CallToolRequestParams, self._with_state(call_tool)
        )


if __name__ == "__main__":
    LedgerToolset.run()
