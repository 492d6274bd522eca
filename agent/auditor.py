"""The auditor: a deterministic, scripted billing analyst, the first row of the leaderboard.

It uses only the nine tools and the public complaint: look everything up, run a fixed battery
of checks (`agent.audit_checks`), confirm each hit with `recompute_invoice` or an amount a tool
printed, credit exactly that, and report the class with the largest total. It never reads the
truth: grading is eval's, as for any model (the registry's built-in `auditor`).
Run: `python -m eval.run --model auditor --k 1` (also `--split heldout`, or `train --limit 500`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Generator
from dataclasses import dataclass
from typing import Any

from agent.audit_checks import currency_conversion_error, run_checks
from agent.audit_evidence import Candidate, Evidence, TaxWindow, cents, listed
from env.engine.money import format_cents
from env.ledger_env import DEFAULT_TOOL_BUDGET
from env.scenario import Scenario, ToolCall

Json = dict[str, Any]
DETAIL_RESERVE = 9  # calls kept back from get_invoice for tax look-ups, confirmations, report
TAX_RESERVE = 6  # calls kept back from get_tax_rate
SUMMARY_LIMIT = 3900  # submit_findings accepts 4000 characters
_INVOICE_ID = re.compile(r"INV-[0-9A-Z]{4,12}")
_AMOUNT = re.compile(r"(?<![\d.])\d+\.\d{2}(?![\d])")  # a money figure a complaint quotes


@dataclass(frozen=True)
class Finding:
    label: str
    invoice_id: str
    cents: int
    note: str
    rule: str = ""  # the billing rule behind it, as `env.engine.rules` states it


class Audit:
    """One investigation's call counter; every tool call goes through `ask`.

    `credit=False` reports the same findings without drafting their credit notes, and a
    subclass may override `read` to leave out parts of what a tool returned: the rungs of the
    difficulty ladder below the auditor (`agent.ladder`) are built that way.
    """

    def __init__(self, budget: int, *, credit: bool = True) -> None:
        self.budget = budget
        self.used = 0
        self.credit = credit

    @property
    def left(self) -> int:
        return self.budget - self.used

    def ask(self, name: str, **arguments: Any) -> Generator[ToolCall, str, Json]:
        """One tool call; an error or unreadable result comes back as `{}`."""
        self.used += 1
        text = yield ToolCall(name, arguments)
        try:
            result = json.loads(text)
        except (TypeError, ValueError):
            return {}
        ok = isinstance(result, dict) and "error" not in result
        return self.read(name, result) if ok else {}

    def read(self, name: str, result: Json) -> Json:
        """What the investigation takes from a tool's result: all of it."""
        return result

    # 1. look everything up -----------------------------------------------------------------
    def gather(self, customer_id: str, complaint: str) -> Generator[ToolCall, str, Evidence]:
        ev = Evidence()
        if self.left <= 3:  # too few calls to look: report what nothing showed
            return ev
        ev.customer = yield from self.ask("get_customer", customer_id=customer_id)
        listing = yield from self.ask("list_invoices", customer_id=customer_id)
        ev.invoices = [
            s
            for s in listed(listing.get("invoices"))
            if isinstance(s, dict) and isinstance(s.get("invoice_id"), str)
        ]
        subs = list(listed(ev.customer.get("subscription_ids")))
        subs += [s.get("subscription_id") for s in ev.invoices]
        for sub_id in dict.fromkeys(s for s in subs if isinstance(s, str)):
            if self.left > DETAIL_RESERVE:
                ev.timelines[sub_id] = yield from self.ask(
                    "get_subscription_timeline", subscription_id=sub_id
                )
        payments = yield from self.ask("list_payments", customer_id=customer_id)
        ev.payments = [p for p in listed(payments.get("payments")) if isinstance(p, dict)]
        for summary in reading_order(ev, complaint):
            if self.left <= DETAIL_RESERVE:
                break
            invoice_id = summary["invoice_id"]
            ev.details[invoice_id] = yield from self.ask("get_invoice", invoice_id=invoice_id)
        yield from self.tax_windows(ev)
        return ev

    def tax_windows(self, ev: Evidence) -> Generator[ToolCall, str, None]:
        """The customer's rate for each invoice's issue day, in the jurisdiction it is taxed in
        (the previous one before a recorded move, a service site's while it applies: the
        timeline's `place_of_supply`); one look-up covers a window."""
        if not isinstance(ev.customer.get("tax_jurisdiction"), str):
            return
        for summary in ev.fetched():
            start = ev.issue_day(summary)
            sub = str(summary.get("subscription_id", ""))
            if ev.inputs(summary["invoice_id"]).get("tax_exempt") or ev.rate_on(start, sub):
                continue
            jurisdiction = ev.jurisdiction_on(start, sub)
            if self.left <= TAX_RESERVE:
                return
            found = yield from self.ask("get_tax_rate", jurisdiction=jurisdiction, date=start)
            rate, since, until = (found.get(k) for k in ("rate", "effective_from", "effective_to"))
            if isinstance(rate, str) and isinstance(since, str) and isinstance(until, str | None):
                window = TaxWindow(rate, since, until, jurisdiction)
                if not window.covers(start):  # never loop on a window that misses its own day
                    return
                ev.tax_windows.append(window)

    # 2. confirm what the checks suspect ------------------------------------------------------
    def confirm(self, ev: Evidence) -> Generator[ToolCall, str, list[Finding]]:
        findings: list[Finding] = []
        for candidate in run_checks(ev):
            found = yield from self.verify(candidate, findings)
            findings += found
        if not findings:  # nothing suspicious: spare calls check the other conversions too
            for candidate in currency_conversion_error(ev, sweep=True):
                found = yield from self.verify(candidate, findings)
                findings += found
        findings += yield from self.follow_on(ev, findings)
        return findings

    def follow_on(
        self, ev: Evidence, findings: list[Finding]
    ) -> Generator[ToolCall, str, list[Finding]]:
        """A fault often runs on: the same subscription's next invoice after a confirmed one,
        when the budget left it unread, is fetched and checked for the same fault."""
        extra: list[Finding] = []
        for finding in list(findings):
            following = _next_invoice(ev, finding.invoice_id)
            if following is None or following in ev.details:
                continue
            credits = len({f.invoice_id for f in findings + extra}) + 1
            if self.left < 2 + credits + 1:  # the invoice, its recompute, the credits, report
                break
            ev.details[following] = yield from self.ask("get_invoice", invoice_id=following)
            for candidate in run_checks(ev):
                if candidate.invoice_id == following and candidate.label == finding.label:
                    extra += yield from self.verify(candidate, findings + extra)
        return extra

    def verify(
        self, candidate: Candidate, findings: list[Finding]
    ) -> Generator[ToolCall, str, list[Finding]]:
        if any(
            f.invoice_id == candidate.invoice_id and f.label == candidate.label for f in findings
        ):
            return []
        if candidate.overrides is None:
            amount = candidate.cents or 0  # findings refuse 0.00: such a hit is no overcharge
            found = Finding(
                candidate.label, candidate.invoice_id, amount, candidate.note, candidate.rule
            )
            return [found] if amount > 0 else []
        credits = len({f.invoice_id for f in findings} | {candidate.invoice_id})
        if self.left < 1 + credits + 1:  # this recompute, a credit per invoice, the report
            return []
        result = yield from self.ask(
            "recompute_invoice", invoice_id=candidate.invoice_id, **candidate.overrides
        )
        difference = candidate.owed(cents(result.get("difference")))
        if difference is None:
            return []
        shown = candidate.shown or ", ".join(f"{k}={v}" for k, v in candidate.overrides.items())
        note = (
            f"{candidate.note}; recompute_invoice with {shown} totals {result.get('total')} "
            f"against billed {result.get('billed_total')}, difference {result.get('difference')} "
            f"{result.get('currency', '')}"
        )
        return [Finding(candidate.label, candidate.invoice_id, difference, note, candidate.rule)]

    # 3. credit and report ------------------------------------------------------------------
    def report(self, evidence: Evidence, findings: list[Finding]) -> Generator[ToolCall, str, None]:
        if not findings:
            yield from self.ask(
                "submit_findings",
                root_cause="no_error",
                affected_invoices=[],
                summary=_clean_summary(evidence),
            )
            return
        label = _winning_label(findings)
        chosen: dict[str, Finding] = {}
        for finding in findings:
            if finding.label == label:
                chosen.setdefault(finding.invoice_id, finding)
        reason = f"Verified {label.replace('_', ' ')}"
        for invoice_id, finding in chosen.items():
            if self.credit and self.left > 1:
                amount = format_cents(finding.cents)
                yield from self.ask(
                    "draft_credit_note", invoice_id=invoice_id, amount=amount, reason=reason
                )
        affected = [
            {"invoice_id": i, "overcharge_amount": format_cents(f.cents)} for i, f in chosen.items()
        ]
        rules = "".join(f"{f.rule} " for f in chosen.values() if f.rule)  # first: never clipped
        summary = _clip(f"{label}: {rules}" + "; ".join(f.note for f in chosen.values()) + ".")
        yield from self.ask(
            "submit_findings", root_cause=label, affected_invoices=affected, summary=summary
        )


