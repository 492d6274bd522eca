"""World invariants (design §1.1), checked on a scenario's frozen database.

`checks.validate` runs these for every scenario it replays. They read only the tables an agent
could read, plus the truth's list of faulted invoices: every invoice the fault did not touch
must follow the billing rules exactly, and nothing in the timeline may contradict causality
(no invoice before its subscription, no payment before its invoice, no invoice reflecting a
later event, usage in arrears, active subscriptions invoicing every period up to the dispute),
each subscription's events are one state machine's (`checks.states`) and no record is dated
after the dispute (`checks.now`).
"""

from __future__ import annotations

import json
import sqlite3
from collections import defaultdict
from datetime import date, time
from fractions import Fraction
from itertools import pairwise

from checks.now import after_now_problems
from checks.states import state_problems
from checks.timeline import timeline_problems
from env.engine.billing import compute_invoice, previous_period_start
from env.engine.calendar import FxLock, fx_rate_day, local_to_utc, utc_to_local_date
from env.engine.money import parse_rate
from env.engine.records import inputs_from_json
from env.engine.supply import SupplySite, taxed_in


def world_problems(connection: sqlite3.Connection, faulted: set[str]) -> list[str]:
    """Every broken invariant, as one line each; `faulted` = invoice ids the fault touched."""
    world = _World(connection)
    problems: list[str] = []
    problems += world.causality()
    problems += world.correction_times()
    problems += world.continuity(faulted)
    problems += timeline_problems(connection, world.local, faulted)
    problems += state_problems(connection, world.local)
    problems += after_now_problems(connection, world.local)
    for row in world.invoices:
        problems += world.engine_reproduces(row)
        if row["id"] not in faulted:
            problems += [f"{row['id']}: {p}" for p in world.rule_deviations(row)]
    problems += analyst_problems(connection, faulted)
    return problems


def analyst_problems(connection: sqlite3.Connection, faulted: set[str]) -> list[str]:
    """What a careful billing analyst would credit on an invoice the fault did not touch
    (design §1.1, "nothing an analyst would credit is correct"): usage billed from a day of
    the free trial, the previous period's usage billed on a plan other than the one that
    period was billed on (a scheduled change), a credit note called partial on the whole
    total. Reads only what the tools show."""
    world = _World(connection)
    problems = []
    for row in world.invoices:
        if row["id"] in faulted:
            continue
        problems += [f"{row['id']}: {p}" for p in world.usage_an_analyst_would_query(row, faulted)]
    totals = {r["id"]: r["total_cents"] for r in world.invoices}
    for n in world.notes:
        if "partial" in n["reason"].lower() and n["amount_cents"] >= totals[n["invoice_id"]]:
            problems.append(f"credit note {n['id']} says partial but credits the whole total")
    return problems


