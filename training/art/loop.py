"""The GRPO loop on ART: register, resume, cold start, probe, then gather -> select -> train -> log.

`train(run, backend, data)` is the whole loop with the backend passed in: train.py gives it
LocalBackend (or a hosted one), the tests give it `FakeBackendForTests` and a scripted server.
Step N always takes `data.batch(N - 1)`, so a killed run resumes with the scenarios it would
have taken. Before GRPO: the cold start (SFT on a teacher's successes, or the shared SFT
checkpoint of a run with the same cold start) and the base-rate probe of the checkpoint GRPO
starts from. Per step: `[grpo] oversample` x groups_per_step groups are gathered, failed
rollouts logged and dropped, and the first groups_per_step groups whose outcome has spread are
trained (training.art.informative); the ORIGINAL groups are logged, repaired copies trained.
After each validation only the latest and the best (val pass^1) checkpoints are kept; before
registering, every file a kill can break is repaired (`training.art.art_files`). It stops at
max_steps, or when the next step would pass the wall-clock limit.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from agent.rollout import RolloutConfig
from env.scenario import Scenario
from training.art import run_state
from training.art.art_files import repair_art_files
from training.art.backends import build_model, server_config, train_kwargs
from training.art.cold_start import check_teacher, ensure_cold_start
from training.art.fixes import prepare_groups_for_training
from training.art.informative import select_informative
from training.art.probe_phase import ensure_probe
from training.art.shared_cold_start import adopt
from training.art.trainable_policy import TrainableModelPolicy
from training.art.trajectories import rollout
from training.art.validation import (
    ValidationResult,
    scenario_group,
    validate,
    validation_scenarios,
)
from training.data_order import DataPlan, step_units
from training.runs import RunConfig
from training.tool_sequences import art_metrics

if TYPE_CHECKING:
    import art

Say = Callable[[str], None]
StopReason = Literal["max_steps", "wall_clock"]
# More than this share of a step's rollouts failing is not noise but a broken server or bug
MAX_FAILED_ROLLOUT_SHARE = 0.5


@dataclass(frozen=True)
class StepReport:
    step: int  # the checkpoint this step produced
    grpo_step: int  # 1-based count of GRPO steps
    scenario_ids: list[str]
    reward_mean: float
    groups: int  # gathered
    zero_variance_groups: int  # gathered groups whose outcomes tie (not trained)
    trained_groups: int
    failed_rollouts: int
    seconds: float
    surplus_groups: int = 0  # informative groups past groups_per_step (not trained)
    short_groups: int = 0  # groups_per_step minus the informative units found


@dataclass
class TrainingSummary:
    first_step: int  # the checkpoint training resumed from
    last_step: int = 0
    stopped_by: StopReason = "max_steps"
    steps: list[StepReport] = field(default_factory=list)
    validations: list[ValidationResult] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def rollout_config(run: RunConfig) -> RolloutConfig:
    section = run.rollout
    return RolloutConfig(
        tool_budget=section.tool_budget, max_turns=section.max_turns, reward=run.reward
    )


async def train(
    run: RunConfig,
    backend: art.Backend,
    data: DataPlan,
    *,
    max_steps: int | None = None,
    force: bool = False,
    say: Say = print,
    chat_template: str | None = None,
) -> TrainingSummary:
    """`max_steps` caps this invocation below the run's own (a smoke run); both count GRPO steps.
    `chat_template`: the base tokenizer's, which decides the chat-template settings."""
    started = time.monotonic()
    directory = run_state.model_dir(run)
    # refusals first: a changed config or a teacher without its API key must not cost a start-up
    # a kill can cut a checkpoint, history.jsonl (ART prunes through it), state.json (ART's
    # next model.log reads it) or a trajectory file; the other backends keep checkpoints elsewhere
    for warning in repair_art_files(
        directory, run.lora.target_modules, checkpoints=run.backend.kind == "local"
    ):
        say(warning)
    note = run_state.record_run(directory, run, data.fingerprint(), force=force)
    adopted = adopt(run, directory)  # a cold start another run trained with the same key
    if adopted:
        say(adopted)
    check_teacher(run, directory)
    model = build_model(run, chat_template)
    await model.register(backend, _openai_client_config=server_config(run))
    summary = TrainingSummary(first_step=await model.get_step(), notes=[note] if note else [])
    offset = await ensure_cold_start(run, model, directory, say)
    policy = TrainableModelPolicy(model, run.rollout)
    config = rollout_config(run)
    val_scenarios = validation_scenarios(run)
    last = min(run.grpo.max_steps, max_steps or run.grpo.max_steps)
    done = await model.get_step() - offset
    if done == 0:  # what GRPO will see from this checkpoint, before spending a step on it
        await ensure_probe(run, policy, data, directory, config, offset, say)
    say(f"{run.name}: checkpoint {done + offset}, GRPO step {done} of {last}")
    durations: list[float] = []
    while done < last:
        if _validation_due(run, done, directory, offset):
            summary.validations.append(
                await _validate(model, policy, val_scenarios, run, config, done + offset, say)
            )
        report = await train_step(run, model, backend, policy, data, done, config, say)
        summary.steps.append(report)
        durations.append(report.seconds)
        done += 1
        if done < last and _out_of_time(run, started, durations):
            summary.stopped_by = "wall_clock"
            say(f"stopping after step {report.step}: the next step would pass the wall-clock limit")
            break
    else:  # reached the last step (not after a wall-clock stop: that budget is spent)
        if _validation_due(run, done, directory, offset, final=True):
            summary.validations.append(
                await _validate(model, policy, val_scenarios, run, config, done + offset, say)
            )
    summary.last_step = await model.get_step()
    return summary


