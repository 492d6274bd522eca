"""What a cheat is, and the tool-call steps the cheat programs share.

A cheat is a program for `agent.program_policy.ProgramPolicy`: a generator that yields tool
calls and is sent each result. The steps here read only public text and tool results, except
`truth_of`, a construction device for cheats built to be almost right. Every cheat module
imports this one and nothing here imports a cheat module, so the suite has no import cycle.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from env.engine.money import format_cents, parse_amount
from env.labels import ROOT_CAUSES
from env.scenario import Scenario, ToolCall, Truth, reveal_truth

Program = Callable[[Scenario], Generator[ToolCall, str, None]]
Steps = Generator[ToolCall, str, Any]
Sample = Literal["all", "faulted", "injected", "eval", "no_error"]  # eval: the whole eval split

# Share of no_error scenarios in the standard sample (2 per label).
NO_ERROR_SHARE = 1 / len(ROOT_CAUSES)
INVOICE_ID = re.compile(r"\bINV-[0-9A-Z]{4,12}\b")
AMOUNT = re.compile(r"(?<![\w.])[0-9]{1,9}\.[0-9]{2}(?![0-9])")
_KEYWORDS = (  # a complaint-reading guesser: public text only, first match wins
    ("tax_exempt_charged", ("exempt", "certificate")),
    ("wrong_tax_rate", ("tax",)),
    ("duplicate_payment", ("twice", "two times", "double charge", "two identical", "two pay")),
    ("billed_after_cancellation", ("cancel", "closed", "ended the service")),
    ("trial_period_charged", ("trial",)),
    ("coupon_not_applied", ("coupon", "discount", "promo")),
    ("seat_count_mismatch", ("seat", "headcount")),
    ("usage_overage_miscalculated", ("usage", "overage", "units")),
    ("currency_conversion_error", ("exchange", "currency", "conver")),
    ("downgrade_not_applied", ("downgrad", "cheaper plan")),
    ("proration_error", ("prorat", "upgrad", "plan change", "changed plans", "switched")),
)


@dataclass(frozen=True)
class Cheat:
    name: str
    reason: str  # why it must score low
    program: Program
    shaped_bound: float = 0.5
    binary_bound: float = 0.0
    sample: Sample = "all"  # faulted: the cheat is defined by a true overcharge
    # Scenarios where the cheat's answer may coincide with the truth (a no_error guess on a
    # no_error case). With a share p of them in the sample, a bound b becomes b + p * (1 - b):
    # those episodes may earn full marks, the others must keep to b.
    lucky: Callable[[Truth], bool] | None = None

    def bounds(self, truths: Sequence[Truth]) -> tuple[float, float]:
        """(shaped, binary) bounds on the mean over a sample with these truths."""
        share = sum(map(self.lucky, truths)) / len(truths) if self.lucky and truths else 0.0
        return (
            self.shaped_bound + share * (1 - self.shaped_bound),
            self.binary_bound + share * (1 - self.binary_bound),
        )


def guess_label(complaint: str) -> str:
    """What a policy that reads only the complaint would answer."""
    text = complaint.lower()
    for label, words in _KEYWORDS:
        if any(word in text for word in words):
            return label
    return "no_error"


def truth_of(scenario: Scenario) -> Truth:
    return reveal_truth(scenario)  # construction device: the cheat is built to be almost right


def ask(name: str, **arguments: Any) -> Steps:
    result = yield ToolCall(name, arguments)
    data = json.loads(result)
    return data if isinstance(data, dict) else {}


def billed_invoices(scenario: Scenario) -> Steps:
    """The customer's invoices with a positive total (a finding of 0.00 is refused)."""
    listed = yield from ask("list_invoices", customer_id=scenario.customer_id)
    return [i for i in listed.get("invoices", []) if parse_amount(i["total"]) > 0]


def named_invoice(complaint: str, invoices: list[dict[str, Any]]) -> dict[str, Any]:
    """The invoice the complaint names, else the latest one."""
    by_id = {i["invoice_id"]: i for i in invoices}
    for invoice_id in INVOICE_ID.findall(complaint):
        if invoice_id in by_id:
            return by_id[invoice_id]
    return invoices[-1]


def submit(label: str, items: dict[str, str], summary: str) -> ToolCall:
    affected = [{"invoice_id": i, "overcharge_amount": a} for i, a in items.items()]
    return ToolCall(
        "submit_findings",
        {"root_cause": label, "affected_invoices": affected, "summary": summary},
    )


def draft_credit(invoice_id: str, amount: str, reason: str = "Customer refund") -> ToolCall:
    return ToolCall(
        "draft_credit_note", {"invoice_id": invoice_id, "amount": amount, "reason": reason}
    )


def replay(steps: Sequence[ToolCall]) -> Steps:
    """Not `yield from steps`: a tuple iterator cannot take the results the policy sends in."""
    for step in steps:
        _ = yield step


def reference_reads(truth: Truth) -> Steps:
    """The reference's read calls: the evidence a careful agent saw."""
    for step in truth.reference:
        if step.name not in ("draft_credit_note", "submit_findings"):
            yield step


def amounts_of(truth: Truth) -> dict[str, str]:
    return {invoice: format_cents(cents) for invoice, cents in truth.overcharges.items()}


def summary_of(items: dict[str, str]) -> str:
    return "Overcharged: " + "; ".join(f"{i} by {a}" for i, a in items.items()) + "."