class _World:
    def __init__(self, connection: sqlite3.Connection) -> None:
        db = connection
        db.row_factory = sqlite3.Row
        self.customer = db.execute("SELECT * FROM customers").fetchone()
        self.tz: str = self.customer["timezone"]
        self.subs = {r["id"]: r for r in db.execute("SELECT * FROM subscriptions")}
        self.invoices = db.execute("SELECT * FROM invoices ORDER BY issued_at, id").fetchall()
        self.payments = db.execute("SELECT * FROM payments ORDER BY paid_at, id").fetchall()
        self.events: dict[str, list[sqlite3.Row]] = defaultdict(list)
        for e in db.execute("SELECT * FROM subscription_events ORDER BY subscription_id, seq"):
            self.events[e["subscription_id"]].append(e)
        self.usage_rows = db.execute("SELECT * FROM usage_records").fetchall()
        self.corrections = {  # units a period gained after its first count (contract v5)
            (r[0], r[1]): r[2]
            for r in db.execute("SELECT subscription_id, period_end, units FROM usage_corrections")
        }
        self.correction_stamps = db.execute(
            "SELECT subscription_id, period_end, recorded_at FROM usage_corrections"
        ).fetchall()
        self.sites: dict[str, SupplySite] = {  # a service site of a subscription's own (v6)
            r[0]: (r[1], r[2])
            for r in db.execute("SELECT subscription_id, jurisdiction, until FROM supply_sites")
        }
        self.tax = db.execute("SELECT * FROM tax_rates").fetchall()
        self.fx = {(r["quote"], r["date"]): r["rate"] for r in db.execute("SELECT * FROM fx_rates")}
        self.notes = db.execute("SELECT * FROM credit_notes").fetchall()
        self.dispute = db.execute("SELECT * FROM disputes").fetchone()

    def local(self, stamp: str) -> date:
        return utc_to_local_date(stamp, self.tz)

    # timeline ---------------------------------------------------------------------------
    def causality(self) -> list[str]:
        problems = []
        opened = self.dispute["opened_at"]
        issued = {r["id"]: r["issued_at"] for r in self.invoices}
        for r in self.invoices:
            sub = self.subs[r["subscription_id"]]
            if r["issued_at"] < sub["started_at"]:
                problems.append(f"{r['id']} issued before {sub['id']} was created")
            inputs = json.loads(r["inputs"])
            day = self.local(r["issued_at"])
            if not r["period_start"] <= day.isoformat() < r["period_end"]:
                problems.append(f"{r['id']} issued on {day}, outside its period (in advance)")
            change = inputs["plan_change_date"]
            if change is not None and change > r["period_start"]:
                problems.append(f"{r['id']} prorates a change on {change} inside its own period")
            if inputs["fx_rate_date"] > day.isoformat():
                problems.append(f"{r['id']} converts at the rate of a later day")
            if inputs["usage_units"] is not None and self._usage_record(r) is None:
                problems.append(f"{r['id']} bills usage without a finished usage period")
            if r["total_cents"] < 0:
                problems.append(f"{r['id']} has a negative total")
        for p in self.payments:
            if p["paid_at"] < issued[p["invoice_id"]]:
                problems.append(f"payment {p['id']} is dated before invoice {p['invoice_id']}")
        totals = {r["id"]: r["total_cents"] for r in self.invoices}
        credited: dict[str, int] = defaultdict(int)
        for n in self.notes:  # support's earlier credits: after the invoice, within its total
            credited[n["invoice_id"]] += n["amount_cents"]
            if n["created_at"] < issued[n["invoice_id"]]:
                problems.append(f"credit note {n['id']} is dated before invoice {n['invoice_id']}")
        problems += [
            f"{i} is credited {cents} cents, beyond its total"
            for i, cents in credited.items()
            if cents > totals[i]
        ]
        stamps = [r["issued_at"] for r in self.invoices] + [p["paid_at"] for p in self.payments]
        stamps += [e["occurred_at"] for es in self.events.values() for e in es]
        stamps += [n["created_at"] for n in self.notes]
        if stamps and max(stamps) > opened:
            problems.append(f"a record is dated after the dispute opened ({opened})")
        return problems

    def correction_times(self) -> list[str]:
        """A usage correction is recorded as real ones are (world v6): after its period ended
        (local midnight) and before the invoice that bills it was issued."""
        issued = {(r["subscription_id"], r["period_start"]): r["issued_at"] for r in self.invoices}
        problems = []
        for sub, end, recorded in self.correction_stamps:
            opened = local_to_utc(date.fromisoformat(end), time(0, 0), self.tz)
            bill = issued.get((sub, end))
            if recorded < opened or (bill is not None and recorded >= bill):
                problems.append(f"a usage correction of {sub} for the period to {end} is recorded"
                                f" at {recorded}, not between its end and its invoice")  # fmt: skip
        return problems

    def _usage_parts(self, row: sqlite3.Row) -> list[int]:
        """Units of the previous period's usage records the invoice bills (two parts around a
        plan change), from `usage_start` where a trial ended inside that period."""
        before = previous_period_start(date.fromisoformat(row["period_start"])).isoformat()
        before = max(before, json.loads(row["inputs"]).get("usage_start") or before)
        return [
            u["units"]
            for u in sorted(self.usage_rows, key=lambda u: u["period_start"])
            if u["subscription_id"] == row["subscription_id"]
            and before <= u["period_start"]
            and u["period_end"] <= row["period_start"]
        ]

    def _usage_record(self, row: sqlite3.Row) -> int | None:
        parts = self._usage_parts(row)
        fixed = self.corrections.get((row["subscription_id"], row["period_start"]), 0)
        return sum(parts) + fixed if parts else None

    def continuity(self, faulted: set[str]) -> list[str]:
        """Active subscriptions invoice every period up to the dispute; a stop has a reason.
        A subscription the fault billed wrongly (after its cancellation) is left out."""
        problems = []
        opened = self.local(self.dispute["opened_at"]).isoformat()
        by_sub: dict[str, list[sqlite3.Row]] = defaultdict(list)
        for r in self.invoices:
            inputs = json.loads(r["inputs"])
            if inputs["proration_start"] != r["period_end"]:  # not a trial's zero invoice
                by_sub[r["subscription_id"]].append(r)
        for sub_id, sub in self.subs.items():
            rows = sorted(by_sub.get(sub_id, []), key=lambda r: r["period_start"])
            if any(r["id"] in faulted for r in rows) and sub["status"] == "active":
                continue
            kinds = {e["type"] for e in self.events[sub_id]}
            if sub["status"] != "active":
                if not kinds & {"canceled", "cancel_requested"}:
                    problems.append(f"{sub_id} is {sub['status']} without a cancellation event")
                continue
            for a, b in pairwise(rows):
                if a["period_end"] < b["period_start"]:
                    problems.append(f"{sub_id} skipped {a['period_end']} to {b['period_start']}")
            if rows and rows[-1]["period_end"] < opened:
                problems.append(f"active {sub_id} stopped invoicing at {rows[-1]['period_end']}")
        return problems

    # billing rules ----------------------------------------------------------------------
    def engine_reproduces(self, row: sqlite3.Row) -> list[str]:
        amounts = compute_invoice(inputs_from_json(row["inputs"]))
        if amounts.total_cents != row["total_cents"] or amounts.tax_cents != row["tax_cents"]:
            return [f"{row['id']}: recorded inputs do not reproduce the billed total"]
        return []

    def rule_deviations(self, row: sqlite3.Row) -> list[str]:
        inputs = inputs_from_json(row["inputs"])
        day = self.local(row["issued_at"])
        problems = []
        jurisdiction = self._jurisdiction(day, row["subscription_id"])
        if inputs.tax_jurisdiction != jurisdiction:
            problems.append(f"taxed under {inputs.tax_jurisdiction}, not {jurisdiction}")
        if inputs.tax_exempt != self._exempt(day, row["subscription_id"]):
            problems.append(f"tax_exempt {inputs.tax_exempt} on {day}")
        rate = self._tax_rate(jurisdiction, day)
        if not inputs.tax_exempt and inputs.tax_rate != rate:
            problems.append(f"tax rate {inputs.tax_rate} is not the rate {rate} in force on {day}")
        fx_date = fx_rate_day(day, row["subscription_id"], self._fx_lock())
        if inputs.fx_rate_date != fx_date:
            problems.append(f"fx rate of {inputs.fx_rate_date}, not of {fx_date} (issued {day})")
        elif self.fx and any(
            date.fromisoformat(d).weekday() >= 5 for (quote, d) in self.fx if quote
        ):
            problems.append("an fx rate is recorded on a weekend")
        elif inputs.fx_rate != self._fx(inputs.currency, fx_date):
            problems.append(f"fx rate {inputs.fx_rate} is not the rate recorded for {day}")
        if inputs.usage_units is not None and inputs.usage_units != self._usage_record(row):
            problems.append("usage units differ from the usage record")
        parts = self._usage_parts(row)
        split = inputs.usage_units_before_change
        change = inputs.plan_change_date
        before = previous_period_start(inputs.period_start)
        before = max(before, inputs.usage_start or before)  # trial usage is not billed
        crossed = change is not None and inputs.previous_plan is not None
        inside = crossed and before < change < inputs.period_start  # type: ignore[operator]
        if inputs.usage_units is not None and inside and len(parts) != 2:
            problems.append("usage across a plan change is not split at the change")
        if inputs.usage_units is not None and split != (parts[0] if len(parts) == 2 else None):
            problems.append("usage split differs from the usage records around the change")
        return problems

    def trial_end(self, subscription_id: str) -> date | None:
        """The local day the free trial ended (the last `trial_ended`: an extension moves it)."""
        ended = [e for e in self.events[subscription_id] if e["type"] == "trial_ended"]
        return self.local(ended[-1]["occurred_at"]) if ended else None

    def usage_an_analyst_would_query(self, row: sqlite3.Row, faulted: set[str]) -> list[str]:
        inputs = inputs_from_json(row["inputs"])
        if inputs.usage_units is None:
            return []
        problems = []
        before = previous_period_start(inputs.period_start)
        first = max(before, inputs.usage_start or before)
        trial = self.trial_end(row["subscription_id"])
        if trial is not None and first < trial and first < inputs.period_start:
            problems.append(f"bills usage from {first}, inside the free trial (ended {trial})")
        previous = [
            r
            for r in self.invoices
            if r["subscription_id"] == row["subscription_id"]
            and r["period_start"] == before.isoformat()
            and r["period_end"] == row["period_start"]
        ]
        used_on = (inputs.scheduled_from_plan or inputs.plan).plan_id
        if inputs.previous_plan is None and previous and previous[-1]["id"] not in faulted:
            billed_on = json.loads(previous[-1]["inputs"])["plan"]["plan_id"]
            if used_on != billed_on:
                problems.append(
                    f"bills {before}'s usage on {used_on}, not on {billed_on}, the plan "
                    "that period was billed on"
                )
        return problems

    def _fx_lock(self) -> FxLock | None:
        """The customer's documented rate lock (subscription, rate date, window), if any."""
        c = self.customer
        if c["fx_rate_lock_date"] is None:
            return None
        keys = ("subscription_id", "date", "from", "until")
        sub, day, start, end = (str(c[f"fx_rate_lock_{k}"]) for k in keys)
        return (sub, day, start, end)

    def _jurisdiction(self, day: date, subscription_id: str) -> str:
        """Where an invoice of the subscription issued that day is taxed (`env.engine.supply`):
        its service site while it applies, else the customer's jurisdiction then."""
        c = self.customer
        move = (c["previous_tax_jurisdiction"], c["tax_jurisdiction_since"])
        site = self.sites.get(subscription_id)
        return taxed_in(day, str(c["tax_jurisdiction"]), move, site)

    def _exempt(self, day: date, subscription_id: str) -> bool:
        """The certificate covers the issue day and applies where the invoice is taxed, unless
        the subscription's timeline withholds it that day (`exemption_withheld`, contract v6)."""
        c = self.customer
        start, end = c["exemption_valid_from"], c["exemption_valid_until"]
        if start is None or not start <= day.isoformat() < end:
            return False
        for e in self.events[subscription_id]:
            if e["type"] == "exemption_withheld":
                window = json.loads(e["details"])
                if window["issued_from"] <= day.isoformat() < window["issued_until"]:
                    return False
        where = c["exemption_jurisdiction"]
        return where in (None, self._jurisdiction(day, subscription_id))

    def _tax_rate(self, jurisdiction: str, day: date) -> Fraction | None:
        text = day.isoformat()
        for r in self.tax:
            started = r["jurisdiction"] == jurisdiction and r["effective_from"] <= text
            if started and (r["effective_to"] is None or text < r["effective_to"]):
                return parse_rate(r["rate"])
        return None

    def _fx(self, currency: str, day: date) -> Fraction | None:
        if currency == "USD":
            return Fraction(1)
        text = self.fx.get((currency, day.isoformat()))
        return None if text is None else parse_rate(text)
