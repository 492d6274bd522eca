"""complaint-guess: a scripted baseline that follows the complaint and reads no evidence.

It names the class the customer's words suggest (keywords in `agent/data/complaint_keywords.json`,
first match wins), looks up the invoice the complaint names (else the latest one with a total),
and reports that class on it, for the amount the complaint claims (else its total), without
checking anything or drafting a credit. On a counterfactual twin
(`env.generation.twins`) the complaint is the same, so its answer is too: it is the floor of the
evidence-dependence table (`python -m eval.run --model complaint-guess --split eval --twins`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Generator
from functools import cache
from importlib import resources

from env.scenario import Scenario, ToolCall

_INVOICE_ID = re.compile(r"INV-[0-9A-Z]{4,12}")
_AMOUNT = re.compile(r"(?<![\d.])\d+\.\d{2}(?![\d])")  # a money figure the complaint quotes


@cache
def _keywords() -> tuple[tuple[tuple[str, str], ...], str]:
    text = resources.files("agent").joinpath("data/complaint_keywords.json").read_text("utf-8")
    table = json.loads(text)
    return tuple((word, label) for word, label in table["order"]), table["otherwise"]


def guess_label(complaint: str) -> str:
    """The first keyword's class in the complaint (lower-cased), else the default."""
    words = complaint.lower()
    order, otherwise = _keywords()
    return next((label for word, label in order if word in words), otherwise)


def complaint_guess_program(scenario: Scenario) -> Generator[ToolCall, str, None]:
    label = guess_label(scenario.complaint)
    named = _INVOICE_ID.findall(scenario.complaint)
    if named:
        shown = json.loads((yield ToolCall("get_invoice", {"invoice_id": named[0]})))
        invoice = {"invoice_id": named[0], "total": shown.get("total", "0.00")}
    else:
        listed = json.loads(
            (yield ToolCall("list_invoices", {"customer_id": scenario.customer_id}))
        )
        paid = [i for i in listed.get("invoices", []) if i.get("total") not in (None, "0.00")]
        invoice = paid[-1] if paid else {}
    claimed = _AMOUNT.findall(scenario.complaint)
    amount = claimed[0] if claimed else str(invoice.get("total", ""))
    affected = []
    if label != "no_error" and invoice.get("invoice_id") and amount not in ("", "0.00"):
        affected = [{"invoice_id": invoice["invoice_id"], "overcharge_amount": amount}]
    summary = f"The complaint reads as {label.replace('_', ' ')}."
    findings = {"root_cause": label if affected else "no_error", "affected_invoices": affected}
    yield ToolCall("submit_findings", {**findings, "summary": summary})
