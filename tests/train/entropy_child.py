"""Test support: what a process that ART spawns sees of `art.unsloth.train` (the entropy patch).

`spawn_main.py` (written by the test) imports `training.art` at the top, as train.py does, and
starts `report` in a *spawned* child, as ART's mp_actors starts its Unsloth service: the child
re-imports that main module, then imports art's training module, which must arrive patched.
"""

from __future__ import annotations

from typing import Any


def report(queue: Any) -> None:
    import art.unsloth.train as art_train

    from training.art.entropy_patch import TARGET, is_patched, logprobs_with_detached_entropy

    queue.put((is_patched(), getattr(art_train, TARGET) is logprobs_with_detached_entropy))


SPAWN_MAIN = """
import multiprocessing
import sys

import training.art  # noqa: F401  (what train.py imports first)
from tests.train.entropy_child import report

if __name__ == "__main__":
    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    child = context.Process(target=report, args=(queue,))
    child.start()
    print(queue.get(timeout=300))
    child.join(timeout=60)
    sys.exit(child.exitcode)
"""
