"""Validation during training: the current checkpoint on `[validation]` scenarios, graded.

Each episode goes through the shared rollout and then the eval grader (not the training
reward), so `val/pass1` in history.jsonl means what `eval/run.py` reports: pass^1 in the
τ-bench sense (`eval.stats.mean_pass_hat_k`), a failed rollout counting as a failure. The
groups are logged with split="val" at the checkpoint's step, beside ART's `val/reward`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

from agent.policy import Policy
from agent.rollout import RolloutConfig, run_episode
from env.generator import generate
from env.scenario import Scenario, reveal_truth
from env.splits import split_seeds
from eval.grader import grade_episode
from eval.stats import mean_pass_hat_k
from training.runs import RunConfig

if TYPE_CHECKING:
    from art.trajectories import MetadataValue

    from agent.art_import import art

SUCCESS_METRIC = "eval_success"


@dataclass(frozen=True)
class ValidationResult:
    step: int
    scenarios: int
    pass1: float
    pass_k: float | None  # pass^k for [validation] k > 1
    failed_rollouts: int

    def metrics(self, k: int) -> dict[str, float]:
        metrics = {"pass1": self.pass1, "failed_rollouts": float(self.failed_rollouts)}
        if self.pass_k is not None:
            metrics[f"pass^{k}"] = self.pass_k
        return metrics


def validation_scenarios(run: RunConfig) -> list[Scenario]:
    section = run.validation
    return [generate(section.split, seed) for seed in split_seeds(section.split, section.limit)]


def scenario_group(
    trajectories: Iterable[Awaitable[art.Trajectory]], scenario: Scenario
) -> Awaitable[art.TrajectoryGroup]:
    """A group for `gather_trajectory_groups`: built from coroutines, ART returns an awaitable."""
    from agent.art_import import art

    metadata: dict[str, MetadataValue] = {
        "scenario_id": scenario.scenario_id,
        "difficulty": scenario.difficulty,
    }
    group = art.TrajectoryGroup(trajectories, metadata=metadata)
    return cast("Awaitable[art.TrajectoryGroup]", group)


async def graded_rollout(
    policy: Policy, scenario: Scenario, config: RolloutConfig
) -> art.Trajectory:
    """The rollout's trajectory with the eval grade's verdicts among its metrics."""
    result = await run_episode(policy, scenario, config)
    grade = grade_episode(reveal_truth(scenario), result.record, scenario.database)
    result.trajectory.metrics.update(
        {
            SUCCESS_METRIC: float(grade.success),
            "eval_false_reversal": float(grade.false_reversal),
            "eval_hallucinated_numbers": float(grade.hallucinated_numbers),
        }
    )
    return result.trajectory


async def validate(
    model: art.TrainableModel,
    policy: Policy,
    scenarios: list[Scenario],
    run: RunConfig,
    config: RolloutConfig,
    step: int,
) -> ValidationResult:
    from agent.art_import import art

    k = run.validation.k
    groups = await art.gather_trajectory_groups(
        [
            scenario_group((graded_rollout(policy, scenario, config) for _ in range(k)), scenario)
            for scenario in scenarios
        ],
        pbar_desc=f"val {step}",
        max_metrics=1,  # the progress bar shows the mean reward, not every metric
        max_exceptions=len(scenarios) * k,  # a failed episode is a failure, never an abort
    )
    outcomes = [
        [t.metrics.get(SUCCESS_METRIC, 0.0) > 0.5 for t in group.trajectories]
        + [False] * len(group.exceptions)
        for group in groups
    ]
    outcomes = [trials for trials in outcomes if trials]
    result = ValidationResult(
        step=step,
        scenarios=len(outcomes),
        pass1=mean_pass_hat_k(outcomes, 1) if outcomes else 0.0,
        pass_k=mean_pass_hat_k(outcomes, k) if k > 1 and outcomes else None,
        failed_rollouts=sum(len(group.exceptions) for group in groups),
    )
    await model.log(groups, split="val", step=step, metrics=result.metrics(k))
    return result
