"""The reward's reading of each tool call, remembered by content.

Every episode of a scenario shows the same tool outputs, so `rewards.provenance.trace_episode`
reads a call (`rewards.evidence.split_call`, then the evidence and echo keys) only the first time
its name, arguments, result and the episode's own credit notes are seen together. The keys are
frozen sets, shared by every episode that asks. The grader keeps its own cache
(`eval.grounding.output_index`): the two readers stay independent (rewards/README.md G9).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import lru_cache
from typing import Any

from env.ledger_env import ToolRecord
from rewards.evidence import CallParts, drafted_note_ids, split_call

ReadParts = Callable[[CallParts], Any]


def evidence_by_call(tool_log: Iterable[ToolRecord], read: ReadParts) -> list[Any]:
    """`[read(parts) for parts in split_log(tool_log)]`, each call remembered."""
    log = tuple(tool_log)
    own = drafted_note_ids(log)
    return [_evidence(record, own, read) for record in log]


@lru_cache(maxsize=2048)  # ~20 KB an entry: every call of an eval pass (~900)
def _evidence(record: ToolRecord, own: frozenset[str], read: ReadParts) -> Any:
    return read(split_call(record, own))


def forget() -> None:
    """Empties the cache (benchmarks that time a first play)."""
    _evidence.cache_clear()
