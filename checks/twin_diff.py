"""A counterfactual twin against its scenario (issue 39 item 6, `env.generation.twins`).

A twin is its scenario's world with the fault's records set right, so the two databases may
differ only there: the invoices the fault overcharged (re-billed, or gone where no invoice
should exist) with their lines, payments and credit notes; the payments a kept account balance
moves once those invoices are right (an `account_credit` application and the charge beside
it, on an invoice that draws on the balance in either world); and the status of a faulted
subscription whose cancellation billing never processed, set to canceled only where the
cancellation took effect by the dispute (a pending one stays active). Every invoice the twin's
complaint names exists in the twin. `checks.validate --split eval-twins` runs it on each twin.
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Iterable

from env.engine.calendar import utc_to_local_date
from env.ledger_env import open_database
from env.scenario import Scenario, reveal_truth

Row = tuple[object, ...]
# tables whose rows belong to an invoice, and the column naming it
OF_INVOICE = {"invoices": 0, "invoice_lines": 0, "payments": 1, "credit_notes": 1}
BALANCE_METHOD = "account_credit"  # a payment drawn from the customer's kept balance
_INVOICE_ID = re.compile(r"INV-[0-9A-Z]{4,12}")


def _tables(connection: sqlite3.Connection) -> dict[str, list[Row]]:
    names = [
        r[0] for r in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
    ]
    return {n: [tuple(r) for r in connection.execute(f'SELECT * FROM "{n}"')] for n in names}


def _balance_invoices(rows: Iterable[Row]) -> set[object]:
    """Invoices with a payment drawn from the kept balance (payments: id, invoice, ...)."""
    return {r[1] for r in rows if r[6] == BALANCE_METHOD}


def _ended_by(twin: sqlite3.Connection, subscription_id: object, today: str) -> bool:
    """Whether the subscription's service ended by `today` in the twin: its last invoice's
    charge stops (its proration end, else its period end) on or before that day."""
    ends = [
        json.loads(inputs).get("proration_end") or period_end
        for period_end, inputs in twin.execute(
            "SELECT period_end, inputs FROM invoices WHERE subscription_id = ?", (subscription_id,)
        )
    ]
    return bool(ends) and max(ends) <= today


def twin_problems(scenario: Scenario, twin: Scenario) -> list[str]:
    """Every difference between the twin and its scenario outside the fault's records and
    what their repair must move, and every invoice the twin's complaint names that it lacks."""
    faulted = set(reveal_truth(scenario).overcharges)
    before, after = open_database(scenario.database), open_database(twin.database)
    try:
        old, new = _tables(before), _tables(after)
        moved = _balance_invoices(old["payments"]) | _balance_invoices(new["payments"])
        fault_subs = {r[2] for r in old["invoices"] if r[0] in faulted}
        tz = new["customers"][0][7]
        today = utc_to_local_date(twin.opened_at, str(tz)).isoformat()
        problems = []
        for table in sorted(old.keys() | new.keys()):
            gone = [r for r in old.get(table, []) if r not in new.get(table, [])]
            added = [r for r in new.get(table, []) if r not in old.get(table, [])]
            if table == "subscriptions":
                problems += _status_problems(after, gone, added, fault_subs, today)
                continue
            column = OF_INVOICE.get(table)
            allowed = faulted | moved if table == "payments" else faulted
            for row in gone + added:
                if column is None or row[column] not in allowed:
                    problems.append(f"{table} row {row[:3]} differs outside the fault's records")
        kept = {r[0] for r in new["invoices"]}
        problems += [
            f"the complaint names {i}, which the twin does not have"
            for i in dict.fromkeys(_INVOICE_ID.findall(twin.complaint))
            if i not in kept
        ]
        return problems
    finally:
        before.close()
        after.close()


def _status_problems(
    twin_db: sqlite3.Connection, gone: list[Row], added: list[Row], fault_subs: set[object],
    today: str,
) -> list[str]:  # fmt: skip
    """Subscriptions (id, customer, plan, seats, status, ...) may change only in status, from
    active to canceled, on a faulted invoice's subscription whose service ended by the dispute."""
    was = {r[0]: r for r in gone}
    problems = []
    for row in added:
        old = was.pop(row[0], None)
        if (
            old is None
            or old[:4] + old[5:] != row[:4] + row[5:]
            or (old[4], row[4])
            != (
                "active",
                "canceled",
            )
        ):
            problems.append(f"subscription {row[0]} differs outside the fault's records")
        elif row[0] not in fault_subs or not _ended_by(twin_db, row[0], today):
            problems.append(f"subscription {row[0]} canceled in the twin before its service ended")
    problems += [f"subscription {sub} differs outside the fault's records" for sub in was]
    return problems
