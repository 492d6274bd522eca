"""Cold start by rejection sampling: a teacher's successful investigations, then SFT, then GRPO.

A base model that never completes an investigation gives GRPO groups of equal rewards and no
gradient. `[cold_start]` runs the teacher (`reference`, or any alias agent/registry.py knows)
on train scenarios just after the GRPO pool, keeps only episodes the eval grader passes, and
fine-tunes on them with `model.train_sft` (one ART checkpoint). `ledgergym_sft.json` records
the phase, so a resumed run skips it and counts GRPO steps from the SFT checkpoint.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from agent.policy import Policy, TransientPolicyError
from agent.registry import api_key, build_policy, check_reachable, resolve_model
from agent.rollout import RolloutConfig, run_episode
from env.generator import generate
from env.scenario import Scenario, reveal_truth
from eval.grader import grade_episode
from training.art.run_state import SftState, read_sft_state, write_sft_state
from training.data_order import cold_start_seeds
from training.runs import ColdStartSection, RunConfig

if TYPE_CHECKING:
    from agent.art_import import art

TEACHER_CONCURRENCY = 8


class ColdStartError(RuntimeError):
    """The teacher produced nothing to learn from; the message says what it tried."""


async def ensure_cold_start(
    run: RunConfig, model: art.TrainableModel, directory: Path, say: Callable[[str], None]
) -> int:
    """Runs the SFT phase once; returns the checkpoint GRPO starts from (0 without one)."""
    section = run.cold_start
    if section is None:
        return 0
    step = await model.get_step()
    state = read_sft_state(directory)
    if state is not None and state.done:
        return state.grpo_start_step or 0
    if state is not None and step > state.start_step:  # killed after SFT saved its checkpoint
        write_sft_state(directory, replace(state, grpo_start_step=step))
        return step
    if state is None and step > 0:
        say(f"cold start skipped: {directory} already has checkpoint {step} without one")
        return 0
    write_sft_state(
        directory, SftState(start_step=step, grpo_start_step=None, teacher=section.teacher)
    )
    trajectories = await teacher_trajectories(run, section, say)
    await model.train_sft(_epochs(trajectories, section.epochs, run.seed), _sft_config(section))
    after = await model.get_step()
    write_sft_state(directory, SftState(step, after, len(trajectories), section.teacher))
    say(f"cold start: SFT on {len(trajectories)} teacher trajectories -> checkpoint {after}")
    return after


def check_teacher(run: RunConfig, directory: Path) -> None:
    """Raises PolicyError now (unknown alias, unset key) when the SFT phase still has to run."""
    state = read_sft_state(directory)
    if run.cold_start is None or (state is not None and state.done):
        return
    api_key(resolve_model(run.cold_start.teacher))


async def teacher_trajectories(
    run: RunConfig, section: ColdStartSection, say: Callable[[str], None]
) -> list[art.Trajectory]:
    """The teacher's episodes that the eval grader passes (rejection sampling)."""
    target = resolve_model(section.teacher)
    teacher = build_policy(target)
    check_reachable(target)
    scenarios = [generate(run.data.split, s) for s in cold_start_seeds(run, section.scenarios)]
    config = RolloutConfig(
        tool_budget=run.rollout.tool_budget, max_turns=run.rollout.max_turns, reward=run.reward
    )
    semaphore = asyncio.Semaphore(TEACHER_CONCURRENCY)
    jobs = [
        _passing(teacher, s, config, semaphore) for s in scenarios for _ in range(section.samples)
    ]
    try:
        results = await asyncio.gather(*jobs)
    finally:
        await teacher.aclose()
    kept = [trajectory for trajectory in results if trajectory is not None]
    say(f"cold start: teacher {section.teacher} passed {len(kept)} of {len(jobs)} episodes")
    if not kept:
        raise ColdStartError(f"teacher {section.teacher!r} passed none of {len(jobs)} episodes")
    return kept


async def _passing(
    teacher: Policy, scenario: Scenario, config: RolloutConfig, semaphore: asyncio.Semaphore
) -> art.Trajectory | None:
    async with semaphore:
        try:
            result = await run_episode(teacher, scenario, config)
        except TransientPolicyError:
            return None  # an API that kept failing: one demonstration fewer
    grade = grade_episode(reveal_truth(scenario), result.record, scenario.database)
    return result.trajectory if grade.success else None


def _epochs(trajectories: list[art.Trajectory], epochs: int, seed: int) -> list[art.Trajectory]:
    """`epochs` passes in one SFT call, each shuffled: one checkpoint for the whole phase."""
    rng = random.Random(seed)
    passes = []
    for _ in range(epochs):
        order = list(trajectories)
        rng.shuffle(order)
        passes += order
    return passes


def _sft_config(section: ColdStartSection) -> art.TrainSFTConfig:
    from agent.art_import import art

    return art.TrainSFTConfig(learning_rate=section.learning_rate)
