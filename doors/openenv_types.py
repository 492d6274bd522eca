"""What the OpenEnv door's server sends and its client reads back: openenv-core's own models
with the fields a LedgerGym episode adds.

openenv-core's wire format (`serialize_observation`) drops an observation's `metadata`, so the
final verdict also travels as the `verdict` field; `doors.openenv_client` puts it back into
`metadata` on the client side.
"""

from __future__ import annotations

from typing import Any

from openenv.core.env_server.mcp_types import CallToolObservation
from openenv.core.env_server.types import Observation, State
from pydantic import Field


class EpisodeStarted(Observation):
    """What `reset` returns: the episode's scenario and what the agent is shown first."""

    scenario_id: str = Field(description="the scenario played, <split>-<seed>")
    episode_id: str = Field(description="this episode's id (its credit notes carry it)")
    system_prompt: str = Field(description="the rollout's system prompt for this tool budget")
    complaint: str = Field(description="the customer's complaint: the first user message")
    tool_budget: int = Field(description="tool calls allowed before the episode is cut off")


class ToolResult(CallToolObservation):
    """One tool call's result: LedgerEnv's JSON text as it stands (`result`); on the call that
    ends the episode `done`, the reward of the session's variant and the `verdict`."""

    verdict: dict[str, Any] | None = Field(
        default=None,
        description="on the final observation: the grade and the reward in both variants",
    )


class EpisodeState(State):
    """`state`: where the session's episode stands (no ground truth)."""

    scenario_id: str | None = None
    tool_calls: int = 0
    done: bool = False
