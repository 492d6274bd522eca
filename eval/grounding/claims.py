"""The customer's claim, the grader's side: what the complaint shows is allowed, never evidence.

rewards/README.md G3.1 (design §5: "the customer's message is a claim, not evidence"). The grader
reads the complaint from the scenario's own database image (the `disputes` table's message)
with its own reader (`eval.grounding.read`) into a `Seen`, matched as a tool output is (G7);
`eval.grounding.verdict` gives a summary token it backs, shown by no tool, the status `claimed`.
"""

from __future__ import annotations

import sqlite3
from functools import lru_cache

from env.connection_pool import borrow, give_back
from eval.grounding.display import rendered
from eval.grounding.read import read
from eval.grounding.trace import Seen


def claim_seen(image: bytes) -> Seen:
    """Every key the complaint(s) in a database image show; empty without a `disputes` table.
    Shared between episodes: read it, never change it."""
    return _seen("\n".join(_messages(image)))


@lru_cache(maxsize=1024)  # every episode of a scenario has the same complaint
def _seen(text: str) -> Seen:
    seen = Seen.empty()
    for reading in read(rendered(text)):  # G2.0: the complaint as displayed
        seen.add_reading(reading)
    return seen


def _messages(image: bytes) -> list[str]:
    connection = borrow(image)
    try:
        rows = connection.execute("SELECT message FROM disputes ORDER BY id").fetchall()
    except sqlite3.DatabaseError:
        return []
    finally:
        give_back(connection)
    return [str(row[0]) for row in rows]
