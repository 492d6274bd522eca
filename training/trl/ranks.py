"""The TRL path under several processes (torchrun, accelerate launch): who writes, who waits.

Every process trains its share of each batch; only rank 0 writes what a person reads (the
ledger, logs, metrics, checkpoints' companions, evaluations, the report). A single process is
rank 0 of a world of 1, and then every helper here is a no-op. The process group is opened
here, before the trainers, with a timeout long enough for rank 0's evaluations (the other ranks
wait for it at a barrier); the trainers then reuse it (accelerate opens none of its own).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, TypeVar

T = TypeVar("T")

# Rank 0 evaluates before and after GRPO while the others wait: hours, not torch's 30 minutes.
WAIT = timedelta(hours=6)


@dataclass(frozen=True)
class Ranks:
    rank: int = 0
    world: int = 1
    local_rank: int = 0
    local_world: int = 1

    @property
    def main(self) -> bool:
        return self.rank == 0

    @property
    def several(self) -> bool:
        return self.world > 1


def from_environment() -> Ranks:
    """What the launcher set (torchrun and accelerate launch both set these); 1 process if none."""

    def number(name: str, default: int) -> int:
        return int(os.environ.get(name, default))

    world = number("WORLD_SIZE", 1)
    return Ranks(
        rank=number("RANK", 0),
        world=world,
        local_rank=number("LOCAL_RANK", 0),
        local_world=number("LOCAL_WORLD_SIZE", world),
    )


def start(device: str) -> Ranks:
    """Opens the process group where a launcher started several processes: gloo on CPU, NCCL
    with each process on its own GPU otherwise. Returns this process's place."""
    ranks = from_environment()
    if not ranks.several:
        return ranks
    import torch
    import torch.distributed as dist

    if dist.is_initialized():
        return ranks
    if device == "gpu":
        torch.cuda.set_device(ranks.local_rank)
    dist.init_process_group(backend="nccl" if device == "gpu" else "gloo", timeout=WAIT)
    return ranks


def _dist() -> Any | None:
    """torch.distributed where a group is open, else None (one process)."""
    if int(os.environ.get("WORLD_SIZE", 1)) <= 1:
        return None
    import torch.distributed as dist

    return dist if dist.is_initialized() else None


def barrier() -> None:
    dist = _dist()
    if dist is not None:
        dist.barrier()


def gather(value: T) -> list[T]:
    """Every rank's `value`, in rank order, on every rank (a collective: all ranks call it)."""
    dist = _dist()
    if dist is None:
        return [value]
    values: list[Any] = [None] * dist.get_world_size()
    dist.all_gather_object(values, value)
    return values


def from_main(make: Callable[[], T]) -> T:
    """Rank 0 runs `make`, every rank gets its result; an exception there is raised on every
    rank (as the same type where it can be rebuilt from its message, else RuntimeError)."""
    dist = _dist()
    if dist is None:
        return make()
    box: list[Any] = [None]
    failure: Exception | None = None
    if dist.get_rank() == 0:
        try:
            box[0] = ("ok", make())
        except Exception as exc:
            failure = exc
            box[0] = ("error", (type(exc), str(exc)))
    dist.broadcast_object_list(box, src=0)
    if failure is not None:
        raise failure
    status, payload = box[0]
    if status == "ok":
        return payload
    kind, message = payload
    try:
        error = kind(message)
    except Exception:
        error = RuntimeError(message)
    raise error


def main_first(make: Callable[[], T]) -> T:
    """Rank 0 runs `make` first (e.g. builds a cache entry), then the others run it too."""
    ranks = from_environment()
    if ranks.main:
        result = make()
        barrier()
        return result
    barrier()
    return make()
