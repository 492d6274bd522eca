"""Realism checks (world v6, issue 39 item 7): properties a real billing system's records keep,
checked on a scenario's frozen database by `checks.validate`, which prints a count per check.

- `fx_moves`: a currency's rate moves at most `FX_DAILY_MOVE` per business day between two
  recorded days less than a week apart (major currencies rarely move 1.5 % in a day);
- `tax_rows`: one tax row in force per (jurisdiction, day), and a new row changes the rate;
- `certificates`: an exemption certificate is valid `CERTIFICATE_DAYS` long, from a day after
  the customer existed;
- `trial_changes`: a plan change logged before its subscription's trial ended is billed by the
  trial rule (the first paid invoice bills the plan in force then), never prorated;
- `dispute_window`: the dispute opens `DISPUTE_DAYS` after the customer's last invoice (a
  counterfactual twin keeps its scenario's dispute, so the window is its scenario's).
Each returns one line per record that breaks it; `tests/checks/test_realism.py` shows each one
flagging the world it forbids.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from datetime import date, timedelta
from fractions import Fraction
from itertools import pairwise

from env.engine.calendar import utc_to_local_date
from env.engine.money import parse_rate

FX_DAILY_MOVE = Fraction(15, 1000)  # per business day between two recorded days
FX_NEAR_DAYS = 7  # recorded days further apart are not compared
CERTIFICATE_DAYS = (90, 1461)  # a quarter to four years
DISPUTE_DAYS = (2, 12)


def _business_days(first: date, last: date) -> int:
    """Weekdays in (first, last]: how many publications apart two rate days are."""
    return sum((first + timedelta(days=n)).weekday() < 5 for n in range(1, (last - first).days + 1))


def fx_moves(db: sqlite3.Connection) -> list[str]:
    rows = db.execute("SELECT quote, date, rate FROM fx_rates ORDER BY quote, date").fetchall()
    problems = []
    for (q1, d1, r1), (q2, d2, r2) in pairwise(rows):
        first, last = date.fromisoformat(d1), date.fromisoformat(d2)
        if q1 != q2 or (last - first).days > FX_NEAR_DAYS:
            continue
        move = abs(parse_rate(r2) / parse_rate(r1) - 1)
        if move > FX_DAILY_MOVE * max(1, _business_days(first, last)):
            problems.append(f"USD/{q1} moves {float(move):.2%} from {d1} to {d2}")
    return problems


def tax_rows(db: sqlite3.Connection) -> list[str]:
    rows = db.execute(
        "SELECT jurisdiction, rate, effective_from, effective_to FROM tax_rates"
        " ORDER BY jurisdiction, effective_from"
    ).fetchall()
    problems = []
    for (j1, rate1, _, to1), (j2, rate2, from2, _) in pairwise(rows):
        if j1 != j2:
            continue
        if to1 is None or to1 > from2:
            problems.append(f"{j1}: two tax rows in force on {from2}")
        elif parse_rate(rate1) == parse_rate(rate2):
            problems.append(f"{j1}: a row from {from2} repeats the rate {rate1}")
    return problems


def certificates(db: sqlite3.Connection) -> list[str]:
    cert, start, end, created, tz = db.execute(
        "SELECT exemption_certificate_id, exemption_valid_from, exemption_valid_until,"
        " created_at, timezone FROM customers"
    ).fetchone()
    if cert is None:
        return []
    problems = []
    length = (date.fromisoformat(end) - date.fromisoformat(start)).days
    if not CERTIFICATE_DAYS[0] <= length <= CERTIFICATE_DAYS[1]:
        problems.append(f"certificate {cert} is valid {length} days")
    if start < utc_to_local_date(created, tz).isoformat():
        problems.append(f"certificate {cert} is valid from {start}, before the customer existed")
    return problems


def _trial_ends(db: sqlite3.Connection, local: Callable[[str], date]) -> dict[str, date]:
    """Each subscription's last `trial_ended` local day (an extension moves it)."""
    ends: dict[str, date] = {}
    for sub, stamp in db.execute(
        "SELECT subscription_id, occurred_at FROM subscription_events"
        " WHERE type = 'trial_ended' ORDER BY subscription_id, seq"
    ):
        ends[sub] = local(stamp)
    return ends


def trial_changes(db: sqlite3.Connection) -> list[str]:
    tz = db.execute("SELECT timezone FROM customers").fetchone()[0]
    ends = _trial_ends(db, lambda stamp: utc_to_local_date(stamp, tz))
    problems = []
    for invoice_id, sub, inputs in db.execute(
        "SELECT id, subscription_id, inputs FROM invoices ORDER BY issued_at, id"
    ):
        recorded = json.loads(inputs)
        change, end = recorded.get("plan_change_date"), ends.get(sub)
        if change is not None and end is not None and change < end.isoformat():
            problems.append(f"{invoice_id} prorates a plan change of {change}, inside the trial")
    return problems


def dispute_window(db: sqlite3.Connection) -> list[str]:
    tz, opened = db.execute(
        "SELECT c.timezone, d.opened_at FROM customers c, disputes d"
    ).fetchone()
    issued = [utc_to_local_date(s, tz) for (s,) in db.execute("SELECT issued_at FROM invoices")]
    if not issued:
        return []
    gap = (utc_to_local_date(opened, tz) - max(issued)).days
    if not DISPUTE_DAYS[0] <= gap <= DISPUTE_DAYS[1]:
        return [f"the dispute opens {gap} days after the last invoice ({max(issued)})"]
    return []


CHECKS: dict[str, Callable[[sqlite3.Connection], list[str]]] = {
    "fx_moves": fx_moves,
    "tax_rows": tax_rows,
    "certificates": certificates,
    "trial_changes": trial_changes,
    "dispute_window": dispute_window,
}


def realism_problems(db: sqlite3.Connection) -> dict[str, list[str]]:
    """Check name -> the lines it reports on this database (every check, empty when it holds)."""
    return {name: check(db) for name, check in CHECKS.items()}
