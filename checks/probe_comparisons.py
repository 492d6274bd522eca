"""The one-comparison checks: a record against its source of truth (design §1.2, look-alikes).

Each check is a small pure function over a scenario's public database (`checks.probe_ledger`,
the tables the agent's tools read) returning the ids of the records where the comparison
disagrees. The probe measures how often each fires and how precisely that names a label: at
L2 and L3 every signal must also have a legitimate cause, so no single comparison may be the
answer. `CATALOGUE` at the end lists them all (name, what it compares, function).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date
from fractions import Fraction

from checks.probe_ledger import Bill, Ledger, cents, immediate, ledger_of, rate
from checks.probe_shapes import (
    coupon_removed_after_cancel,
    first_paid_stale_fx,
    first_paid_start_vs_issue_day,
    plan_switch_without_event,
)
from env.engine.calendar import add_months, utc_date

Check = Callable[[Ledger], frozenset[str]]
InvoiceTest = Callable[[Ledger, Bill], bool]


def each_invoice(test: InvoiceTest) -> Check:
    """A check from a per-invoice test: the ids of the invoices it holds for."""

    def check(led: Ledger) -> frozenset[str]:
        return frozenset(inv.id for inv in led.invoices if test(led, inv))

    check.__name__ = test.__name__
    return check


def _plan(inv: Bill) -> dict[str, object]:
    return inv.inputs["plan"]


# invoice inputs against the timeline -------------------------------------------------------


def plan_vs_timeline(led: Ledger, inv: Bill) -> bool:
    expected = led.in_force(inv.sub, inv.start, "plan_changed", "plan_id")
    return expected is not None and _plan(inv)["plan_id"] != expected


def seats_vs_timeline(led: Ledger, inv: Bill) -> bool:
    expected = led.in_force(inv.sub, inv.start, "seats_changed", "seats")
    return expected is not None and inv.inputs["seats"] != expected


def plan_vs_subscription_row(led: Ledger) -> frozenset[str]:
    rows = led.subs
    return frozenset(
        i.id for i in led.last_invoices() if _plan(i)["plan_id"] != rows[i.sub]["plan_id"]
    )


def seats_vs_subscription_row(led: Ledger) -> frozenset[str]:
    rows = led.subs
    return frozenset(i.id for i in led.last_invoices() if i.inputs["seats"] != rows[i.sub]["seats"])


def coupon_missing(led: Ledger, inv: Bill) -> bool:
    """A coupon applied (and not removed) before the period, its window open: none billed."""
    coupon = led.coupons.get(led.coupon_on(inv.sub, inv.start) or "")
    if coupon is None or inv.inputs["coupon"] is not None or inv.subtotal <= 0:
        return False
    return coupon["valid_from"] <= inv.start.isoformat() <= coupon["valid_until"]


def coupon_unexpected(led: Ledger, inv: Bill) -> bool:
    billed = inv.inputs["coupon"]
    return billed is not None and billed["coupon_code"] != led.coupon_on(inv.sub, inv.start)


def plan_change_date_vs_event(led: Ledger, inv: Bill) -> bool:
    """The recorded plan_change_date is no immediate plan_changed event's local day."""
    recorded = inv.day("plan_change_date")
    if recorded is None:
        return False
    days = [e.day for e in led.of_type(inv.sub, "plan_changed") if immediate(e)]
    return recorded not in days


def plan_change_not_prorated(led: Ledger, inv: Bill) -> bool:
    """An immediate change inside the previous period, and no proration recorded."""
    before = add_months(inv.start, -1)
    events = led.of_type(inv.sub, "plan_changed")
    changed = any(before <= e.day < inv.start and immediate(e) for e in events)
    return changed and inv.inputs["plan_change_date"] is None


DATED_BY = {  # a recorded date and the events that set it
    "plan_change_date": ("plan_changed",),
    "proration_start": ("trial_ended",),
    "proration_end": ("canceled", "cancel_requested"),
}


def input_date_is_utc_date(led: Ledger, inv: Bill) -> bool:
    """A recorded date equals its event's UTC date where the local date differs."""
    for key, kinds in DATED_BY.items():
        recorded = inv.day(key)
        for e in led.of_type(inv.sub, *kinds) if recorded else ():
            if utc_date(e.at) == recorded != e.day:
                return True
    return False


def trial_end_vs_proration_start(led: Ledger, inv: Bill) -> bool:
    """The first paid invoice after a trial charges from a day other than the trial's end."""
    end = led.trial_end(inv.sub)
    if end is None or not inv.start < end < inv.end or inv.subtotal <= 0:
        return False
    return inv.day("proration_start") != end


