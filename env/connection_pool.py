"""Idle SQLite connections lent out again: deserialising an image into one takes ~5 µs.

A new connection costs ~100 µs before its first row (open, parse the schema, prepare each
statement). Cached statements keep their schema while the schema cookie is unchanged, so a
connection is lent only for an image whose schema pages match those it parsed (`SchemaPages`,
~2 µs). Trap: such a statement skips the schema reload after a deserialise, and an INSERT run so
lays index cells out differently (same rows, other bytes): `env.tools` prepares its INSERT per
episode. Thread-safe; used by `env.ledger_env`, `env.episode` and `eval.database_diff`.
"""

from __future__ import annotations

import sqlite3
import threading
from dataclasses import dataclass

MAX_IDLE = 64  # beyond this, given-back connections are closed (64 concurrent rollouts)
MAX_LAYOUTS = 8  # distinct schema layouts remembered (every generated scenario shares one)
HEADER = 100


def stable_header(image: bytes) -> bytes:
    """The database header less the bytes a write changes (file change counter, page count,
    freelist, version-valid-for); the rest (page size, encoding, schema cookie, ...) stays."""
    return image[:24] + image[40:92]


def page_size(image: bytes) -> int:
    size = int.from_bytes(image[16:18], "big")
    return 65536 if size == 1 else size


def _schema_page_numbers(image: bytes) -> list[int] | None:
    """The pages of sqlite_schema (SQLite's dbstat); None where this SQLite lacks dbstat.
    Trap: a dbstat query on a connection that is later deserialised into again can crash
    SQLite 3.40, so this runs on a connection of its own, closed after."""
    connection = sqlite3.connect(":memory:")
    try:
        connection.deserialize(image)
        rows = connection.execute(
            "SELECT pageno FROM dbstat WHERE name IN ('sqlite_schema', 'sqlite_master')"
        ).fetchall()
    except sqlite3.Error:
        return None
    finally:
        connection.close()
    return sorted(row[0] for row in rows)


@dataclass(frozen=True)
class SchemaPages:
    """What an image's schema is read from: the stable header and every page of sqlite_schema
    (page 1 after its header). Two images that match here have the same schema."""

    header: bytes
    pages: tuple[tuple[int, bytes], ...]  # (byte offset, bytes)

    @classmethod
    def of(cls, image: bytes) -> SchemaPages | None:
        numbers = _schema_page_numbers(image) if len(image) >= HEADER else None
        if not numbers:
            return None
        size = page_size(image)
        offsets = [HEADER if n == 1 else (n - 1) * size for n in numbers]
        pages = tuple(
            (start, image[start : n * size]) for start, n in zip(offsets, numbers, strict=True)
        )
        return cls(stable_header(image), pages)

    def matches(self, image: bytes) -> bool:
        if stable_header(image) != self.header:
            return False
        return all(image[start : start + len(data)] == data for start, data in self.pages)


class _Lent(sqlite3.Connection):
    """A connection that knows the schema layout it parsed."""

    layout: SchemaPages | None = None


class ConnectionPool:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._layouts: list[SchemaPages] = []
        self._idle: list[_Lent] = []

    def _layout(self, image: bytes) -> SchemaPages | None:
        with self._lock:
            known = next((layout for layout in self._layouts if layout.matches(image)), None)
        if known is not None or len(self._layouts) >= MAX_LAYOUTS:
            return known
        found = SchemaPages.of(image)
        if found is None:
            return None
        with self._lock:  # another thread may have added the same layout meanwhile
            known = next((layout for layout in self._layouts if layout == found), None)
            if known is None:
                self._layouts.append(found)
        return known or found

    def borrow(self, image: bytes) -> sqlite3.Connection:
        """A connection holding a private copy of `image`, rows as `sqlite3.Row`."""
        layout = self._layout(image)
        connection = None
        if layout is not None:
            with self._lock:
                for i in range(len(self._idle) - 1, -1, -1):
                    if self._idle[i].layout is layout:
                        connection = self._idle.pop(i)
                        break
        if connection is not None:
            try:
                connection.deserialize(image)
                return connection
            except sqlite3.Error:
                connection.close()
        return _opened(image, layout)

    def give_back(self, connection: sqlite3.Connection) -> None:
        """Returns a borrowed connection; the caller must not use it again."""
        lent = isinstance(connection, _Lent) and connection.layout is not None
        if lent and not connection.in_transaction:
            with self._lock:
                if len(self._idle) < MAX_IDLE:
                    self._idle.append(connection)  # type: ignore[arg-type]
                    return
        connection.close()


def _opened(image: bytes, layout: SchemaPages | None) -> _Lent:
    connection = sqlite3.connect(
        ":memory:", check_same_thread=False, isolation_level=None, factory=_Lent
    )
    connection.deserialize(image)
    connection.row_factory = sqlite3.Row
    connection.layout = layout
    return connection


POOL = ConnectionPool()
borrow = POOL.borrow
give_back = POOL.give_back
