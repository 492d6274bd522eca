"""Validation during training: the current checkpoint on `[validation]` scenarios, graded.

The episodes go through `eval.run.evaluate` into an eval run directory beside the checkpoints
(`validation/NNNN/`), so `val/pass1` in history.jsonl is what `eval/run.py` reports on the same
episodes: pass^1 in the τ-bench sense from its summary.json, an episode that raised counting
as a failure (`val/failed_rollouts`); one left incomplete by transient failures in every round
is left out, as eval/run.py leaves it out (`val/incomplete`, logged only when there are any).
The rollouts are also logged to ART as groups with split="val" at the checkpoint's step (ART's
`val/reward` and friends), each trajectory carrying the grade's verdicts among its metrics.
"""

from __future__ import annotations

import shutil
from collections import defaultdict
from collections.abc import Awaitable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from agent.messages import malformed_turns
from agent.policy import Policy, PolicyError, PolicyReply, ServerUnreachable
from agent.rollout import RolloutConfig, RolloutResult
from env.generation.generator import generate
from env.generation.splits import split_seeds
from env.scenario import Scenario
from eval.episode_log import EPISODES, read_episodes
from eval.grader import EpisodeGrade
from eval.jobs import Job
from eval.run import evaluate
from training.art import run_state
from training.art.trainable_policy import TrainableModelPolicy, eval_run_config
from training.art.trajectories import to_art_trajectory
from training.runs import RunConfig

if TYPE_CHECKING:
    import art
    from art.trajectories import MetadataValue

SUCCESS_METRIC = "eval_success"
VALIDATION_DIR = "validation"  # eval run directories, one per validated step, in the model dir


@dataclass(frozen=True)
class ValidationResult:
    step: int
    scenarios: int
    pass1: float
    pass_k: float | None  # pass^k for [validation] k > 1
    failed_rollouts: int  # episodes that raised: failures in pass^1
    incomplete: int = 0  # transient failures in every round: not in pass^1
    format_error_rate: float = 0.0  # assistant turns that were not well-formed tool calls

    def metrics(self, k: int) -> dict[str, float]:
        metrics = {
            "pass1": self.pass1,
            "failed_rollouts": float(self.failed_rollouts),
            "format_error_rate": self.format_error_rate,
        }
        if self.pass_k is not None:
            metrics[f"pass^{k}"] = self.pass_k
        if self.incomplete:
            metrics["incomplete"] = float(self.incomplete)
        return metrics


def validation_scenarios(run: RunConfig) -> list[Scenario]:
    section = run.validation
    return [generate(section.split, seed) for seed in split_seeds(section.split, section.limit)]


def validation_dir(run: RunConfig, step: int) -> Path:
    return run_state.model_dir(run) / VALIDATION_DIR / f"{step:04d}"


def scenario_group(
    trajectories: Iterable[Awaitable[art.Trajectory]], scenario: Scenario
) -> Awaitable[art.TrajectoryGroup]:
    """A group for `gather_trajectory_groups`: built from coroutines, ART returns an awaitable."""
    import art

    group = art.TrajectoryGroup(trajectories, metadata=_group_metadata(scenario))
    return cast("Awaitable[art.TrajectoryGroup]", group)


def _group_metadata(scenario: Scenario) -> dict[str, MetadataValue]:
    return {"scenario_id": scenario.scenario_id, "difficulty": scenario.difficulty}


class EpisodeRefused(RuntimeError):
    """The server refused one validation request (a `PolicyError`): that episode fails."""


class RefusalsFailEpisodes:
    """The policy as validation drives it. A refused request fails its episode only (an error
    line, a failure in pass^1), as under ART's gather, instead of stopping `evaluate` and with it
    the training run; a server that stays unreachable still stops it (a rerun resumes)."""

    def __init__(self, policy: Policy) -> None:
        self.policy = policy
        self.name = policy.name

    async def respond(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], scenario: Scenario
    ) -> PolicyReply:
        try:
            return await self.policy.respond(messages, tools, scenario)
        except ServerUnreachable:
            raise
        except PolicyError as exc:
            raise EpisodeRefused(str(exc)) from exc

    async def aclose(self) -> None:
        await self.policy.aclose()


