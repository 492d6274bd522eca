"""Ctrl-C during a run: the first starts no new episode, the second drops the ones in flight.

`eval.jobs.run_jobs` asks `stopping` before each episode starts and tells `Interrupt` which
episodes are running; what finished stays recorded, and the caller says how to resume. Why a
Python signal handler and not the event loop's: a scripted policy plays a whole episode without
yielding to the loop, so a loop callback (or `asyncio.run`'s own cancelling of the main task)
would run only after every queued episode had played; a Python handler runs between bytecodes,
so the next episode to start already sees `stopping`. Outside the main thread (where no handler
can be installed) Ctrl-C keeps Python's behaviour.
"""

from __future__ import annotations

import asyncio
import signal
import sys
import threading
from types import FrameType, TracebackType
from typing import Any


class Interrupt:
    """While entered (inside a running event loop), SIGINT steers the run instead of raising."""

    def __init__(self) -> None:
        self.stopping = False  # the first Ctrl-C: no episode starts after it
        self.cancelled = False  # the second: the episodes in flight are cancelled
        self.dropped = 0  # episodes cancelled in flight
        self._running: set[asyncio.Task[Any]] = set()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._previous: Any = None

    def __enter__(self) -> Interrupt:
        if threading.current_thread() is threading.main_thread():
            self._loop = asyncio.get_running_loop()
            self._previous = signal.signal(signal.SIGINT, self._on_sigint)
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._loop is not None:
            signal.signal(signal.SIGINT, self._previous)
            self._loop = None

    def started(self, task: asyncio.Task[Any]) -> None:
        self._running.add(task)

    def finished(self, task: asyncio.Task[Any]) -> None:
        self._running.discard(task)

    def _on_sigint(self, signum: int, frame: FrameType | None) -> None:
        assert self._loop is not None  # installed only with a loop
        if not self.stopping:
            self.stopping = True
            self._loop.call_soon_threadsafe(self._announce)
        elif not self.cancelled:
            self.cancelled = True
            signal.signal(signal.SIGINT, self._previous)  # a third Ctrl-C is Python's own
            self._loop.call_soon_threadsafe(self._cancel_running)

    def _announce(self) -> None:
        from tqdm import tqdm

        running = len(self._running)
        what = f"finishing the {running} in flight" if running else "none in flight"
        tqdm.write(
            f"Ctrl-C: starting no new episode, {what} (Ctrl-C again to drop them)",
            file=sys.stderr,
        )

    def _cancel_running(self) -> None:
        for task in self._running:
            if not task.done():
                task.cancel()
                self.dropped += 1