async def train_step(
    run: RunConfig,
    model: art.TrainableModel,
    backend: art.Backend,
    policy: TrainableModelPolicy,
    data: DataPlan,
    index: int,
    config: RolloutConfig,
    say: Say,
) -> StepReport:
    """GRPO step `index + 1`: the batch `data.batch(index)`, one checkpoint, one history row."""
    started = time.monotonic()
    units = step_units(data.split, data.batch(index), twins=run.data.twins)
    scenarios = [scenario for unit in units for scenario in unit]
    groups = await gather_groups(
        policy, scenarios, run.grpo.group_size, config, f"step {index + 1}"
    )
    failed = _log_failures(groups, say)
    selection = select_informative(groups, [len(u) for u in units], run.grpo.groups_per_step)
    # train on repaired copies; log the originals (the copies lack intermediate tool calls)
    prepared, prep = prepare_groups_for_training(selection.kept)
    # With no group left ART takes no gradient step but still moves the checkpoint on, so
    # step N and batch N stay one to one and no step's logged trajectories are overwritten.
    result = await backend.train(model, prepared, **train_kwargs(run))
    seconds = time.monotonic() - started
    metrics = result.metrics | prep.as_metrics() | selection.as_metrics()
    metrics |= {"data/failed_rollouts": float(failed), "data/grpo_step": float(index + 1)}
    metrics |= art_metrics(groups)  # tool-call diversity within groups, for the report
    metrics[run_state.STEP_SECONDS_KEY] = seconds
    await model.log(groups, metrics=metrics, step=result.step, split="train")
    rewards = [t.reward for group in groups for t in group.trajectories]
    report = StepReport(
        step=result.step,
        grpo_step=index + 1,
        scenario_ids=[scenario.scenario_id for scenario in scenarios],
        reward_mean=statistics.fmean(rewards) if rewards else 0.0,
        groups=len(groups),
        zero_variance_groups=selection.tied,
        trained_groups=prep.groups_out,
        failed_rollouts=failed,
        seconds=seconds,
        surplus_groups=selection.surplus,
        short_groups=selection.short,
    )
    say(_step_line(report))
    return report