def charged_inside_trial(led: Ledger, inv: Bill) -> bool:
    end = led.trial_end(inv.sub)
    return end is not None and inv.end <= end and inv.subtotal > 0


def trial_days_vs_plan(led: Ledger) -> frozenset[str]:
    """A trial_started event whose length differs from its plan's trial days (extended)."""
    out = set()
    for sub in led.subs:
        created = led.of_type(sub, "created")
        plan = led.plans.get(str(created[0].details.get("plan_id"))) if created else None
        for e in led.of_type(sub, "trial_started"):
            if plan is not None and e.details.get("trial_days") != plan["trial_days"]:
                out.add(sub)
    return frozenset(out)


def invoice_after_cancellation(led: Ledger, inv: Bill) -> bool:
    return any(inv.start >= end for end in led.ends(inv.sub, "canceled"))


def invoice_after_cancel_request(led: Ledger, inv: Bill) -> bool:
    """The same against every cancel_requested event (a withdrawn one included)."""
    return any(inv.start >= end for end in led.ends(inv.sub, "cancel_requested"))


def cancel_date_not_prorated(led: Ledger, inv: Bill) -> bool:
    ends = led.ends(inv.sub, "canceled")
    return any(inv.start < end < inv.end and inv.day("proration_end") != end for end in ends)


def status_vs_timeline(led: Ledger) -> frozenset[str]:
    out = set()
    for sub, row in led.subs.items():
        canceled = bool(led.of_type(sub, "canceled"))
        if (row["status"] == "canceled") != canceled:
            out.add(sub)
    return frozenset(out)


def seats_on_flat_plan(led: Ledger) -> frozenset[str]:
    """Seat changes only happen on per-seat prices (a possible timeline)."""
    out = set()
    for sub in led.subs:
        for e in led.of_type(sub, "seats_changed"):
            plan = led.plans.get(str(led.in_force(sub, e.day, "plan_changed", "plan_id")))
            if plan is not None and plan["pricing"] != "per_seat":
                out.add(f"{sub}#{e.seq}")
    return frozenset(out)


# the customer, the tax table, the fx table ------------------------------------------------


def jurisdiction_vs_customer(led: Ledger, inv: Bill) -> bool:
    return inv.inputs["tax_jurisdiction"] != led.customer["tax_jurisdiction"]


def currency_vs_customer(led: Ledger, inv: Bill) -> bool:
    return inv.inputs["currency"] != led.customer["currency"]


def _covered(led: Ledger, day: date) -> bool:
    c = led.customer
    if not c["exemption_certificate_id"]:
        return False
    return c["exemption_valid_from"] <= day.isoformat() < c["exemption_valid_until"]


def exempt_inside_window(led: Ledger, inv: Bill) -> bool:
    """Tax charged on an invoice issued inside the certificate's window."""
    return _covered(led, inv.issue_day) and not inv.inputs["tax_exempt"] and inv.tax > 0


def exempt_outside_window(led: Ledger, inv: Bill) -> bool:
    return bool(inv.inputs["tax_exempt"]) and not _covered(led, inv.issue_day)


def tax_rate_vs_table(led: Ledger, inv: Bill) -> bool:
    """The recorded rate vs the table's rate for the recorded jurisdiction on the issue day."""
    expected = led.tax_rate(inv.inputs["tax_jurisdiction"], inv.issue_day)
    return expected is not None and rate(inv.inputs["tax_rate"]) != expected


def tax_rate_vs_customer_rate(led: Ledger, inv: Bill) -> bool:
    expected = led.tax_rate(led.customer["tax_jurisdiction"], inv.issue_day)
    return expected is not None and rate(inv.inputs["tax_rate"]) != expected


def _fx(led: Ledger, currency: str, day: date) -> Fraction | None:
    return Fraction(1) if currency == "USD" else led.fx.get((currency, day.isoformat()))


def fx_rate_vs_table(led: Ledger, inv: Bill) -> bool:
    """The recorded rate vs the table's rate on the recorded rate date."""
    recorded = inv.day("fx_rate_date")
    expected = None if recorded is None else _fx(led, inv.inputs["currency"], recorded)
    return rate(inv.inputs["fx_rate"]) != expected


def fx_date_vs_issue_day(led: Ledger, inv: Bill) -> bool:
    return inv.day("fx_rate_date") != inv.issue_day


def fx_rate_vs_issue_day_rate(led: Ledger, inv: Bill) -> bool:
    return rate(inv.inputs["fx_rate"]) != _fx(led, inv.inputs["currency"], inv.issue_day)


