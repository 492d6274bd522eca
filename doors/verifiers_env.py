"""BillSleuth as a verifiers (0.4) environment: taskset id `doors`, one scenario per task.

    vf-eval doors -m MODEL --client.base-url URL --no-push [--env.taskset.split eval]
        [--env.taskset.tool-budget 30] [--env.taskset.task.reward binary]

Each rollout gets its own tool server (`doors.verifiers_tools`: the nine tools with LedgerEnv's
schemas, one database copy). The reward is LedgerGym's (`rewards.reward`, shaped or binary); the
grader's verdict and the reward terms are metrics, recorded and never summed into the reward.
The agent is verifiers' plain chat program (`null` harness: no shell, only the nine tools), run
as a local subprocess.
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import count
from typing import Literal

from pydantic import Field
from verifiers.v1 import (
    AgentConfig,
    Agents,
    Env,
    Task,
    TaskConfig,
    TaskData,
    Taskset,
    TasksetConfig,
    ToolsetConfig,
    Trace,
    metric,
    reward,
    stop,
)
from verifiers.v1 import load_environment as load_vf_environment
from verifiers.v1.envs.single_agent import SingleAgentEnvConfig
from verifiers.v1.harnesses.null import NullHarnessConfig
from verifiers.v1.runtimes import SubprocessConfig

from doors.verdict import EpisodeVerdict, judge_episode, verdict_metrics
from doors.verifiers_tools import EpisodeState, LedgerToolset
from env.generation.generator import generate
from env.generation.splits import spec, split_seeds
from env.ledger_env import DEFAULT_TOOL_BUDGET, system_prompt
from rewards.reward import Variant

Split = Literal["train", "val", "eval", "heldout", "eval-twins"]  # env.generation.splits.SPLITS
TASKSET_ID = "doors"  # vf-eval imports the taskset's package by this name (doors/__init__.py)
MAX_TURNS = 40  # agent.rollout.RolloutConfig.max_turns


class BillSleuthTaskData(TaskData):
    split: str
    seed: int
    tool_budget: int = DEFAULT_TOOL_BUDGET


class BillSleuthTaskConfig(TaskConfig):
    reward: Variant = "shaped"  # --env.taskset.task.reward


class BillSleuthTask(Task[BillSleuthTaskData, EpisodeState, BillSleuthTaskConfig]):
    @property
    def key(self) -> str:
        return f"{self.data.split}-{self.data.seed}"

    @classmethod
    def toolsets(cls, config: BillSleuthTaskConfig) -> list[LedgerToolset]:  # type: ignore[override]
        return [LedgerToolset(ToolsetConfig())]

    def verdict(self, trace: Trace) -> EpisodeVerdict:
        scenario = generate(self.data.split, self.data.seed)
        record = trace.state.record(scenario)
        return judge_episode(scenario, record, self.config.reward)

    @stop
    async def episode_over(self, trace: Trace) -> bool:
        """Findings are in or the tool budget is spent: no further model turn."""
        return bool(trace.state.done)

    @reward
    async def ledger_reward(self, trace: Trace) -> float:
        return self.verdict(trace).reward.total

    @metric
    async def ledger_metrics(self, trace: Trace) -> dict[str, float]:
        return verdict_metrics(self.verdict(trace))


class BillSleuthTasksetConfig(TasksetConfig):
    id: str = TASKSET_ID
    split: Split = "eval"  # train is open-ended: bound it with -n
    tool_budget: int = Field(DEFAULT_TOOL_BUDGET, ge=1)
    task: BillSleuthTaskConfig = BillSleuthTaskConfig()


class BillSleuthTaskset(Taskset[BillSleuthTask, BillSleuthTasksetConfig]):
    def __init__(self, config: BillSleuthTasksetConfig) -> None:
        super().__init__(config)
        self.INFINITE = spec(config.split).size is None

    def _seeds(self) -> Iterator[int]:
        if self.INFINITE:
            return count(spec(self.config.split).first_seed)
        return iter(split_seeds(self.config.split))

    def load(self) -> Iterator[BillSleuthTask]:
        split, budget = self.config.split, self.config.tool_budget
        for seed in self._seeds():
            scenario = generate(split, seed)
            data = BillSleuthTaskData(
                id=scenario.scenario_id,
                prompt=scenario.complaint,
                system_prompt=system_prompt(budget),
                split=split,
                seed=seed,
                tool_budget=budget,
            )
            yield BillSleuthTask(data, self.config.task)


def _agent() -> AgentConfig:
    """The seat's defaults: tools only (no shell), on this machine, the rollout's turn cap."""
    return AgentConfig(
        harness=NullHarnessConfig(id="null"), runtime=SubprocessConfig(), max_turns=MAX_TURNS
    )


class BillSleuthEnvConfig(SingleAgentEnvConfig):
    taskset: BillSleuthTasksetConfig = BillSleuthTasksetConfig()
    agent: AgentConfig = _agent()


class BillSleuthEnv(Env[BillSleuthEnvConfig]):
    async def run(self, task: Task, agents: Agents) -> None:
        await agents.agent.run(task)


def load_environment(
    split: Split = "eval",
    reward: Variant = "shaped",
    tool_budget: int = DEFAULT_TOOL_BUDGET,
) -> Env:
    """The environment `vf-eval doors` runs, built in Python with the three knobs."""
    taskset = BillSleuthTasksetConfig(
        split=split, tool_budget=tool_budget, task=BillSleuthTaskConfig(reward=reward)
    )
    return load_vf_environment(BillSleuthEnvConfig(taskset=taskset))


__all__ = [
    "BillSleuthEnv",
    "BillSleuthEnvConfig",
    "BillSleuthTask",
    "BillSleuthTaskData",
    "BillSleuthTaskset",
    "BillSleuthTasksetConfig",
    "load_environment",
]
