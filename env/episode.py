"""What an episode leaves behind, for rewards and graders: never the truth, only the record.

`EpisodeRecord` is a plain snapshot of a finished `LedgerEnv`: final database image, findings,
tool log. Rewards and the grader read credit notes from the image, never from the tool log,
because the database is what the business would see.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

from env.connection_pool import borrow, give_back
from env.findings import Findings
from env.ledger_env import LedgerEnv, ToolRecord


@dataclass(frozen=True)
class EpisodeRecord:
    scenario_id: str
    episode_id: str
    final_database: bytes
    findings: Findings | None
    tool_log: tuple[ToolRecord, ...]
    truncated: bool

    @property
    def tool_calls(self) -> int:
        return len(self.tool_log)

    @property
    def submitted(self) -> bool:
        return self.findings is not None

    @property
    def tool_outputs(self) -> tuple[str, ...]:
        return tuple(record.result for record in self.tool_log)


def record_episode(env: LedgerEnv) -> EpisodeRecord:
    return EpisodeRecord(
        scenario_id=env.scenario_id,
        episode_id=env.episode_id,
        final_database=env.final_database(),
        findings=env.findings,
        tool_log=env.tool_log,
        truncated=env.truncated,
    )


def drafted_credits(database: bytes | sqlite3.Connection, episode_id: str) -> dict[str, int]:
    """Cents credited per invoice by this episode, summed over all its notes."""
    connection = borrow(database) if isinstance(database, bytes) else database
    try:
        rows = connection.execute(
            "SELECT invoice_id, SUM(amount_cents) FROM credit_notes WHERE episode_id = ? "
            "GROUP BY invoice_id ORDER BY invoice_id",
            (episode_id,),
        ).fetchall()
    finally:
        if isinstance(database, bytes):
            give_back(connection)
    return {row[0]: int(row[1]) for row in rows}