# usage, payments, prices ------------------------------------------------------------------


def usage_units_vs_record(led: Ledger, inv: Bill) -> bool:
    """Billed units vs the usage record of the period before (billed in arrears)."""
    billed = inv.inputs["usage_units"]
    return billed is not None and billed != led.usage.get((inv.sub, inv.start.isoformat()))


def usage_unbilled(led: Ledger, inv: Bill) -> bool:
    metered = cents(_plan(inv)["overage_unit_price"]) > 0  # type: ignore[arg-type]
    recorded = (inv.sub, inv.start.isoformat()) in led.usage
    return metered and recorded and inv.inputs["usage_units"] is None


def included_units_vs_plan(led: Ledger, inv: Bill) -> bool:
    plan = led.plans.get(str(_plan(inv)["plan_id"]))
    return plan is not None and _plan(inv)["included_units"] != plan["included_units"]


def unit_price_vs_history(led: Ledger, inv: Bill) -> bool:
    """The recorded unit price vs the plan's price in force at the period start."""
    expected = led.unit_price(str(_plan(inv)["plan_id"]), inv.start)
    return expected is not None and cents(_plan(inv)["unit_price"]) != expected  # type: ignore[arg-type]


def plan_terms_vs_catalog(led: Ledger, inv: Bill) -> bool:
    billed, plan = _plan(inv), led.plans.get(str(_plan(inv)["plan_id"]))
    if plan is None:
        return True
    overage = cents(billed["overage_unit_price"])  # type: ignore[arg-type]
    return (billed["plan_name"], billed["pricing"], overage) != (
        plan["name"], plan["pricing"], plan["overage_unit_price_cents"],
    )  # fmt: skip


def _paid(led: Ledger, inv: Bill, *statuses: str) -> list[int]:
    return [c for c, status, _ in led.payments.get(inv.id, []) if status in statuses]


def succeeded_twice(led: Ledger, inv: Bill) -> bool:
    """Two or more succeeded payments for one invoice (the tool's own hint for a duplicate)."""
    return len(_paid(led, inv, "succeeded")) >= 2


def succeeded_sum_above_total(led: Ledger, inv: Bill) -> bool:
    return sum(_paid(led, inv, "succeeded")) > inv.total


def net_paid_above_total(led: Ledger, inv: Bill) -> bool:
    """Succeeded minus refunded payments above the invoice total."""
    return sum(_paid(led, inv, "succeeded")) - sum(_paid(led, inv, "refunded")) > inv.total


def lines_vs_totals(led: Ledger, inv: Bill) -> bool:
    lines = sum(amount for _, _, amount in inv.lines)
    return lines != inv.subtotal or inv.subtotal - inv.discount + inv.tax != inv.total


# event order --------------------------------------------------------------------------------


def created_first(led: Ledger) -> frozenset[str]:
    """The first event is `created`, and nothing happened before it."""
    out = set()
    for sub, events in led.events.items():
        first = events[0] if events else None
        if first is None or first.type != "created" or any(e.at < first.at for e in events):
            out.add(sub)
    return frozenset(out)


def request_before_confirmation(led: Ledger) -> frozenset[str]:
    """canceled and renewed follow a cancel_requested, reactivated a canceled; trial_ended
    follows trial_started."""
    needs = {"canceled": "cancel_requested", "renewed": "cancel_requested"}
    needs["reactivated"] = "canceled"
    needs["trial_ended"] = "trial_started"
    out = set()
    for sub, events in led.events.items():
        for e in events:
            want = needs.get(e.type)
            if want and not any(p.type == want and p.seq < e.seq for p in events):
                out.add(f"{sub}#{e.seq}")
    return frozenset(out)


def invoice_before_subscription(led: Ledger, inv: Bill) -> bool:
    return inv.issued_at < led.subs[inv.sub]["started_at"]


def change_after_issue(led: Ledger, inv: Bill) -> bool:
    """An invoice reflecting a plan change dated after its own issue day."""
    change = inv.day("plan_change_date")
    return change is not None and change > inv.issue_day


def payment_before_invoice(led: Ledger, inv: Bill) -> bool:
    return any(paid_at < inv.issued_at for _, _, paid_at in led.payments.get(inv.id, []))


# the catalogue --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Comparison:
    name: str
    compares: str  # record -> its source of truth
    check: Check


def _c(compares: str, fn: InvoiceTest | Check, per_invoice: bool = True) -> Comparison:
    check = each_invoice(fn) if per_invoice else fn  # type: ignore[arg-type]
    return Comparison(fn.__name__, compares, check)  # type: ignore[arg-type]


