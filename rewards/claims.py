"""The customer's claim: what the complaint says is allowed in a summary, never evidence.

rewards/README.md G3.1 (design §5: "the customer's message is a claim, not evidence"). An
honest summary quotes the complaint ("the customer writes they were billed 36 days"); a
summary token that the complaint shows, read with the same grammar (G2) and matched as a tool
output is (G7), is `claimed`: no hallucination, and no found fact either. The complaint is the
message of the scenario database's `disputes` table, read from the episode's final image (no
tool writes that table). The grader reads it on its own (`eval.grounding.claims`).
"""

from __future__ import annotations

import sqlite3
from functools import lru_cache

from env.connection_pool import borrow, give_back
from rewards.display import render
from rewards.numbers import read_text
from rewards.provenance import ShownKeys, shown_keys, token_keys


def complaint_text(database: bytes) -> str:
    """The customer's message(s) in a database image; "" where it has no `disputes` table."""
    connection = borrow(database)
    try:
        rows = connection.execute("SELECT message FROM disputes ORDER BY id").fetchall()
    except sqlite3.DatabaseError:
        return ""
    finally:
        give_back(connection)
    return "\n".join(str(row[0]) for row in rows)


@lru_cache(maxsize=1024)  # every episode of a scenario has the same complaint
def claim_keys(text: str) -> ShownKeys:
    """Every key the complaint's tokens show as displayed (G2.0, G2, G7), as a tool output's
    would be."""
    return shown_keys(key for token in read_text(render(text)) for key in token_keys(token))


def episode_claims(database: bytes) -> ShownKeys:
    return claim_keys(complaint_text(database))