CHANGE_EVENTS = ("seats_changed", "plan_changed", "coupon_applied", "canceled", "trial_ended")


def _after_changes(ev: Evidence) -> set[str]:
    """The first invoice of each subscription issued after each change on its timeline: the
    one a change should show on first (a seat or plan change ignored starts there)."""
    first: set[str] = set()
    for sub_id, timeline in ev.timelines.items():
        own = sorted(
            (s for s in ev.invoices if s.get("subscription_id") == sub_id),
            key=lambda s: str(s.get("issued_at")),
        )
        for event in listed(timeline.get("events")):
            if not isinstance(event, dict) or event.get("type") not in CHANGE_EVENTS:
                continue
            stamp = str(event.get("occurred_at"))
            after = [s for s in own if str(s.get("issued_at")) > stamp]
            if after:
                first.add(after[0]["invoice_id"])
    return first


def _next_invoice(ev: Evidence, invoice_id: str) -> str | None:
    """The invoice after `invoice_id` on its subscription, in the listing's period order."""
    listing = [s for s in ev.invoices if s.get("invoice_id") == invoice_id]
    if not listing:
        return None
    own = [s for s in ev.invoices if s.get("subscription_id") == listing[0].get("subscription_id")]
    at = own.index(listing[0])
    return str(own[at + 1]["invoice_id"]) if at + 1 < len(own) else None


