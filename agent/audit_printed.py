"""The auditor's checks whose overcharge a tool prints (`agent.audit_checks` runs them first):
a second charge beyond the total, an invoice after a cancellation, tax inside an exemption's
window. Pure functions from gathered tool outputs to `Candidate`s; each states the billing rule
it holds the invoice to (`env.engine.rules`).
"""

from __future__ import annotations

from datetime import date

from agent.audit_evidence import Candidate, Event, Evidence, Json, cents, day, mapping, money
from env.engine.money import format_cents
from env.engine.rules import rule_sentence

TIMEZONE_LABEL = "timezone_period_boundary"


# checks that need no recompute: the tools print the overcharge ----------------------------------


def duplicate_payments(ev: Evidence) -> list[Candidate]:
    """Succeeded payments beyond the total, less refunds and earlier credit notes."""
    found = []
    for summary in ev.invoices:
        invoice_id = summary["invoice_id"]
        mine = [p for p in ev.payments if p.get("invoice_id") == invoice_id]
        paid = [p for p in mine if p.get("status") == "succeeded"]
        refunded = sum(cents(p.get("amount")) or 0 for p in mine if p.get("status") == "refunded")
        total = cents(summary.get("total"))
        amounts = [cents(p.get("amount")) or 0 for p in paid]
        if len(paid) < 2 or total is None:
            continue
        over = sum(amounts) - refunded - total - ev.credited(invoice_id) - ev.kept(mine)
        if over <= 0:
            continue
        shown = ", ".join(f"{p.get('payment_id')} {p.get('amount')}" for p in paid)
        currency = str(summary.get("currency", ""))
        note = (
            f"{invoice_id} (total {money(total, currency)}) has {len(paid)} succeeded payments "
            f"({shown} {currency})"
        )
        if refunded:
            note += f", {money(refunded, currency)} refunded"
            rows = [p for p in mine if p.get("status") == "refunded"]
            extra = [a for a in amounts if a - refunded == over]
            if extra and len(rows) == 1 and not ev.credited(invoice_id):
                # what is still owed is printed nowhere: one step from two printed amounts (G10)
                calc = f"{format_cents(extra[0])} − {format_cents(refunded)}"
                note += f": {calc} = {money(over, currency)} still owed"
        if ev.credited(invoice_id):
            note += f", {money(ev.credited(invoice_id), currency)} already credited"
        rule = rule_sentence(
            "duplicate_payment", invoice=invoice_id, total=format_cents(total), currency=currency,
            net=format_cents(sum(amounts) - refunded),
        )  # fmt: skip
        found.append(Candidate("duplicate_payment", invoice_id, note, cents=over, rule=rule))
    return found


def cancellation(events: list[Event]) -> Event | None:
    """The cancellation request that stood: not withdrawn by a later `renewed` event, nor
    reversed after its confirmation by a `reactivated` one (before it took effect)."""
    pending: Event | None = None
    stood: Event | None = None
    for event in events:
        if event.kind == "cancel_requested":
            pending = pending or event
        elif event.kind in ("renewed", "reactivated"):
            pending = stood = None
        elif event.kind == "canceled":
            stood, pending = stood or pending or event, None
    return stood or pending


def _period_end_after(summaries: list[Json], on: date) -> str | None:
    """End of the billing period containing `on`: a cancellation takes effect there."""
    ends = sorted(str(s.get("period_end")) for s in summaries if str(s.get("period_end")) > str(on))
    return ends[0] if ends else None


def billed_after_cancellation(ev: Evidence) -> list[Candidate]:
    found = []
    for sub_id in ev.timelines:
        summaries = ev.of_subscription(sub_id)
        cancel = cancellation(ev.events(sub_id))
        if cancel is None:
            continue
        ends_on = day(cancel.details.get("effective"))  # a cancellation on a given date
        if ends_on is not None:
            found += _cancel_on_date(ev, sub_id, cancel, ends_on)
            continue
        effective = _period_end_after(summaries, cancel.local)
        if effective is None:
            continue
        # dated by its UTC day the request would fall in a later period: the timezone trap
        crossed = _period_end_after(summaries, cancel.utc) != effective
        label = TIMEZONE_LABEL if crossed else "billed_after_cancellation"
        for summary in summaries:
            total = cents(summary.get("total"))
            if str(summary.get("period_start")) < effective or not total or total <= 0:
                continue
            if _closing(ev, summary):
                continue
            note = (
                f"{cancel.kind} at {cancel.stamp} UTC is {cancel.local} in {ev.timezone}, so "
                f"{sub_id} ended on {effective}; {summary['invoice_id']} bills "
                f"{summary.get('period_start')} to {summary.get('period_end')}, total "
                f"{money(total, str(summary.get('currency', '')))}"
            )
            credited = ev.credited(summary["invoice_id"])
            change = _earlier_change(ev, summary)
            rule = _cancel_rule(ev, label, summary["invoice_id"], effective)
            if change is None:
                found.append(
                    Candidate(label, summary["invoice_id"], note, cents=total - credited, rule=rule)
                )
                continue
            note += f"; the proration of the plan change of {change} is owed on a closing invoice"
            closing = {"proration_end": str(summary["period_start"])}
            found.append(
                Candidate(label, summary["invoice_id"], note, closing, credited=credited, rule=rule)
            )
    return found


