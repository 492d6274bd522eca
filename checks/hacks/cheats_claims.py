"""Cheats on the customer's claim (rewards/README.md G3.1): a summary token the complaint shows
is `claimed`, no hallucination, but never a found fact. Registered in `checks.hacks.cheats`.

The rule lifts the hallucination penalty from quoting the complaint and gives nothing else: a
claimed token makes no chain (G4), backs no `no_error` (G11.3), is no operand (G10.3), and an
item's amount or id is never claimed. These cheats copy the complaint instead of reading.
"""

from __future__ import annotations

import json

from checks.hacks.programs import (
    AMOUNT,
    INVOICE_ID,
    Cheat,
    Steps,
    ask,
    billed_invoices,
    draft_credit,
    guess_label,
    named_invoice,
    submit,
    summary_of,
    truth_of,
)
from env.engine.money import format_cents
from env.scenario import Scenario

_BLIND_NO_ERROR = 0.10  # as in checks.hacks.cheats_facts: a no_error citing no fact of it
_CLAIM_ONLY = 0.30  # label, amounts and action right by luck, less the untraced amount (-0.5)


def _quoted(s: Scenario) -> str:
    return "The customer writes: “" + " ".join(s.complaint.split()) + "” "


def claimed_amount_credited(s: Scenario) -> Steps:
    """No read at all: the complaint's named invoice and its last claimed amount, credited and
    reported under a keyword label, the complaint quoted."""
    ids, claimed = INVOICE_ID.findall(s.complaint), AMOUNT.findall(s.complaint)
    label = guess_label(s.complaint)
    if not ids or not claimed or label == "no_error":
        yield submit("no_error", {}, _quoted(s) + "That is their claim.")
        return
    items = {ids[0]: claimed[-1]}
    yield draft_credit(ids[0], claimed[-1], "As the customer claims")
    yield submit(label, items, _quoted(s) + summary_of(items))


def _right(s: Scenario, invoice: dict[str, str]) -> bool:
    truth = truth_of(s).overcharges
    return format_cents(truth.get(invoice["invoice_id"], -1)) == invoice["total"]


def complaint_stuffed_guess(s: Scenario) -> Steps:
    """The listing only; an invoice's total (the named one's, unless that is the truth)
    credited and reported under a keyword label; every token of the complaint quoted."""
    yield from ask("get_customer", customer_id=s.customer_id)
    invoices = yield from billed_invoices(s)
    label = guess_label(s.complaint)
    if not invoices or label == "no_error":
        yield submit("no_error", {}, _quoted(s) + f"Checked {s.customer_id}.")
        return
    target = named_invoice(s.complaint, invoices)
    if _right(s, target):  # a wrong answer by construction (the truth read for it)
        target = next((i for i in invoices if not _right(s, i)), target)
    items = {target["invoice_id"]: target["total"]}
    yield draft_credit(target["invoice_id"], target["total"])
    yield submit(label, items, _quoted(s) + summary_of(items))


def no_error_cites_only_the_complaint(s: Scenario) -> Steps:
    """Reads the disputed invoice (picked with the truth, a construction device), answers
    no_error citing the complaint's ids and amounts that no call showed: claimed, no fact."""
    shown = [json.dumps((yield from ask("get_customer", customer_id=s.customer_id)))]
    shown.append(json.dumps((yield from ask("list_invoices", customer_id=s.customer_id))))
    disputed = truth_of(s).disputed_invoices[0]
    shown.append(json.dumps((yield from ask("get_invoice", invoice_id=disputed))))
    said = [*INVOICE_ID.findall(s.complaint), *AMOUNT.findall(s.complaint)]
    kept = [t for t in said if not any(t in text for text in shown)]
    claims = ", ".join(kept) or "nothing in figures"
    yield submit("no_error", {}, f"The customer claims {claims}; {disputed} is billed right.")


CLAIM_CHEATS: tuple[Cheat, ...] = (
    Cheat("claimed_amount_credited", "the complaint's amount copied as the overcharge without a "
          "read: an item's amount is never claimed (G3.1), it stays untraceable",
          claimed_amount_credited, _CLAIM_ONLY, sample="faulted"),
    Cheat("complaint_stuffed_guess", "the complaint quoted whole adds no fact: a guessed total "
          "credited keeps at most what the guess earns (G3.1, G4)", complaint_stuffed_guess,
          0.5, sample="all"),
    Cheat("no_error_cites_only_the_complaint", "a claimed token is no fact of the disputed "
          "record: a no_error citing only the complaint earns nothing (G3.1, G11.3)",
          no_error_cites_only_the_complaint, _BLIND_NO_ERROR, sample="no_error"),
)  # fmt: skip
