"""The difficulty ladder's scripted policies: investigations of increasing depth, tools only.

Each rung reads only the public complaint and what the nine tools return, as a model would;
`python -m eval.ladder` plays them all and says what each depth of investigation scores.

- `complaint-guess`: the class from the complaint's words; the invoice it names (or, when it
  names none, the one a listing shows it means) reported with the amount the complaint quotes,
  else its listed total; nothing read beyond what submitting needs, nothing credited.
- `one-look`: the same class, after one `get_invoice` of the disputed invoice; it credits what
  that invoice prints for the class (its total for a charge that should not exist, its tax for
  an exemption ignored) and reports the total, uncredited, for a class one invoice cannot
  measure.
- `signal-only`: the auditor's gathering and battery of checks (`agent.audit_checks`) on records
  read without the second record that tells each fault from its legitimate look-alike (the
  separator): a withdrawn or reversed cancellation, a withdrawn plan change, a moved or agreed
  start, a seat change for a later date, a usage correction, a credit note already issued,
  account credit kept, a tax move on record, the certificate's jurisdiction, an fx rate lock.
  Every discrepancy that remains is confirmed with `recompute_invoice` and credited.
- `auditor`: signal plus separator (`agent.auditor`, the registry's built-in).
- `auditor-no-credit`: the auditor's findings, reported without drafting their credit notes.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Any

from agent.audit_evidence import cents, listed, mapping
from agent.auditor import Audit, auditor_program, run_audit
from env.ledger_env import DEFAULT_TOOL_BUDGET
from env.scenario import Scenario, ToolCall

Json = dict[str, Any]
Program = Callable[[Scenario], Generator[ToolCall, str, None]]
_INVOICE_ID = re.compile(r"INV-[0-9A-Z]{4,12}")
_AMOUNT = re.compile(r"(?<![\d.])\d+\.\d{2}(?![\d])")
# Complaint words -> the class a reader of the complaint alone names; first match wins, none:
# no_error. Written from what customers say of each fault (env/README.md), not fitted to data.
KEYWORDS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("tax_exempt_charged", ("exempt", "certificate", "non-profit", "charity")),
    ("currency_conversion_error", ("exchange", "conversion", "converted", "currency", "fx")),
    ("wrong_tax_rate", ("tax", "vat", "gst")),
    ("duplicate_payment", ("twice", "double", "duplicate", "two charges", "two payments",
                           "retried", "charged again", "second charge")),
    ("trial_period_charged", ("trial",)),
    ("billed_after_cancellation", ("cancel", "no longer subscribed", "ended our",
                                   "closed our", "terminated")),
    ("coupon_not_applied", ("coupon", "discount", "promo", "voucher")),
    ("seat_count_mismatch", ("seat", "licence", "license", "headcount", "users")),
    ("usage_overage_miscalculated", ("usage", "overage", "units", "metered", "meter")),
    ("downgrade_not_applied", ("downgrad", "cheaper plan", "smaller plan", "moved away",
                               "lower tier", "plan we left")),
    ("proration_error", ("prorat", "partial", "plan change", "switch", "upgrad", "mid-period")),
)  # fmt: skip
# What one invoice prints that a class names as the overcharge: "total" or "tax".
MEASURED_ON_ONE_INVOICE = {
    "billed_after_cancellation": "total",
    "trial_period_charged": "total",
    "duplicate_payment": "total",
    "timezone_period_boundary": "total",
    "tax_exempt_charged": "tax",
}


def complaint_label(complaint: str) -> str:
    """The class the complaint's words name (`KEYWORDS`), or no_error when none does."""
    text = complaint.lower()
    for label, words in KEYWORDS:
        if any(word in text for word in words):
            return label
    return "no_error"


def _quoted(complaint: str) -> list[str]:
    return _AMOUNT.findall(complaint)


def _target(complaint: str, invoices: list[Json]) -> Json | None:
    """The invoice the complaint means: named by id, else by a total it quotes, else the
    latest with something to pay."""
    named = _INVOICE_ID.findall(complaint)
    by_id = [s for s in invoices if s.get("invoice_id") in named]
    by_total = [s for s in invoices if str(s.get("total")) in _quoted(complaint)]
    billed = [s for s in invoices if (cents(s.get("total")) or 0) > 0]
    for choice in (by_id, by_total, billed[::-1]):
        if choice:
            return choice[0]
    return None


def _listing(audit: Audit, customer_id: str) -> Generator[ToolCall, str, list[Json]]:
    listing = yield from audit.ask("list_invoices", customer_id=customer_id)
    return [
        s
        for s in listed(listing.get("invoices"))
        if isinstance(s, dict) and isinstance(s.get("invoice_id"), str)
    ]


def _submit_no_error(audit: Audit, summary: str) -> Generator[ToolCall, str, None]:
    yield from audit.ask(
        "submit_findings", root_cause="no_error", affected_invoices=[], summary=summary
    )


def complaint_guess_program(
    scenario: Scenario, budget: int = DEFAULT_TOOL_BUDGET
) -> Generator[ToolCall, str, None]:
    """Rung (a): the complaint's class; a listing only when the complaint names no invoice
    and quotes no amount to report."""
    audit = Audit(budget)
    label = complaint_label(scenario.complaint)
    if label == "no_error":
        yield from _submit_no_error(
            audit, "The complaint names no billing fault, so nothing is credited."
        )
        return
    named = _INVOICE_ID.findall(scenario.complaint)
    quoted = _quoted(scenario.complaint)
    invoice_id, amount = (named[0], quoted[0]) if named and quoted else (None, None)
    if invoice_id is None:
        target = _target(scenario.complaint, (yield from _listing(audit, scenario.customer_id)))
        if target is None:
            yield from _submit_no_error(audit, "The account has no billed invoice to dispute.")
            return
        invoice_id, amount = target["invoice_id"], quoted[0] if quoted else str(target["total"])
    yield from audit.ask(
        "submit_findings",
        root_cause=label,
        affected_invoices=[{"invoice_id": invoice_id, "overcharge_amount": amount}],
        summary=f"{label}: the customer disputes {invoice_id} ({amount}).",
    )


