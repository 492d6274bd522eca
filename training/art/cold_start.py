"""Cold start by rejection sampling: a teacher's successful investigations, then SFT, then GRPO.

A base model that rarely completes an investigation gives GRPO groups of equal rewards and no
gradient (reward lab: binary RL alone 5% -> 5%; from the auditor's cold start 72% -> 95%), so
every GRPO run starts here. `[cold_start]` runs the teacher (`auditor`, a scripted analyst that
sees only tool outputs, or an API model alias; never one that reads the answer) on train
scenarios after the GRPO pool, balanced by root cause and level, keeps the episodes the eval
grader passes, and fine-tunes on them with `model.train_sft` (one ART checkpoint for all
epochs). `ledgergym_sft.json` records the phase, so a resumed run skips it; runs with the same
cold start share one SFT checkpoint (training.art.shared_cold_start). The validation at GRPO
step 0 then measures the warm start (val pass^1 and the format-error rate).
"""

from __future__ import annotations

import random
import shutil
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent.registry import api_key, build_policy, check_reachable, resolve_model
from agent.rollout import RolloutConfig, RolloutResult
from env.generation.generator import generate
from eval.grader import EpisodeGrade
from eval.jobs import Job
from eval.run import evaluate
from training.art import shared_cold_start
from training.art.run_state import SftState, read_sft_state, write_sft_state
from training.art.trajectories import to_art_trajectory
from training.data_order import cold_start_seeds
from training.runs import ColdStartSection, RunConfig

if TYPE_CHECKING:
    import art

TEACHER_CONCURRENCY = 8
COLD_START_DIR = "cold-start"  # the teacher's eval run, in the model directory


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
        done = replace(state, grpo_start_step=step)
        write_sft_state(directory, done)
        _publish(run, directory, step, done, say)
        return step
    if state is None and step > 0:
        say(f"cold start skipped: {directory} already has checkpoint {step} without one")
        return 0
    write_sft_state(
        directory, SftState(start_step=step, grpo_start_step=None, teacher=section.teacher)
    )
    trajectories = await teacher_trajectories(run, section, directory, say)
    await model.train_sft(_epochs(trajectories, section.epochs, run.seed), _sft_config(section))
    after = await model.get_step()
    done = SftState(step, after, len(trajectories), section.teacher)
    write_sft_state(directory, done)
    say(
        f"cold start: SFT on {len(trajectories)} teacher trajectories x {section.epochs} epochs "
        f"at lr {section.learning_rate:g} -> checkpoint {after}"
    )
    _publish(run, directory, after, done, say)
    return after


def _publish(
    run: RunConfig, directory: Path, step: int, state: SftState, say: Callable[[str], None]
) -> None:
    """Shares the SFT checkpoint with runs of the same cold start; never stops this run."""
    try:
        published = shared_cold_start.publish(run, directory, step, state)
    except OSError as exc:
        say(f"warning: the cold start was not shared ({exc.strerror or exc}); this run goes on")
        return
    if published is not None:
        key = shared_cold_start.cold_start_key(run)
        write_sft_state(directory, replace(state, shared_key=key))
        say(f"cold start shared as {published} (runs with the same cold start start from it)")


def check_teacher(run: RunConfig, directory: Path) -> None:
    """Raises PolicyError now (unknown alias, unset key) when the SFT phase still has to run."""
    state = read_sft_state(directory)
    if run.cold_start is None or (state is not None and state.done):
        return
    api_key(resolve_model(run.cold_start.teacher))


async def teacher_trajectories(
    run: RunConfig, section: ColdStartSection, directory: Path, say: Callable[[str], None]
) -> list[art.Trajectory]:
    """The teacher's episodes that the eval grader passes (rejection sampling).

    They are played and graded by `eval.run.evaluate` into `directory/cold-start/` (an eval
    run of the teacher, started over each time the phase runs); an episode whose API kept
    failing is one demonstration fewer."""
    target = resolve_model(section.teacher)
    teacher = build_policy(target)
    check_reachable(target)
    seeds = cold_start_seeds(run, section.scenarios, balanced=section.balanced)
    scenarios = [generate(run.data.split, seed) for seed in seeds]
    config = RolloutConfig(
        tool_budget=run.rollout.tool_budget, max_turns=run.rollout.max_turns, reward=run.reward
    )
    passing: dict[tuple[str, int], art.Trajectory] = {}

    def keep(job: Job, result: RolloutResult, grade: EpisodeGrade | None) -> None:
        if grade is not None and grade.success:
            passing[job.key] = to_art_trajectory(result.trajectory)

    run_dir = directory / COLD_START_DIR
    shutil.rmtree(run_dir, ignore_errors=True)
    await evaluate(
        teacher,
        scenarios,
        k=section.samples,
        run_dir=run_dir,
        config=_teacher_config(run, section, target.name),
        rollout=config,
        concurrency=TEACHER_CONCURRENCY,
        on_episode=keep,
    )
    order = [(s.scenario_id, n) for s in scenarios for n in range(section.samples)]
    kept = [passing[key] for key in order if key in passing]  # the order the SFT shuffle sees
    say(f"cold start: teacher {section.teacher} passed {len(kept)} of {len(order)} episodes")
    if not kept:
        raise ColdStartError(f"teacher {section.teacher!r} passed none of {len(order)} episodes")
    return kept


def _teacher_config(run: RunConfig, section: ColdStartSection, teacher: str) -> dict[str, Any]:
    from env.versions import generator_hash, tool_contract_hash

    return {
        "model": teacher,
        "kind": "cold-start-teacher",
        "split": run.data.split,
        "k": section.samples,
        "limit": section.scenarios,
        "balanced": section.balanced,
        "tool_contract": tool_contract_hash(),
        "generator": generator_hash(),
    }


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
    import art

    return art.TrainSFTConfig(learning_rate=section.learning_rate)