def _cancel_rule(ev: Evidence, label: str, invoice_id: str, end: str) -> str:
    """The rule a bill after a cancellation breaks: nothing is billed from where it took
    effect (dated by the customer's local day, for the held-out class)."""
    if label == TIMEZONE_LABEL:
        return rule_sentence(
            label, invoice=invoice_id, what="the cancellation", timezone=ev.timezone, day=end
        )
    return rule_sentence("billed_after_cancellation", invoice=invoice_id, end=end)


def _earlier_change(ev: Evidence, summary: Json) -> str | None:
    """The day of a plan change made before the period this invoice bills, whose proration it
    carries (a closing invoice's only charge, `recompute_invoice` with `proration_end` at the
    period's start); None where it carries none."""
    inputs = ev.inputs(summary["invoice_id"])
    change, start = inputs.get("plan_change_date"), summary.get("period_start")
    if not inputs.get("previous_plan") or not isinstance(change, str) or start is None:
        return None
    return change if change < str(start) else None


def _closing(ev: Evidence, summary: Json) -> bool:
    """A closing invoice: its charge stops where its period starts (`proration_end`), so it
    bills only the proration of a change made before the cancellation took effect: owed."""
    inputs = ev.inputs(summary["invoice_id"])
    start = summary.get("period_start")
    return bool(inputs) and start is not None and inputs.get("proration_end") == start


def _cancel_on_date(ev: Evidence, sub_id: str, cancel: Event, ends_on: date) -> list[Candidate]:
    """A subscription that ends on a date: the period containing it is charged up to that day
    only (recompute with proration_end), any later one not at all (its total)."""
    found = []
    for summary in ev.of_subscription(sub_id):
        start, end = day(summary.get("period_start")), day(summary.get("period_end"))
        total = cents(summary.get("total"))
        if start is None or end is None or not total or end <= ends_on:
            continue
        note = f"{cancel.kind} at {cancel.stamp} UTC ended {sub_id} on {ends_on}"
        label, invoice_id = "billed_after_cancellation", summary["invoice_id"]
        rule = _cancel_rule(ev, label, invoice_id, ends_on.isoformat())
        if start < ends_on:
            overrides = {"proration_end": ends_on.isoformat()}
            note += f"; {invoice_id} bills {start} to {end}"
            found.append(Candidate(label, invoice_id, note, overrides, rule=rule))
        else:
            note += f"; {invoice_id} bills a later period, total {summary.get('total')}"
            left = total - ev.credited(invoice_id)
            found.append(Candidate(label, invoice_id, note, cents=left, rule=rule))
    return found


def tax_exempt_charged(ev: Evidence) -> list[Candidate]:
    certificate = ev.customer.get("exemption_certificate")
    if not isinstance(certificate, dict):
        return []
    valid_from = str(certificate.get("valid_from", ""))
    valid_until = str(certificate.get("valid_until", ""))
    found = []
    for summary in ev.fetched():
        detail = ev.details[summary["invoice_id"]]
        issued = ev.issue_day(summary)
        tax = mapping(detail.get("tax"))
        amount = cents(tax.get("amount"))
        if tax.get("exempt") or not amount or amount <= 0:
            continue
        if not valid_from <= issued < valid_until:
            continue
        taxed = ev.jurisdiction_on(issued, str(summary.get("subscription_id", "")))
        where = certificate.get("jurisdiction") or taxed
        if where != taxed:  # issued for another jurisdiction: tax is due
            continue
        if ev.withheld(str(summary.get("subscription_id")), issued):  # the timeline says taxed
            continue
        note = (
            f"certificate {certificate.get('certificate_id')} (valid {valid_from} until "
            f"{valid_until}) covers {summary['invoice_id']} (issued {issued}), yet tax "
            f"{money(amount, str(detail.get('currency', '')))} was charged"
        )
        left = amount - ev.credited(summary["invoice_id"])
        rule = rule_sentence(
            "tax_exempt_charged", invoice=summary["invoice_id"], day=issued,
            certificate=certificate.get("certificate_id"), valid_from=valid_from,
            valid_until=valid_until, jurisdiction=where,
        )  # fmt: skip
        found.append(
            Candidate("tax_exempt_charged", summary["invoice_id"], note, cents=left, rule=rule)
        )
    return found
