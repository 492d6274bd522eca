"""The grader's reading of each tool call, remembered by content (rewards/README.md G9 apart).

Every episode of a scenario shows the same tool outputs, so `eval.grounding.trace.call_views`
reads a call only the first time its name, arguments, result and the episode's own credit notes
are seen together; later episodes get the same views back. The views are shared: read them,
never change them. The reward keeps its own cache (`rewards.output_index`): the two readers stay
independent. Bounded, least recently used first out.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from functools import lru_cache
from typing import Any

from env.ledger_env import ToolRecord

ReadCalls = Callable[[Sequence[ToolRecord], Any], list[Any]]  # (log, own note ids) -> views


def views_by_call(
    tool_log: Iterable[ToolRecord], own_notes: Iterable[str], read: ReadCalls
) -> list[Any]:
    """`read(tool_log, own_notes)`, one call at a time, each remembered: `read` must judge every
    call on its own (tests/eval/test_output_index.py holds it to that)."""
    own = frozenset(own_notes)
    return [_view(record, own, read) for record in tool_log]


@lru_cache(maxsize=2048)  # ~20 KB an entry: every call of an eval pass (~900)
def _view(record: ToolRecord, own: frozenset[str], read: ReadCalls) -> Any:
    return read((record,), own)[0]


def forget() -> None:
    """Empties the cache (benchmarks that time a first play)."""
    _view.cache_clear()
