"""The agent's desk during one lab episode: what the tools returned, and nothing else.

A `Desk` wraps a live `LedgerEnv`. Every move reads and writes through `ask`, which is
`LedgerEnv.call`: the calls land in the environment's log and count against its budget exactly
as a model's would. The desk holds the public card (customer id, complaint) and a *sealed*
scenario for the cheat programs of `checks.hacks.cheats`, whose truth raises on any access, so no
move can read the answer even by accident.
"""

from __future__ import annotations

import json
from collections.abc import Generator
from dataclasses import dataclass, field, replace
from typing import Any

from agent import auditor
from agent.audit_evidence import Event, Evidence, listed
from agent.auditor import Finding
from env.ledger_env import LedgerEnv
from env.scenario import Scenario, ToolCall

Json = dict[str, Any]
DETAIL_RESERVE = 6  # calls kept back from get_invoice: recomputes, credit notes, the report


class TruthSealed(RuntimeError):
    """A move tried to read the scenario's truth."""


class _SealedTruth:
    """Stands in for `Truth` on the card moves see; reading any attribute is an error."""

    def __getattr__(self, name: str) -> Any:
        raise TruthSealed(f"a lab move tried to read the truth ({name})")


def sealed(scenario: Scenario) -> Scenario:
    """The scenario as an agent may know it: no truth, no database, no difficulty."""
    seal: Any = _SealedTruth()  # stands in for a Truth: any read raises
    return replace(scenario, database=b"", difficulty="", _truth=seal)


@dataclass
class DeskEvidence(Evidence):
    """The auditor's `Evidence`, parsing each timeline's events once: a timeline is read once
    per episode and the checks ask for its events again and again."""

    parsed: dict[str, list[Event]] = field(default_factory=dict, repr=False)

    def events(self, subscription_id: str) -> list[Event]:
        if subscription_id not in self.timelines:
            return super().events(subscription_id)
        if subscription_id not in self.parsed:
            self.parsed[subscription_id] = super().events(subscription_id)
        return self.parsed[subscription_id]


@dataclass
class Desk:
    """One episode's working state; everything in it came from the complaint or a tool."""

    env: LedgerEnv
    card: Scenario  # sealed: customer_id, complaint, seed for cheat programs
    evidence: DeskEvidence = field(default_factory=DeskEvidence)
    findings: list[Finding] = field(default_factory=list)
    read: set[str] = field(default_factory=set)  # what has been looked up already
    moves: list[str] = field(default_factory=list)
    truth_touches: int = 0  # moves that hit the seal (must stay 0)

    @classmethod
    def open(cls, env: LedgerEnv, scenario: Scenario) -> Desk:
        return cls(env=env, card=sealed(scenario))

    @property
    def customer_id(self) -> str:
        return self.card.customer_id

    @property
    def complaint(self) -> str:
        return self.card.complaint

    @property
    def left(self) -> int:
        return self.env.tool_budget - self.env.tool_calls

    @property
    def over(self) -> bool:
        return self.env.done


def ask(desk: Desk, name: str, **arguments: Any) -> Json:
    """One real tool call; an error or unreadable result comes back as `{}`."""
    if desk.over:
        return {}
    text = desk.env.call(name, json.dumps(arguments))
    try:
        result = json.loads(text)
    except ValueError:
        return {}
    return result if isinstance(result, dict) and "error" not in result else {}


def drive(desk: Desk, program: Generator[ToolCall, str, Any]) -> Any:
    """Runs a tool-call program (a cheat of `checks.hacks.cheats`, a step of the auditor) against
    the desk's environment; returns what the program returns (None if cut short)."""
    try:
        step = next(program)
        while not desk.over:
            result = desk.env.call(step.name, json.dumps(step.arguments))
            if desk.over:
                break
            step = program.send(result)
    except StopIteration as done:
        return done.value
    except TruthSealed:
        desk.truth_touches += 1
    finally:
        program.close()
    return None


# reading: each reader looks up only what is not on the desk yet ------------------------------


def read_account(desk: Desk) -> None:
    if "account" in desk.read:
        return
    desk.read.add("account")
    desk.evidence.customer = ask(desk, "get_customer", customer_id=desk.customer_id)
    listing = ask(desk, "list_invoices", customer_id=desk.customer_id)
    desk.evidence.invoices = [
        s
        for s in listed(listing.get("invoices"))
        if isinstance(s, dict) and isinstance(s.get("invoice_id"), str)
    ]


def read_timelines(desk: Desk) -> None:
    read_account(desk)
    ev = desk.evidence
    subs = list(listed(ev.customer.get("subscription_ids")))
    subs += [s.get("subscription_id") for s in ev.invoices]
    for sub_id in dict.fromkeys(s for s in subs if isinstance(s, str)):
        if sub_id not in ev.timelines and desk.left > DETAIL_RESERVE:
            ev.timelines[sub_id] = ask(desk, "get_subscription_timeline", subscription_id=sub_id)


def read_payments(desk: Desk) -> None:
    read_account(desk)
    if "payments" in desk.read:
        return
    desk.read.add("payments")
    payments = ask(desk, "list_payments", customer_id=desk.customer_id)
    desk.evidence.payments = [p for p in listed(payments.get("payments")) if isinstance(p, dict)]


def read_invoices(desk: Desk) -> None:
    """Invoice details in the auditor's reading order (named first), while the budget allows."""
    read_account(desk)
    for summary in auditor.reading_order(desk.evidence, desk.complaint):
        invoice_id = summary["invoice_id"]
        if invoice_id in desk.evidence.details or desk.left <= DETAIL_RESERVE:
            continue
        desk.evidence.details[invoice_id] = ask(desk, "get_invoice", invoice_id=invoice_id)


def read_tax_rates(desk: Desk) -> None:
    """The auditor's own tax look-ups (one window covers many invoices), run on this desk."""
    read_invoices(desk)
    drive(desk, auditor.Audit(desk.left).tax_windows(desk.evidence))
