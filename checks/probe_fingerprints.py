"""Fingerprint tokens: every value shape the public tables hold, one token per shape.

Design §1.2: a fault changes a value, never a format. So every column, JSON key path and
invoice-line description of a scenario's database becomes a token `table.column=<shape>`,
the value with digits, dates, timestamps and ids masked (`subscription_events.details
[canceled].effective=<date>`, `invoice_lines.description=<n> units`). A zero is kept apart
(`<0>`): "0 included" is a shape of its own. The probe asks whether a token names a label.
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Iterator
from functools import lru_cache
from typing import Any

TABLES = (
    "customers", "plans", "plan_prices", "coupons", "subscriptions", "subscription_events",
    "tax_rates", "fx_rates", "usage_records", "invoices", "invoice_lines", "payments",
    "credit_notes", "disputes",
)  # fmt: skip
JSON_COLUMNS = {("subscription_events", "details"), ("invoices", "inputs")}
SKIPPED = {("disputes", "message")}  # the complaint: the text models' business, not a shape
_MASKS = (
    (re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z"), "<time>"),
    (re.compile(r"\d{4}-\d{2}-\d{2}"), "<date>"),
    (re.compile(r"[\w.+-]+@[\w.-]+"), "<email>"),
    (re.compile(r"\b(?:CUS|INV|SUB|PAY|CN|TXC|DSP|PLN)-[A-Z0-9]+"), "<id>"),
)
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
_PIECES = re.compile(r", |: ")


def _number(match: re.Match[str]) -> str:
    return "<0>" if float(match.group()) == 0 else "<n>"


def mask(value: Any) -> str:
    """A value's shape: ids, dates, timestamps, emails and numbers masked; NULL as `null`."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return _mask_text(str(value))


@lru_cache(maxsize=1 << 16)  # dates, ids and amounts repeat across rows and scenarios
def _mask_text(text: str) -> str:
    for pattern, token in _MASKS:
        text = pattern.sub(token, text)
    return _NUMBER.sub(_number, text)


def _json_paths(prefix: str, value: Any) -> Iterator[str]:
    if isinstance(value, dict):
        if not value:
            yield f"{prefix}={{}}"
        for key, inner in value.items():
            yield from _json_paths(f"{prefix}.{key}", inner)
    elif isinstance(value, list):
        for inner in value:
            yield from _json_paths(f"{prefix}[]", inner)
    else:
        yield f"{prefix}={mask(value)}"


def _description(text: str) -> Iterator[str]:
    """The whole line shape and each of its comma/colon-separated pieces."""
    shape = mask(text)
    yield f"invoice_lines.description={shape}"
    for piece in _PIECES.split(shape):
        yield f"invoice_lines.description~{piece}"


def _row_tokens(table: str, names: list[str], row: tuple[Any, ...]) -> Iterator[str]:
    kind = row[names.index("type")] if table == "subscription_events" else None
    for column, value in zip(names, row, strict=True):
        if (table, column) in SKIPPED:
            continue
        if (table, column) in JSON_COLUMNS:
            parsed = json.loads(value)
            yield from _json_paths(f"{table}.{column}", parsed)
            if kind is not None:  # an event vocabulary is per type: which keys go with which
                yield from _json_paths(f"{table}.{column}[{kind}]", parsed)
        elif (table, column) == ("invoice_lines", "description"):
            yield from _description(value)
        else:
            yield f"{table}.{column}={mask(value)}"


def tokens_of(db: sqlite3.Connection) -> frozenset[str]:
    """Every token of one scenario's public tables (a set: presence, not counts)."""
    tokens: set[str] = set()
    for table in TABLES:
        cursor = db.execute(f"SELECT * FROM {table}")
        names = [c[0] for c in cursor.description]
        for row in cursor:
            tokens.update(_row_tokens(table, names, row))
    return frozenset(tokens)


def tokens_of_database(image: bytes) -> frozenset[str]:
    db = sqlite3.connect(":memory:")
    try:
        db.deserialize(image)
        return tokens_of(db)
    finally:
        db.close()