def one_look_program(
    scenario: Scenario, budget: int = DEFAULT_TOOL_BUDGET
) -> Generator[ToolCall, str, None]:
    """Rung (b): the complaint's class after one look at the disputed invoice."""
    audit = Audit(budget)
    label = complaint_label(scenario.complaint)
    named = _INVOICE_ID.findall(scenario.complaint)
    invoice_id = named[0] if named else None
    if invoice_id is None:
        target = _target(scenario.complaint, (yield from _listing(audit, scenario.customer_id)))
        invoice_id = None if target is None else target["invoice_id"]
    detail: Json = {}
    if invoice_id is not None:
        detail = yield from audit.ask("get_invoice", invoice_id=invoice_id)
    total = str(detail.get("total", ""))
    currency = str(detail.get("currency", ""))
    if not detail or (cents(total) or 0) <= 0:
        yield from _submit_no_error(audit, "No billed invoice could be read; nothing is credited.")
        return
    seen = (
        f"{invoice_id} bills {detail.get('period_start')} to {detail.get('period_end')}, "
        f"total {total} {currency}"
    )
    if label == "no_error":
        yield from _submit_no_error(audit, f"{seen}; nothing is credited.")
        return
    measure = MEASURED_ON_ONE_INVOICE.get(label)
    amount = str(mapping(detail.get("tax")).get("amount")) if measure == "tax" else total
    if (cents(amount) or 0) <= 0:
        amount, measure = total, "total"
    if measure is not None:
        yield from audit.ask(
            "draft_credit_note",
            invoice_id=invoice_id,
            amount=amount,
            reason=f"Refund: {label.replace('_', ' ')}",
        )
    yield from audit.ask(
        "submit_findings",
        root_cause=label,
        affected_invoices=[{"invoice_id": invoice_id, "overcharge_amount": amount}],
        summary=f"{label}: {seen}; overcharge {amount} {currency}.",
    )


# Timeline events that only separate a fault from its look-alike (`SignalOnlyAudit`).
SEPARATING_EVENTS = frozenset(
    {"renewed", "reactivated", "plan_change_withdrawn", "plan_change_start_moved", "coupon_removed"}
)
DATED_CHANGES = frozenset({"seats_changed", "plan_changed"})  # a named date separates these
CUSTOMER_SEPARATORS = (
    "previous_tax_jurisdiction",
    "tax_jurisdiction_since",
    "fx_rate_lock",
    "account_credit",
)


class SignalOnlyAudit(Audit):
    """The auditor reading each record without its separator (rung (c), module docstring)."""

    def read(self, name: str, result: Json) -> Json:
        if name == "get_customer":
            shown = {k: v for k, v in result.items() if k not in CUSTOMER_SEPARATORS}
            certificate = result.get("exemption_certificate")
            if isinstance(certificate, dict):  # applied wherever the customer is taxed
                shown["exemption_certificate"] = {
                    k: v for k, v in certificate.items() if k != "jurisdiction"
                }
            return shown
        if name == "get_invoice":
            return {k: v for k, v in result.items() if k != "amount_credited"}
        if name == "get_subscription_timeline":
            events = [
                _undated(e)
                for e in listed(result.get("events"))
                if _event_type(e) not in SEPARATING_EVENTS
            ]
            return {**result, "events": events, "usage_corrections": [], "place_of_supply": None}
        return result


def _event_type(event: Any) -> str | None:
    kind = event.get("type") if isinstance(event, dict) else None
    return kind if isinstance(kind, str) else None


def _undated(event: Any) -> Any:
    """A plan or seat change read as taking effect when it was logged, whatever date it names."""
    if _event_type(event) not in DATED_CHANGES:
        return event
    details = mapping(event.get("details"))
    effective = details.get("effective")
    if not (isinstance(effective, str) and effective[:1].isdigit()):
        return event
    return {**event, "details": {k: v for k, v in details.items() if k != "effective"}}


def signal_only_program(
    scenario: Scenario, budget: int = DEFAULT_TOOL_BUDGET
) -> Generator[ToolCall, str, None]:
    """Rung (c): every check's signal, none of its separators; credits what recompute shows."""
    yield from run_audit(SignalOnlyAudit(budget), scenario)


def auditor_no_credit_program(
    scenario: Scenario, budget: int = DEFAULT_TOOL_BUDGET
) -> Generator[ToolCall, str, None]:
    """Rung (e): the auditor's findings, reported with no credit note drafted."""
    yield from run_audit(Audit(budget, credit=False), scenario)


@dataclass(frozen=True)
class Rung:
    name: str  # the registry's built-in name: `python -m eval.run --model <name>`
    depth: str
    program: Program


LADDER: tuple[Rung, ...] = (
    Rung("complaint-guess", "the complaint's words only", complaint_guess_program),
    Rung("one-look", "+ one look at the disputed invoice", one_look_program),
    Rung("signal-only", "+ every record, each class's signal, no separator", signal_only_program),
    Rung("auditor", "+ the separating record (signal plus separator)", auditor_program),
    Rung("auditor-no-credit", "the auditor, drafting no credit note", auditor_no_credit_program),
)
RUNGS: dict[str, Rung] = {rung.name: rung for rung in LADDER}
