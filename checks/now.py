"""The world's now (design §1.1): a scenario ends at its dispute time, the complaint's.

No record of any table is dated after it: fx and tax rows (`effective_from`), events, invoices,
payments, usage periods (their start), credit notes, price announcements, the customer and its
subscriptions. Dates are compared in the customer's timezone, stamps as UTC moments.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from datetime import date

# (table, column, kind): a UTC stamp, or a local calendar date
STAMPS = (
    ("subscription_events", "occurred_at"),
    ("invoices", "issued_at"),
    ("payments", "paid_at"),
    ("credit_notes", "created_at"),
    ("plan_prices", "announced_at"),
    ("customers", "created_at"),
    ("subscriptions", "started_at"),
    ("usage_corrections", "recorded_at"),
)
DATES = (
    ("fx_rates", "date"),
    ("tax_rates", "effective_from"),
    ("usage_records", "period_start"),
    ("supply_sites", "until"),
)


def after_now_problems(db: sqlite3.Connection, local: Callable[[str], date]) -> list[str]:
    """One line per table holding a record dated after the dispute opened."""
    opened = db.execute("SELECT opened_at FROM disputes").fetchone()[0]
    today = local(opened).isoformat()
    problems = []
    for table, column in STAMPS:
        (count,) = db.execute(
            f"SELECT COUNT(*) FROM {table} WHERE {column} > ?", (opened,)
        ).fetchone()
        if count:
            problems.append(f"{count} {table} row(s) with {column} after the dispute ({opened})")
    for table, column in DATES:
        (count,) = db.execute(
            f"SELECT COUNT(*) FROM {table} WHERE {column} > ?", (today,)
        ).fetchone()
        if count:
            problems.append(f"{count} {table} row(s) with {column} after the dispute day {today}")
    return problems
