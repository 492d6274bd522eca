"""The one command-line module: exit codes, usage errors and the runners every command shares.

It lives in `env`, the lowest layer, so that every layer (env's own commands, eval, training,
train.py, checks, experiments) may import it. A user mistake (unknown split, a limit of 0, a bad
flag) ends in one line on stderr and status 2, never a traceback, and `main(argv) -> int` stays
callable from tests, so argparse's `error()` raises here instead of exiting. Not a command itself.
"""

from __future__ import annotations

import argparse
import difflib
import os
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TypeVar

T = TypeVar("T")

# The exit statuses of every command (0: done, all well); each command's docstring says which.
EXIT_FAILED = 1  # a gate or check ran and failed (the output says which)
EXIT_USER_ERROR = 2  # a mistake in the command line or its inputs, or a machine that cannot run it
EXIT_INCOMPLETE = 3  # work left by transient errors: rerun the same command to resume
EXIT_UNREACHABLE = 4  # the server refused every connection for too long: rerun once it is up
EXIT_INTERRUPTED = 130  # the shell's code for SIGINT


class UsageError(Exception):
    """A mistake in the command line or its values; printed as one line, exit status 2."""


def did_you_mean(word: str, options: Iterable[str]) -> str:
    """ "; did you mean 'x'?" for the closest option (difflib), or "" when none is close."""
    close = difflib.get_close_matches(word, list(options), n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""


class Parser(argparse.ArgumentParser):
    """argparse that raises `UsageError` and suggests the closest choice or flag to a typo."""

    def error(self, message: str) -> None:  # type: ignore[override]
        if message.startswith("unrecognized arguments: "):
            flags = [s for action in self._actions for s in action.option_strings]
            words = message.removeprefix("unrecognized arguments: ").split()
            message += next((hint for w in words if (hint := did_you_mean(w, flags))), "")
        raise UsageError(message)

    def _check_value(self, action: argparse.Action, value: object) -> None:
        choices = action.choices
        if choices is not None and value not in choices:
            names = [str(choice) for choice in choices]
            raise argparse.ArgumentError(
                action,
                f"invalid choice: {value!r} (choose from {', '.join(names)})"
                + did_you_mean(str(value), names),
            )


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def unit_fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"must be between 0 and 1, got {value}")
    return value


def run_command(
    prog: str,
    body: Callable[[Sequence[str] | None], int],
    argv: Sequence[str] | None,
    user_errors: tuple[type[Exception], ...] = (),
) -> int:
    """Runs a command's body; a `UsageError` (or one of `user_errors`: a bad file, an unknown
    run) becomes one line on stderr and status 2."""
    handled: tuple[type[Exception], ...] = (UsageError, *user_errors)
    try:
        return body(argv)
    except handled as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return EXIT_USER_ERROR
    except BrokenPipeError:  # `... | head`: the reader left; no traceback at exit either
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_FAILED


def run_resumable(body: Callable[[], int], user_errors: tuple[type[Exception], ...]) -> int:
    """For commands that append progress as they go (eval.run, training.filter): `body()`'s
    status; a `UsageError` or one of `user_errors` is one line, and Ctrl-C says a rerun resumes."""
    handled: tuple[type[Exception], ...] = (UsageError, *user_errors)
    try:
        return body()
    except handled as exc:
        return fail(exc)
    except KeyboardInterrupt:
        print("interrupted; rerun the same command to resume", file=sys.stderr)
        return EXIT_INTERRUPTED


def fail(message: object) -> int:
    """A user mistake or missing machinery found past the parser: one line, never a traceback."""
    print(f"error: {message}", file=sys.stderr)
    return EXIT_USER_ERROR


def progress(items: Iterable[T], total: int, desc: str) -> Iterator[T]:
    """A progress bar on stderr, only for a person watching: stdout a TTY."""
    if not sys.stdout.isatty():
        yield from items
        return
    from tqdm import tqdm

    yield from tqdm(items, total=total, desc=desc, leave=False, file=sys.stderr)


def map_seeds(
    fn: Callable[[str, int], T], split: str, seeds: Sequence[int], workers: int | None = None
) -> list[T]:
    """`fn(split, seed)` for every seed, in seed order, over worker processes when it pays.

    Generation is pure Python and CPU-bound, so thousands of seeds are split across cores;
    `fn` must be a module-level function and return something small and picklable.
    """
    workers = workers or os.cpu_count() or 1
    if workers <= 1 or len(seeds) < 200:
        return [fn(split, seed) for seed in progress(seeds, len(seeds), split)]
    from concurrent.futures import ProcessPoolExecutor  # here: every command imports this module

    chunk = max(1, len(seeds) // (workers * 8))
    with ProcessPoolExecutor(max_workers=workers) as pool:
        results = pool.map(fn, [split] * len(seeds), seeds, chunksize=chunk)
        return list(progress(results, len(seeds), split))
