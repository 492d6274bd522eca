"""Shared plumbing of the `env` command-line checks (validate, manifest, dedup, bench).

A user mistake (unknown split, a limit of 0) must end in one clear line and exit status 2,
never a traceback, and `main(argv) -> int` must be callable from tests, so argparse's
`error()` raises here instead of exiting. Not a command itself.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from typing import TypeVar

T = TypeVar("T")


class UsageError(Exception):
    """A mistake in the command line or its values; printed as one line, exit status 2."""


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(message)


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


def run(prog: str, body: Callable[[Sequence[str] | None], int], argv: Sequence[str] | None) -> int:
    """Runs a command's body; a `UsageError` becomes one line on stderr and status 2."""
    try:
        return body(argv)
    except UsageError as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # `... | head`: the reader left; no traceback at exit either
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


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
    chunk = max(1, len(seeds) // (workers * 8))
    with ProcessPoolExecutor(max_workers=workers) as pool:
        results = pool.map(fn, [split] * len(seeds), seeds, chunksize=chunk)
        return list(progress(results, len(seeds), split))