async def gather_groups(
    policy: TrainableModelPolicy,
    scenarios: list[Scenario],
    group_size: int,
    config: RolloutConfig,
    desc: str,
) -> list[art.TrajectoryGroup]:
    """One group of `group_size` rollouts per scenario; failures stay in `group.exceptions`."""
    import art

    return await art.gather_trajectory_groups(
        [
            scenario_group((rollout(policy, scenario, config) for _ in range(group_size)), scenario)
            for scenario in scenarios
        ],
        pbar_desc=desc,
        max_metrics=1,  # the progress bar shows the mean reward, not every metric
        max_exceptions=MAX_FAILED_ROLLOUT_SHARE,  # a share of the step's rollouts
    )


def _log_failures(groups: list[art.TrajectoryGroup], say: Say) -> int:
    failed = 0
    for group in groups:
        for exception in group.exceptions:
            failed += 1
            where = group.metadata.get("scenario_id", "?")
            reason = f"{exception.type}: {exception.message[:200]}"
            say(f"  rollout failed on {where} (dropped): {reason}")
    return failed


def _step_line(report: StepReport) -> str:
    short = f", {report.short_groups} short" if report.short_groups else ""
    return (
        f"step {report.step} (GRPO {report.grpo_step}): reward {report.reward_mean:.3f}, "
        f"groups gathered {report.groups}, trained {report.trained_groups}, dropped "
        f"{report.zero_variance_groups} outcome-tied + {report.surplus_groups} surplus{short}, "
        f"failed rollouts {report.failed_rollouts}, {report.seconds:.1f} s"
    )


def _validation_due(
    run: RunConfig, done: int, directory: Path, offset: int, *, final: bool = False
) -> bool:
    """Every `every_steps` GRPO steps from step 0 (the base), and at the end; never twice."""
    if not final and done % run.validation.every_steps:
        return False
    return done + offset not in run_state.validated_steps(run_state.read_history(directory))


async def _validate(
    model: art.TrainableModel,
    policy: TrainableModelPolicy,
    scenarios: list[Scenario],
    run: RunConfig,
    config: RolloutConfig,
    step: int,
    say: Say,
) -> ValidationResult:
    result = await validate(model, policy, scenarios, run, config, step)
    where = f"{result.scenarios} {run.validation.split} scenarios"
    say(
        f"validation at step {step}: pass^1 {result.pass1:.3f} on {where}, format errors "
        f"{result.format_error_rate:.1%} of turns"
    )
    await prune_checkpoints(model, run_state.model_dir(run), say)
    kept = run_state.checkpoint_steps(run_state.model_dir(run))
    if kept:
        say("  kept checkpoints (latest, best val pass^1): " + ", ".join(f"{s:04d}" for s in kept))
    return result


async def prune_checkpoints(model: art.TrainableModel, directory: Path, say: Say) -> bool:
    """Keep the latest checkpoint and the best by val pass^1, never stopping the run for it.

    ART's `delete_checkpoints` reads history.jsonl with polars; an unreadable line raises
    (polars' ComputeError). Then the file is repaired once and pruning retried; if it still
    fails, every checkpoint is kept until the next validation and the run goes on.
    """
    for attempt in (1, 2):
        try:
            await model.delete_checkpoints(best_checkpoint_metric=run_state.PASS1_KEY)
            return True
        except Exception as exc:  # whatever ART or polars raise: pruning is not worth a run
            repaired = run_state.repair_history(directory) if attempt == 1 else None
            if repaired:
                say(repaired)
                continue
            reason = (str(exc).strip().splitlines() or [""])[0][:200]
            say(f"warning: checkpoints not pruned ({type(exc).__name__}: {reason}); kept all")
            return False
    return False


def _out_of_time(run: RunConfig, started: float, durations: list[float]) -> bool:
    """Stop before a step that would end past the limit (a step is about the recent mean)."""
    elapsed = time.monotonic() - started
    expected = statistics.fmean(durations[-5:])
    return elapsed + expected > run.grpo.wall_clock_hours * 3600
