"""LedgerGym as an openenv-core `Environment`: one instance per WebSocket session, one episode
(one `LedgerEnv`, one private database) per `reset`.

Tools are openenv-core's MCP-style actions: `ListToolsAction` lists the nine tools with
LedgerEnv's schemas, `CallToolAction` runs one through `LedgerEnv.call` (its refusals come back
as its own `{"error": ...}` result text). The call that ends the episode is scored by
`doors.verdict` (the rollout's reward and grader, as they are). Errors of the session itself (no
episode yet, closed after idling) use the library's `ToolError`.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.mcp_types import (
    CallToolAction,
    ListToolsAction,
    ListToolsObservation,
    Tool,
    ToolError,
    ToolErrorType,
)
from openenv.core.env_server.types import Action, EnvironmentMetadata, Observation

from doors.mcp_tools import arguments_text, ledger_tools
from doors.openenv_types import EpisodeStarted, EpisodeState, ToolResult
from doors.scenario_ids import parse_scenario_id
from doors.verdict import EpisodeVerdict, judge_variants, verdict_summary
from env.episode import record_episode
from env.generation.generator import generate
from env.ledger_env import DEFAULT_TOOL_BUDGET, LedgerEnv
from env.scenario import Scenario
from ledgergym import __version__
from rewards.reward import Variant

NO_EPISODE = "no episode in this session: reset first (scenario_id, or split and seed)"
CLOSED = "this session was closed (idle too long, or the server is stopping): connect again"
UNKNOWN_ACTION = "unknown action: send list_tools or call_tool"


@lru_cache(maxsize=256)
def _scenario(split: str, seed: int) -> Scenario:
    """Scenarios are immutable and each episode copies the database, so sessions share them."""
    return generate(split, seed)


def scenario_for(scenario_id: str | None, split: str | None, seed: int | None) -> Scenario:
    """A scenario id, or a split and a seed; anything else is one clear ValueError."""
    if scenario_id is not None:
        if split is not None or seed is not None:
            raise ValueError("reset takes scenario_id, or split and seed, not both")
        return _scenario(*parse_scenario_id(str(scenario_id)))
    if split is None or seed is None:
        raise ValueError("reset needs scenario_id (e.g. eval-100021), or split and seed")
    return _scenario(*parse_scenario_id(f"{split}-{seed}"))


def final_verdict(scenario: Scenario, env: LedgerEnv, variant: Variant) -> dict[str, Any]:
    """The grade (as the MCP door reports it) and the reward in both variants, term by term."""
    grade, rewards = judge_variants(scenario, record_episode(env))
    summary = verdict_summary(EpisodeVerdict(rewards[variant], grade))
    summary["rewards"] = {
        name: {"total": reward.total, "terms": dict(reward.terms)}
        for name, reward in rewards.items()
    }
    summary["scenario_id"], summary["episode_id"] = scenario.scenario_id, env.episode_id
    return summary


class LedgerGymEnvironment(Environment[Action, Observation, EpisodeState]):
    """One session: `reset` opens an episode (closing any before it), `step` plays a tool."""

    SUPPORTS_CONCURRENT_SESSIONS = True  # every episode has its own database copy

    def __init__(self, tool_budget: int = DEFAULT_TOOL_BUDGET, variant: Variant = "shaped"):
        super().__init__()
        self.tool_budget = tool_budget
        self.variant: Variant = variant
        self._scenario: Scenario | None = None
        self._env: LedgerEnv | None = None
        self._closed = False

    def reset(
        self,
        seed: int | None = None,
        episode_id: str | None = None,
        scenario_id: str | None = None,
        split: str | None = None,
        **kwargs: Any,
    ) -> EpisodeStarted:
        if self._closed:
            raise ValueError(CLOSED)
        if kwargs:
            raise ValueError(f"reset does not take {', '.join(sorted(kwargs))}")
        scenario = scenario_for(scenario_id, split, seed)
        self._close_episode()
        self._scenario = scenario
        env = LedgerEnv(scenario, tool_budget=self.tool_budget, episode_id=episode_id)
        self._env = env
        return EpisodeStarted(
            scenario_id=scenario.scenario_id,
            episode_id=env.episode_id,
            system_prompt=env.system_prompt,
            complaint=env.complaint,
            tool_budget=env.tool_budget,
        )

    def step(self, action: Action, timeout_s: float | None = None, **kwargs: Any) -> Observation:
        if isinstance(action, ListToolsAction):
            return ListToolsObservation(tools=ledger_tools(Tool))
        if not isinstance(action, CallToolAction):
            return ToolResult(tool_name="", error=_error(UNKNOWN_ACTION))
        if self._closed:
            return ToolResult(tool_name=action.tool_name, error=_error(CLOSED))
        env, scenario = self._env, self._scenario
        if env is None or scenario is None:
            return ToolResult(tool_name=action.tool_name, error=_error(NO_EPISODE))
        was_done = env.done
        text = env.call(action.tool_name, arguments_text(action.arguments))
        if not env.done or was_done:
            return ToolResult(tool_name=action.tool_name, result=text, done=env.done)
        verdict = final_verdict(scenario, env, self.variant)
        return ToolResult(
            tool_name=action.tool_name,
            result=text,
            done=True,
            reward=verdict["rewards"][self.variant]["total"],
            verdict=verdict,
            metadata=verdict,
        )

    @property
    def state(self) -> EpisodeState:
        env = self._env
        if env is None:
            return EpisodeState()
        return EpisodeState(
            episode_id=env.episode_id,
            step_count=env.tool_calls,
            scenario_id=env.scenario_id,
            tool_calls=env.tool_calls,
            done=env.done,
        )

    def get_metadata(self) -> EnvironmentMetadata:
        return EnvironmentMetadata(
            name="LedgerGym",
            description="BillSleuth: investigate a SaaS billing dispute with nine tools",
            version=__version__,
        )

    def _close_episode(self) -> None:
        if self._env is not None:
            self._env.close()
        self._env = self._scenario = None

    def close(self) -> None:
        """Frees the episode's database; later calls get the CLOSED error."""
        self._close_episode()
        self._closed = True


def _error(message: str) -> ToolError:
    return ToolError(error_type=ToolErrorType.EXECUTION_ERROR, message=message)
