"""The OpenEnv door's client: openenv-core's `MCPToolClient` reading LedgerGym's observations.

    async with LedgerGymClient("http://127.0.0.1:8000") as client:
        started = (await client.reset(scenario_id="eval-100021")).observation
        result = await client.step(CallToolAction(tool_name="get_customer", arguments={...}))

`reset` returns an `EpisodeStarted`; every tool call a `ToolResult` whose `result` is LedgerEnv's
JSON text; the call that ends the episode carries `done`, the reward, and the verdict in
`metadata` (the wire format drops metadata, so the server also sends it as `verdict`).
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

from openenv.core.client_types import StepResult
from openenv.core.env_server.mcp_types import CallToolAction, ToolError
from openenv.core.env_server.types import Observation
from openenv.core.mcp_client import MCPToolClient

from doors.openenv_types import EpisodeStarted, EpisodeState, ToolResult
from env.scenario import ToolCall


class LedgerGymClient(MCPToolClient):
    """One WebSocket session on a LedgerGym OpenEnv server (`python -m doors.openenv_server`)."""

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[Observation]:
        data = payload.get("observation", {})
        done, reward = payload.get("done", False), payload.get("reward")
        observation: Observation
        if "complaint" in data:
            observation = EpisodeStarted(**data, done=done, reward=reward)
        elif "tool_name" in data:
            error = data.get("error")
            verdict = data.get("verdict")
            observation = ToolResult(
                tool_name=data["tool_name"],
                result=data.get("result"),
                error=ToolError(**error) if error else None,
                verdict=verdict,
                metadata=verdict or {},
                done=done,
                reward=reward,
            )
        else:
            return super()._parse_result(payload)
        return StepResult(observation=observation, reward=reward, done=done)

    def _parse_state(self, payload: dict[str, Any]) -> EpisodeState:
        return EpisodeState(**payload)

    async def play(self, program: Generator[ToolCall, str, None]) -> StepResult[Observation] | None:
        """Plays a program (a generator of tool calls that is sent each result, as
        `agent.program_policy` programs are) until it stops or the episode is done; the last
        step's result (None when the program made no call)."""
        outcome: StepResult[Observation] | None = None
        step = next(program, None)
        while step is not None:
            action = CallToolAction(tool_name=step.name, arguments=step.arguments)
            outcome = await self.step(action)
            observation = outcome.observation
            if outcome.done or not isinstance(observation, ToolResult):
                break
            try:
                step = program.send(str(observation.result))
            except StopIteration:
                break
        return outcome
