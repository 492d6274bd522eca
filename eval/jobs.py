"""Running a run's episodes: bounded concurrency, extra rounds for incomplete ones, one line each.

`eval.run.evaluate` drives it. An episode is recorded graded, as an error line (server error,
harness bug), or not at all (incomplete after transient failures: returned to the caller, who
reruns it). A `PolicyError` (including `ServerUnreachable`) stops every episode and propagates
as one exception. An `EpisodeHook` sees each recorded rollout with its grade (training keeps
the trajectories that way). With an `Interrupt` (eval/interrupt.py), the first Ctrl-C starts no
new episode and the second cancels those in flight; neither is recorded, a rerun plays them.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, replace
from typing import Any

from agent.policy import Policy, PolicyError, TransientPolicyError
from agent.retry import ServerWatch
from agent.rollout import RolloutConfig, RolloutResult, run_episode
from env.scenario import Scenario, reveal_truth
from eval.episode_log import EpisodeLog, error_line, result_line
from eval.grader import EpisodeGrade, grade_episode
from eval.interrupt import Interrupt

DEFAULT_RETRY_BUDGET_S = 900.0


@dataclass(frozen=True)
class Job:
    scenario: Scenario
    sample: int

    @property
    def key(self) -> tuple[str, int]:
        return (self.scenario.scenario_id, self.sample)


# Called with each recorded rollout and its grade (None: the episode ended on a server error)
EpisodeHook = Callable[[Job, RolloutResult, EpisodeGrade | None], None]


class Screen:
    """Progress lines under the bar: what is retried and why, at most one line a second."""

    def __init__(self, interval_s: float = 1.0) -> None:
        self.interval_s = interval_s
        self._last = 0.0
        self._skipped = 0

    def __call__(self, message: str) -> None:
        from tqdm import tqdm

        now = time.monotonic()
        if now - self._last < self.interval_s:
            self._skipped += 1
            return
        more = f" (+{self._skipped} more retries)" if self._skipped else ""
        tqdm.write(message + more, file=sys.stderr)
        self._last, self._skipped = now, 0


@dataclass
class Runner:
    """One run's episodes: the policy, how they roll out, where they are written."""

    policy: Policy
    log: EpisodeLog
    rollout: RolloutConfig
    keep_transcript: bool
    incomplete: dict[tuple[str, int], str]  # job key -> last transient cause
    on_episode: EpisodeHook | None = None

    async def episode(self, job: Job) -> bool:
        """Runs and records one episode; False when it stays incomplete (retried later)."""
        key = job.key
        try:
            result = await run_episode(self.policy, job.scenario, self.rollout)
        except TransientPolicyError as exc:
            self.incomplete[key] = str(exc)
            return False
        except PolicyError:
            raise
        except Exception as exc:  # a bug in one episode must not end the run: it is a failure
            self.log.append(error_line(job.scenario, job.sample, self.policy.name, exc))
            self.incomplete.pop(key, None)
            return True
        grade = None
        if result.error is None:
            grade = grade_episode(reveal_truth(job.scenario), result.record, job.scenario.database)
        line = result_line(
            job.scenario, job.sample, result, grade, keep_transcript=self.keep_transcript
        )
        self.log.append(line)
        self.incomplete.pop(key, None)
        if self.on_episode is not None:
            self.on_episode(job, result, grade)
        return True


async def run_jobs(
    policy: Policy,
    jobs: list[Job],
    log: EpisodeLog,
    *,
    concurrency: int,
    rounds: int,
    rollout: RolloutConfig | None = None,
    keep_transcript: bool = True,
    incomplete: dict[tuple[str, int], str] | None = None,
    on_episode: EpisodeHook | None = None,
    label: str | None = None,
    interrupt: Interrupt | None = None,
    leave_bar: bool = True,
) -> list[Job]:
    """Bounded-concurrency rounds; returns the jobs still incomplete after every round.

    `rollout`'s `watch` is the run's `ServerWatch` (default: the default settings, the default
    retry budget, progress lines on stderr). `label` names the progress bar (default: what is
    evaluated, on which split; `leave_bar=False` clears it when done). With `interrupt`, Ctrl-C
    steers the run (module docstring); the jobs it kept from running are not returned. The
    policy is closed when the rounds end.
    """
    from tqdm import tqdm

    if rollout is None or rollout.watch is None:
        base = rollout or RolloutConfig()
        rollout = replace(base, watch=ServerWatch(DEFAULT_RETRY_BUDGET_S), report=Screen())
    causes = {} if incomplete is None else incomplete
    runner = Runner(policy, log, rollout, keep_transcript, causes, on_episode)
    split = jobs[0].scenario.split if jobs else "?"
    desc = label or f"evaluating {runner.policy.name} on {split}"
    semaphore = asyncio.Semaphore(concurrency)
    progress = tqdm(
        total=len(jobs), desc=desc, unit="ep", file=sys.stderr, mininterval=0.5, leave=leave_bar
    )
    watch = rollout.watch
    assert watch is not None  # set just above
    steer = interrupt or Interrupt()  # entered only when given: Ctrl-C is then Python's own

    async def one(job: Job, retry: list[Job]) -> None:
        async with semaphore:
            if steer.stopping:
                return  # Ctrl-C: never started, a rerun plays it
            task = asyncio.current_task()
            assert task is not None
            steer.started(task)
            try:
                if await runner.episode(job):
                    progress.update(1)
                else:
                    retry.append(job)
            finally:
                steer.finished(task)

    guard = interrupt if interrupt is not None else contextlib.nullcontext()
    try:
        with guard:
            backoff_s = runner.rollout.retry.backoff_s
            return await _rounds(jobs, rounds, one, watch, backoff_s, steer)
    except* PolicyError as failure:
        raise failure.exceptions[0] from None  # the user's mistake: one line, not a group
    finally:
        progress.close()
        await runner.policy.aclose()


async def _rounds(
    jobs: list[Job],
    rounds: int,
    play: Callable[[Job, list[Job]], Coroutine[Any, Any, None]],
    watch: ServerWatch,
    backoff_s: float,
    steer: Interrupt,
) -> list[Job]:
    """Plays `jobs`, then those left incomplete, up to `rounds` times; [] once Ctrl-C stopped it."""
    pending = jobs
    for round_index in range(rounds):
        if round_index:
            if watch.budget_spent():
                break
            await _pause(min(60.0, backoff_s * 4**round_index), steer)
        if steer.stopping:
            break
        retry: list[Job] = []
        async with asyncio.TaskGroup() as group:
            for job in pending:
                group.create_task(play(job, retry))
        pending = retry
        if not pending:
            break
    return [] if steer.stopping else pending


async def _pause(seconds: float, steer: Interrupt) -> None:
    """A pause between rounds that a Ctrl-C ends at once."""
    deadline = time.monotonic() + seconds
    while not steer.stopping and (left := deadline - time.monotonic()) > 0:
        await asyncio.sleep(min(left, 0.25))