class _GradedTrajectories:
    """The `evaluate` hook: each rollout as ART's trajectory, the grade's verdicts as metrics."""

    def __init__(self) -> None:
        self.by_scenario: dict[str, list[tuple[int, art.Trajectory]]] = defaultdict(list)
        self.turns = [0, 0]  # malformed assistant turns, assistant turns

    @property
    def format_error_rate(self) -> float:
        return self.turns[0] / self.turns[1] if self.turns[1] else 0.0

    def __call__(self, job: Job, result: RolloutResult, grade: EpisodeGrade | None) -> None:
        from art.gather import GatherContext, record_metrics

        bad, turns = malformed_turns(result.messages)
        self.turns[0] += bad
        self.turns[1] += turns
        trajectory = to_art_trajectory(result.trajectory)
        # the metrics ART's gather adds to each trajectory (completion_tokens, a per-turn mean)
        record_metrics(GatherContext(), trajectory)
        trajectory.metrics.update(  # an episode ended by a server error has no grade: a failure
            {
                SUCCESS_METRIC: float(grade is not None and grade.success),
                "eval_false_reversal": float(grade is not None and grade.false_reversal),
                "eval_hallucinated_numbers": float(
                    grade is not None and grade.hallucinated_numbers
                ),
            }
        )
        self.by_scenario[job.scenario.scenario_id].append((job.sample, trajectory))

    def groups(
        self, scenarios: list[Scenario], failed: dict[str, list[str]]
    ) -> list[art.TrajectoryGroup]:
        """One group per scenario in sample order (as ART's gather builds them); episodes that
        raised are the group's exceptions."""
        import art

        return [
            art.TrajectoryGroup(
                [t for _, t in sorted(self.by_scenario[s.scenario_id], key=lambda p: p[0])],
                exceptions=[RuntimeError(reason) for reason in failed.get(s.scenario_id, [])],
                metadata=_group_metadata(s),
            )
            for s in scenarios
        ]


async def validate(
    model: art.TrainableModel,
    policy: TrainableModelPolicy,
    scenarios: list[Scenario],
    run: RunConfig,
    config: RolloutConfig,
    step: int,
) -> ValidationResult:
    section, run_dir = run.validation, validation_dir(run, step)
    k = section.k
    shutil.rmtree(run_dir, ignore_errors=True)  # an interrupted validation starts over
    hook = _GradedTrajectories()
    result = await evaluate(
        RefusalsFailEpisodes(policy),
        scenarios,
        k=k,
        run_dir=run_dir,
        config=eval_run_config(run, policy, split=section.split, k=k, limit=section.limit),
        rollout=config,
        concurrency=max(1, len(scenarios) * k),  # every episode at once, as ART's gather did
        on_episode=hook,
    )
    failed = _raised_episodes(result.run_dir)
    groups = hook.groups(scenarios, failed)
    summary = result.summary or {}
    overall = summary.get("overall", {})
    validation = ValidationResult(
        step=step,
        scenarios=int(summary.get("scenarios", 0)),
        pass1=(overall.get("pass1") or {}).get("estimate", 0.0),
        pass_k=(overall.get("passk") or {}).get("estimate") if k > 1 else None,
        failed_rollouts=sum(len(reasons) for reasons in failed.values()),
        incomplete=len(result.incomplete),
        format_error_rate=hook.format_error_rate,
    )
    await model.log(groups, split="val", step=step, metrics=validation.metrics(k))
    return validation


def _raised_episodes(run_dir: Path) -> dict[str, list[str]]:
    """Scenario -> the errors of its episodes that raised (error lines with no rollout): ART's
    gather recorded those as the group's exceptions."""
    failed: dict[str, list[str]] = defaultdict(list)
    for line in read_episodes(run_dir / EPISODES):
        if line.end_reason == "error":
            failed[line.scenario_id].append(line.error or "error")
    return failed