LEDGER = False  # a check over the whole ledger, not one invoice at a time
CATALOGUE: tuple[Comparison, ...] = (
    _c("invoice plan vs plan in force at period start (timeline)", plan_vs_timeline),
    _c("invoice seats vs seats in force at period start (timeline)", seats_vs_timeline),
    _c("last invoice plan vs subscription row plan", plan_vs_subscription_row, LEDGER),
    _c("last invoice seats vs subscription row seats", seats_vs_subscription_row, LEDGER),
    _c("no coupon billed vs coupon_applied before the period, window open", coupon_missing),
    _c("billed coupon vs coupon active on the timeline at period start", coupon_unexpected),
    _c("recorded plan_change_date vs immediate plan_changed local day", plan_change_date_vs_event),
    _c("immediate plan change in the previous period vs no proration", plan_change_not_prorated),
    _c("recorded date vs an event's UTC date (local date differs)", input_date_is_utc_date),
    _c("first paid invoice proration_start vs trial_ended local day", trial_end_vs_proration_start),
    _c("charged period vs trial_ended (period wholly inside the trial)", charged_inside_trial),
    _c("trial_started trial_days vs plan trial_days", trial_days_vs_plan, LEDGER),
    _c("invoice period start vs canceled event's end", invoice_after_cancellation),
    _c("invoice period start vs cancel_requested event's end", invoice_after_cancel_request),
    _c("recorded proration_end vs canceled effective date in the period", cancel_date_not_prorated),
    _c("subscription row status vs canceled event", status_vs_timeline, LEDGER),
    _c("seats_changed event vs plan pricing (per seat)", seats_on_flat_plan, LEDGER),
    _c("recorded tax jurisdiction vs customer jurisdiction", jurisdiction_vs_customer),
    _c("recorded currency vs customer currency", currency_vs_customer),
    _c("tax charged vs certificate window on the issue day", exempt_inside_window),
    _c("tax_exempt vs certificate window on the issue day", exempt_outside_window),
    _c("recorded tax rate vs the recorded jurisdiction rate, issue day", tax_rate_vs_table),
    _c("recorded tax rate vs the customer jurisdiction rate, issue day", tax_rate_vs_customer_rate),
    _c("recorded fx rate vs table rate on the recorded rate date", fx_rate_vs_table),
    _c("recorded fx rate date vs issue day", fx_date_vs_issue_day),
    _c("recorded fx rate vs table rate on the issue day", fx_rate_vs_issue_day_rate),
    _c("billed usage units vs usage record of the previous period", usage_units_vs_record),
    _c("usage record of the previous period vs no usage billed", usage_unbilled),
    _c("recorded included units vs plan included units", included_units_vs_plan),
    _c("recorded unit price vs price history at period start", unit_price_vs_history),
    _c("recorded plan name, pricing, overage price vs plans", plan_terms_vs_catalog),
    _c("count of succeeded payments (>= 2) on one invoice", succeeded_twice),
    _c("sum of succeeded payments vs invoice total", succeeded_sum_above_total),
    _c("succeeded minus refunded payments vs invoice total", net_paid_above_total),
    _c("lines vs subtotal; subtotal - discount + tax vs total", lines_vs_totals),
    _c("event order: created first", created_first, LEDGER),
    _c("event order: a request before its confirmation", request_before_confirmation, LEDGER),
    _c("invoice issue time vs subscription start", invoice_before_subscription),
    _c("recorded plan_change_date vs invoice issue day", change_after_issue),
    _c("payment time vs invoice issue time", payment_before_invoice),
    _c("plan vs the previous invoice's, no plan event between", plan_switch_without_event, LEDGER),
    _c("first paid invoice fx rate date vs its issue day's", first_paid_stale_fx, LEDGER),
    _c("coupon_removed vs a confirmed cancellation before it", coupon_removed_after_cancel, LEDGER),
    _c("first paid invoice charge start vs its issue day", first_paid_start_vs_issue_day, LEDGER),
)  # fmt: skip
CHECK_NAMES: tuple[str, ...] = tuple(c.name for c in CATALOGUE)


def fired_checks(db: sqlite3.Connection) -> dict[str, frozenset[str]]:
    """Check name -> the records it flags, for every check that fires on this database."""
    return fired_on(ledger_of(db))


def fired_on(led: Ledger) -> dict[str, frozenset[str]]:
    """The same on a ledger already read."""
    found = {c.name: c.check(led) for c in CATALOGUE}
    return {name: ids for name, ids in found.items() if ids}
