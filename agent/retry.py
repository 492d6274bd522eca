"""Asking a policy for one turn despite failing infrastructure: backoff, budget, unreachable.

The failure kinds come from `agent.policy`. Transient ones are retried with exponential backoff
and jitter, at most `max_retries` times per request and while the run's outage budget lasts
(`ServerWatch`, shared by every episode of a run: seconds during which requests failed and none
succeeded). Refused connections are retried until they have lasted `unreachable_after_s`, then
`ServerUnreachable` stops the run. A `ServerFailure` (plain 5xx) is retried
`server_error_retries` times and then raised for the rollout to end the episode as an error.
"""

from __future__ import annotations

import asyncio
import random
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol

from agent.policy import (
    ConnectFailed,
    PolicyReply,
    ServerFailure,
    ServerUnreachable,
    TransientPolicyError,
)

RETRY_AFTER_MAX_S = 60.0  # a server's Retry-After is honoured up to this


@dataclass(frozen=True)
class RetrySettings:
    max_retries: int = 6  # transient failures per request
    server_error_retries: int = 2  # plain 5xx per request, then the episode is an error
    backoff_s: float = 0.5  # first pause; doubles per retry, with jitter
    backoff_max_s: float = 30.0
    unreachable_after_s: float = 60.0  # refused on every attempt this long: stop the run


class RetryBudgetSpent(TransientPolicyError):
    """The run's outage budget is used up: the episode stays incomplete (a rerun resumes)."""


class ServerWatch:
    """One per run: how long the server has been failing, across concurrent episodes."""

    def __init__(self, budget_s: float | None = None, clock: Callable[[], float] = time.monotonic):
        self.budget_s = budget_s
        self._clock = clock
        self._lock = threading.Lock()
        self._outage_since: float | None = None
        self._refused_since: float | None = None
        self._spent = 0.0

    def now(self) -> float:
        return self._clock()

    def succeeded(self) -> None:
        with self._lock:
            if self._outage_since is not None:
                self._spent += self._clock() - self._outage_since
            self._outage_since = self._refused_since = None

    def answered(self) -> None:
        """The server is up and answered (even with an error of its own): no refusal streak."""
        with self._lock:
            self._refused_since = None

    def failed(self, since: float, refused: bool) -> None:
        with self._lock:
            if self._outage_since is None:
                self._outage_since = since
            if not refused:
                self._refused_since = None
            elif self._refused_since is None:
                self._refused_since = since

    def refused_for(self) -> float:
        with self._lock:
            since = self._refused_since
        return 0.0 if since is None else self._clock() - since

    def outage_spent(self) -> float:
        with self._lock:
            current = 0.0 if self._outage_since is None else self._clock() - self._outage_since
            return self._spent + current

    def budget_spent(self) -> bool:
        return self.budget_s is not None and self.outage_spent() >= self.budget_s


class RetryStats(Protocol):
    retries: int
    retry_causes: list[str]
    queue_s: float
    generation_s: float


def _pause(settings: RetrySettings, retry: int) -> float:
    pause = min(settings.backoff_max_s, settings.backoff_s * 2 ** max(retry - 1, 0))
    return pause * (0.5 + random.random() / 2)


async def call_with_retries(
    call: Callable[[], Awaitable[PolicyReply]],
    settings: RetrySettings,
    watch: ServerWatch,
    stats: RetryStats,
    report: Callable[[str], None] | None = None,
    label: str = "",
) -> PolicyReply:
    """One reply; raises what the rules say cannot be retried any more."""
    transient = server_errors = retry = 0
    while True:
        started = watch.now()
        asked: float | None = None  # the server's Retry-After
        try:
            reply = await call()
        except ConnectFailed as exc:
            watch.failed(started, refused=True)
            if watch.refused_for() >= settings.unreachable_after_s:
                raise ServerUnreachable(
                    f"{exc}: every connection refused for {watch.refused_for():.0f} s "
                    "(is the server running?); rerun the same command to resume"
                ) from exc
            cause = exc.cause
        except TransientPolicyError as exc:
            watch.failed(started, refused=False)
            transient += 1
            if watch.budget_spent():
                raise RetryBudgetSpent(
                    f"{exc}; the run's retry budget of {watch.budget_s:.0f} s is spent", exc.cause
                ) from exc
            if transient > settings.max_retries:
                raise TransientPolicyError(
                    f"{exc} (gave up after {settings.max_retries} retries)", exc.cause
                ) from exc
            cause = exc.cause
            asked = exc.retry_after_s
        except ServerFailure as exc:
            watch.answered()
            server_errors += 1
            if server_errors > settings.server_error_retries:
                raise
            cause = str(exc)[:160]
        else:
            stats.generation_s += watch.now() - started
            watch.succeeded()
            return reply
        stats.queue_s += watch.now() - started
        retry += 1
        stats.retries += 1
        stats.retry_causes.append(cause)
        pause = _pause(settings, retry)
        if asked is not None:
            pause = max(pause, min(asked, RETRY_AFTER_MAX_S))
        if report is not None:
            report(f"retrying {label}: {cause} (retry {retry} of this turn, in {pause:.1f} s)")
        await asyncio.sleep(pause)
        stats.queue_s += pause
