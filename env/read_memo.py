"""Read-tool answers remembered per scenario image, for episodes that have not written yet.

A read tool's answer is a function of the database and its arguments alone, and every episode
of a scenario starts from the same image: replaying a scenario (a GRPO group, pass^k) answers
each repeated read from a dictionary. `env.ledger_env` stops consulting it at an episode's first
`draft_credit_note`, the only write. Keyed by the image's bytes, never a scenario id; bounded.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

MAX_IMAGES = 128
MAX_CALLS = 128  # per image: a policy's odd arguments must not grow it without bound

Answer = tuple[str, bool]  # (result text, is_error)


class ReadMemo:
    """One image's answers by (tool name, argument text), shared by its episodes."""

    def __init__(self) -> None:
        self._answers: dict[tuple[str, str], Answer] = {}

    def get(self, name: str, arguments: str) -> Answer | None:
        return self._answers.get((name, arguments))

    def put(self, name: str, arguments: str, answer: Answer) -> None:
        if len(self._answers) < MAX_CALLS:  # dict writes are atomic: threads may share this
            self._answers[(name, arguments)] = answer


_lock = threading.Lock()
_memos: OrderedDict[bytes, ReadMemo] = OrderedDict()


def memo_for(image: bytes) -> ReadMemo:
    """The memo of this image, least recently used images forgotten first."""
    with _lock:
        memo = _memos.get(image)
        if memo is None:
            memo = _memos[image] = ReadMemo()
            if len(_memos) > MAX_IMAGES:
                _memos.popitem(last=False)
        else:
            _memos.move_to_end(image)
        return memo


def forget_all() -> None:
    """Empties every memo (benchmarks that time a first play)."""
    with _lock:
        _memos.clear()