def reading_order(ev: Evidence, complaint: str) -> list[Json]:
    """The account's invoices in the order worth fetching them (`_reading_order`)."""
    return _reading_order(ev.invoices, complaint, _after_changes(ev), ev.payments)


def _reading_order(
    invoices: list[Json], complaint: str, after: set[str], payments: list[Json]
) -> list[Json]:
    """Invoices the complaint names (by id or by the total it quotes) first, and those whose
    payments net of refunds exceed the total (a duplicate, or a second charge an earlier
    credit note already returned: only the invoice's `amount_credited` tells); then the first
    invoice after each timeline change (`_after_changes`), then the ones whose total moved most
    from the same subscription's previous invoice (a fault changes a total; when the budget
    cannot fetch every invoice, those are the ones worth reading; an invoice repeating a moved
    total keeps half its move, since a fault often runs on), then the rest in period order."""
    net: dict[str, int] = {}
    for p in payments:
        sign = {"succeeded": 1, "refunded": -1}.get(str(p.get("status")), 0)
        key = str(p.get("invoice_id"))
        net[key] = net.get(key, 0) + sign * (cents(p.get("amount")) or 0)
    named = set(_INVOICE_ID.findall(complaint))
    quoted = set(_AMOUNT.findall(complaint))  # an invoice named by the total it quotes
    named |= {s["invoice_id"] for s in invoices if str(s.get("total")) in quoted}
    named |= {
        s["invoice_id"]
        for s in invoices
        if net.get(s["invoice_id"], 0) > (cents(s.get("total")) or 0)
    }
    previous: dict[str, int] = {}
    moved: dict[str, int] = {}
    jump: dict[str, int] = {}
    for summary in invoices:
        total = cents(summary.get("total")) or 0
        sub = str(summary.get("subscription_id"))
        step = abs(total - previous.get(sub, 0))  # a first: its total
        jump[summary["invoice_id"]] = step or moved.get(sub, 0) // 2
        moved[sub] = jump[summary["invoice_id"]]
        previous[sub] = total
    rest = [s for s in invoices if s["invoice_id"] not in named]
    rest.sort(key=lambda s: (s["invoice_id"] not in after, -jump[s["invoice_id"]]))
    return [s for s in invoices if s["invoice_id"] in named] + rest


def _clean_summary(evidence: Evidence) -> str:
    checked = [
        f"{s['invoice_id']} ({s.get('total')} {s.get('currency')})" for s in evidence.fetched()
    ]
    return _clip(
        "Checked payments, cancellations, trials, plan and seat changes, coupons, usage, tax "
        "rates, exemption and fx rates of "
        + (", ".join(checked) if checked else "the account")
        + ": every charge matches its inputs, so nothing is credited."
    )


def _clip(text: str) -> str:
    """Cuts between two items, never through a number that must stay traceable."""
    if len(text) <= SUMMARY_LIMIT:
        return text
    cut = max(text.rfind("; ", 0, SUMMARY_LIMIT - 4), text.rfind(", ", 0, SUMMARY_LIMIT - 4))
    return text[: max(cut, 0)] + " ..."


def _winning_label(findings: list[Finding]) -> str:
    """The class with the largest total overcharge; ties go to the check that ran first."""
    totals: dict[str, int] = {}
    for finding in findings:
        totals[finding.label] = totals.get(finding.label, 0) + finding.cents
    return max(totals, key=lambda label: totals[label])


def auditor_program(
    scenario: Scenario, budget: int = DEFAULT_TOOL_BUDGET
) -> Generator[ToolCall, str, None]:
    """Reads only `customer_id` and `complaint` from the scenario, as the agent can."""
    yield from run_audit(Audit(budget), scenario)


def run_audit(audit: Audit, scenario: Scenario) -> Generator[ToolCall, str, None]:
    """Gather, confirm, report: the auditor's investigation, as `audit` reads and credits."""
    evidence = yield from audit.gather(scenario.customer_id, scenario.complaint)
    findings = yield from audit.confirm(evidence)
    yield from audit.report(evidence, findings)


__all__ = ["Audit", "Finding", "auditor_program", "run_audit"]
