"""One-comparison checks for the shapes issue 39 found by hand (world v6, design §1.2).

Each compares a record with the record next to it in time, where the catalogue's other checks
compare it with its source of truth: a plan that changes between two invoices with no plan event
logged between them (`downgrade_not_applied` billed late), the first paid invoice converting at
a rate older than its issue day's (`currency_conversion_error`), a coupon removed after a
confirmed cancellation (`billed_after_cancellation`'s extra period), and a first paid invoice
charging from a day other than its issue day (`timezone_period_boundary` at a trial's end).
`checks.probe_comparisons.CATALOGUE` lists them with the rest; each has a correctly billed twin
in every class (env/README.md, "Look-alikes").
"""

from __future__ import annotations

from itertools import pairwise

from checks.probe_ledger import Bill, Ledger
from env.engine.calendar import fx_day

PLAN_EVENTS = ("plan_changed", "plan_change_start_moved", "plan_change_withdrawn")


def paid_by_subscription(led: Ledger) -> dict[str, list[Bill]]:
    """Each subscription's invoices that charge a period (a trial's zero invoice left out), in
    period order."""
    out: dict[str, list[Bill]] = {}
    for inv in sorted(led.invoices, key=lambda i: (i.start, i.issued_at)):
        if inv.day("proration_start") == inv.end:  # a trial's zero invoice
            continue
        out.setdefault(inv.sub, []).append(inv)
    return out


def plan_switch_without_event(led: Ledger) -> frozenset[str]:
    """An invoice billing another plan than the one before it, with no plan event logged
    between the two invoices' issue."""
    found = set()
    for sub, bills in paid_by_subscription(led).items():
        events = led.of_type(sub, *PLAN_EVENTS)
        for before, after in pairwise(bills):
            if before.inputs["plan"]["plan_id"] == after.inputs["plan"]["plan_id"]:
                continue
            if not any(before.issued_at < e.at < after.issued_at for e in events):
                found.add(after.id)
    return frozenset(found)


def first_paid_stale_fx(led: Ledger) -> frozenset[str]:
    """The first paid invoice of a subscription converting at a day's rate older than its
    issue day's (the issue day, or the Friday before a weekend)."""
    found = set()
    for bills in paid_by_subscription(led).values():
        first = bills[0]
        recorded = first.day("fx_rate_date")
        if first.inputs["currency"] != "USD" and recorded and recorded < fx_day(first.issue_day):
            found.add(first.id)
    return frozenset(found)


def coupon_removed_after_cancel(led: Ledger) -> frozenset[str]:
    """A subscription's coupon_removed event logged after a confirmed cancellation that no
    `reactivated` event reversed (the ids of its invoices from then)."""
    found = set()
    for sub, events in led.events.items():
        canceled = None
        for e in events:
            if e.type == "canceled":
                canceled = e
            elif e.type == "reactivated":
                canceled = None
            elif e.type == "coupon_removed" and canceled is not None:
                found |= {i.id for i in led.invoices if i.sub == sub and i.issued_at >= e.at}
                found.add(f"{sub}@{e.at}")
    return frozenset(found)


def first_paid_start_vs_issue_day(led: Ledger) -> frozenset[str]:
    """The first paid invoice of a subscription charging from a day (its proration start, or
    its period start) other than its local issue day."""
    found = set()
    for bills in paid_by_subscription(led).values():
        first = bills[0]
        if (first.day("proration_start") or first.start) != first.issue_day:
            found.add(first.id)
    return frozenset(found)
