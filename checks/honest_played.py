"""What an honest variant rewrites: a reference as replayed, and the helpers variants share.

`Played` is a scenario's reference solution with the results its replay got; a `Variant` builds
another episode from it (`checks.honest_variants`, `checks.honest_markup`); `with_summary`
submits the same findings with another summary. `checks.honest` plays and scores them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from env.scenario import Scenario, ToolCall, Truth

Calls = tuple[ToolCall, ...]
_WRITES = ("draft_credit_note", "submit_findings")


@dataclass(frozen=True)
class Played:
    """A scenario's reference, as replayed: each call with the result it got."""

    scenario: Scenario
    truth: Truth
    calls: Calls
    results: tuple[dict[str, Any], ...]

    @property
    def reads(self) -> Calls:
        return tuple(c for c in self.calls if c.name not in _WRITES)

    @property
    def drafts(self) -> Calls:
        return tuple(c for c in self.calls if c.name == "draft_credit_note")

    @property
    def submission(self) -> dict[str, Any]:
        return dict(self.calls[-1].arguments)

    @property
    def summary(self) -> str:
        return str(self.submission["summary"])

    def shown(self, tool: str) -> list[tuple[ToolCall, dict[str, Any]]]:
        return [(c, r) for c, r in zip(self.calls, self.results, strict=True) if c.name == tool]

    @property
    def currency(self) -> str:
        for _, result in self.shown("get_invoice") + self.shown("list_invoices"):
            if isinstance(result.get("currency"), str):
                return str(result["currency"])
            for item in result.get("invoices", []):
                return str(item.get("currency", "USD"))
        return "USD"

    @property
    def rates(self) -> set[str]:
        """Tax rates the reads showed (left alone by amount edits)."""
        found: set[str] = set()
        for _, result in self.shown("get_invoice") + self.shown("get_tax_rate"):
            shown_tax = result.get("tax")
            tax: dict[str, Any] = shown_tax if isinstance(shown_tax, dict) else result
            for key in ("rate", "tax_rate"):
                if isinstance(tax.get(key), str):
                    found.add(tax[key])
            inputs = result.get("billing_inputs") or {}
            if isinstance(inputs.get("tax_rate"), str):
                found.add(inputs["tax_rate"])
        return found

    def invoice(self, invoice_id: str) -> dict[str, Any] | None:
        for call, result in self.shown("get_invoice"):
            if call.arguments.get("invoice_id") == invoice_id:
                return result
        return None

    @property
    def subject(self) -> str:
        """The invoice the findings are about: the first affected one, else the first disputed
        invoice the reference read, else the first it read."""
        items = self.submission["affected_invoices"]
        if items:
            return str(items[0]["invoice_id"])
        read = [str(c.arguments["invoice_id"]) for c, _ in self.shown("get_invoice")]
        disputed = [i for i in read if i in self.truth.disputed_invoices]
        return (disputed or read or [""])[0]


def with_summary(played: Played, summary: str, calls: Calls | None = None) -> Calls:
    """`calls` (default: the reference's reads and drafts) then the submission with `summary`."""
    body = calls if calls is not None else played.reads + played.drafts
    return (*body, ToolCall("submit_findings", {**played.submission, "summary": summary}))


@dataclass(frozen=True)
class Variant:
    name: str
    what: str
    build: Callable[[Played], Calls | None]


def calculation(played: Played) -> tuple[str, str, str] | None:
    """(a, b, c) with a − b = c and c an affected invoice's overcharge: a recompute's billed
    total and total, else the invoice's amount paid and total."""
    items = {
        i["invoice_id"]: i["overcharge_amount"] for i in played.submission["affected_invoices"]
    }
    for call, result in played.shown("recompute_invoice"):
        owed = items.get(str(call.arguments.get("invoice_id")))
        billed, total = result.get("billed_total"), result.get("total")
        if owed and billed and total and Decimal(billed) - Decimal(total) == Decimal(owed):
            return str(billed), str(total), str(owed)
    for invoice_id, owed in items.items():
        shown = played.invoice(invoice_id) or {}
        paid, total = shown.get("amount_paid"), shown.get("total")
        if paid and total and Decimal(paid) - Decimal(total) == Decimal(owed):
            return str(paid), str(total), str(owed)
    return None


def shown_amount(played: Played, amount: str) -> bool:
    """Did a read print `amount` (so that it is a found fact, not a derived one, G10.3)?"""
    pattern = re.compile(rf'"{re.escape(amount)}"')
    return any(pattern.search(json.dumps(r)) for c, r in zip(played.calls, played.results,
               strict=True) if c.name not in _WRITES)  # fmt: skip


def subject_amount(played: Played) -> str | None:
    """A found amount to calculate with: the first overcharge a read printed, else the
    subject invoice's total."""
    for item in played.submission["affected_invoices"]:
        if shown_amount(played, str(item["overcharge_amount"])):
            return str(item["overcharge_amount"])
    shown = played.invoice(played.subject) or {}
    total = shown.get("total")
    return str(total) if total and Decimal(total) > 0 else None


def rows(played: Played) -> list[tuple[str, str]]:
    code = played.currency
    items = played.submission["affected_invoices"]
    if items:
        return [(i["invoice_id"], f"{i['overcharge_amount']} {code}") for i in items]
    rows = []
    for call, result in played.shown("get_invoice"):
        if call.arguments["invoice_id"] in played.truth.disputed_invoices:
            rows.append((str(call.arguments["invoice_id"]), f"{result.get('total')} {code}"))
    return rows


def replayed_results(results: list[str]) -> tuple[dict[str, Any], ...]:
    parsed = []
    for text in results:
        data = json.loads(text)
        parsed.append(data if isinstance(data, dict) else {})
    return tuple(parsed)
