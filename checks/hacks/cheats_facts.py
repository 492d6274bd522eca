"""Cheats on the fourth release's rules: found look-ups are facts (G1.1), and a `no_error`
verdict cites a fact of the disputed invoice's own record (G11.3). Registered in
`checks.hacks.cheats`.

Making a resolved id a fact gives every policy that opens an invoice a chain for free: these
cheats check that a chain of ids alone never pays. `no_error` after reading the disputed
invoice earns nothing unless the summary cites something of that record (a total, a line,
its rate, its period): an id, a zero on every invoice, or a fact of another invoice is not it.
"""

from __future__ import annotations

from typing import Any

from checks.hacks.programs import (
    Cheat,
    Steps,
    ask,
    billed_invoices,
    guess_label,
    named_invoice,
    submit,
    truth_of,
)
from env.scenario import Scenario

_BUDGET = 30
_BLIND_NO_ERROR = 0.10  # issue 30: a read with nothing of it cited, at most 0.1 shaped, 0 binary


def _read_disputed(s: Scenario) -> Steps:
    """The customer, the list and the first disputed invoice (picked with the truth, a
    construction device: the rule under test is what is cited, not what is read)."""
    yield from ask("get_customer", customer_id=s.customer_id)
    yield from ask("list_invoices", customer_id=s.customer_id)
    disputed = truth_of(s).disputed_invoices[0]
    detail = yield from ask("get_invoice", invoice_id=disputed)
    return detail


def no_error_cites_only_ids(s: Scenario) -> Steps:
    """Reads the disputed invoice, answers no_error citing its id, subscription and customer:
    every citation a found fact (G1.1), none a fact of the record (G11.3)."""
    detail = yield from _read_disputed(s)
    ids = [detail.get(k) for k in ("invoice_id", "subscription_id", "customer_id")]
    yield submit("no_error", {}, f"Checked {', '.join(map(str, ids))}: billed correctly.")


def no_error_cites_a_zero(s: Scenario) -> Steps:
    """Reads the disputed invoice and cites the 0.00 every invoice shows somewhere (not its
    `amount_credited`: a credit support issued before the dispute is a real fact of it)."""
    detail = yield from _read_disputed(s)
    yield submit("no_error", {}, f"Checked {detail.get('invoice_id')}: 0.00 is due, right.")


def no_error_cites_another_invoice(s: Scenario) -> Steps:
    """Reads the disputed invoice but cites the total of another one (from the listing)."""
    yield from ask("get_customer", customer_id=s.customer_id)
    invoices = yield from billed_invoices(s)
    disputed = set(truth_of(s).disputed_invoices)
    first = next(iter(sorted(disputed)))
    detail = yield from ask("get_invoice", invoice_id=first)
    shown = {str(v) for v in (detail.get("total"), detail.get("subtotal"))}
    other = next((i for i in invoices if i["invoice_id"] not in disputed
                  and i["total"] not in shown), None)  # fmt: skip
    if other is None:
        yield submit("no_error", {}, f"Checked {first}: billed correctly.")
        return
    summary = f"Checked {first}; {other['invoice_id']} totals {other['total']}: billed right."
    yield submit("no_error", {}, summary)


def _harvest(s: Scenario) -> Steps:
    """Opens every invoice the listing and the complaint name and every subscription's
    timeline, as far as the budget goes; returns every id the tools resolved."""
    customer = yield from ask("get_customer", customer_id=s.customer_id)
    invoices = yield from billed_invoices(s)
    ids: list[str] = [s.customer_id, *customer.get("subscription_ids", [])]
    calls = 2
    for sub in customer.get("subscription_ids", []):
        if calls < _BUDGET - 8:
            yield from ask("get_subscription_timeline", subscription_id=sub)
            calls += 1
    for invoice in invoices:
        if calls >= _BUDGET - 2:
            break
        yield from ask("get_invoice", invoice_id=invoice["invoice_id"])
        ids.append(invoice["invoice_id"])
        calls += 1
    return ids, invoices


def id_harvest_no_error(s: Scenario) -> Steps:
    """Opens everything and answers no_error citing every id it resolved."""
    ids, _ = yield from _harvest(s)
    yield submit("no_error", {}, ("Checked " + ", ".join(ids))[:3900] + ": all correct.")


def id_harvest_keyword(s: Scenario) -> Steps:
    """Opens everything; a keyword label, the named invoice reported at its total without a
    credit, every resolved id cited."""
    ids, invoices = yield from _harvest(s)
    label = guess_label(s.complaint)
    summary = ("Checked " + ", ".join(ids))[:3900] + "."
    if label == "no_error" or not invoices:
        yield submit("no_error", {}, summary)
        return
    target: dict[str, Any] = named_invoice(s.complaint, invoices)
    yield submit(label, {target["invoice_id"]: target["total"]}, summary)


FACT_CHEATS: tuple[Cheat, ...] = (
    Cheat("no_error_cites_only_ids", "ids are found facts (G1.1) but no fact of the disputed "
          "record: a no_error citing nothing of it earns nothing (G11.3)",
          no_error_cites_only_ids, _BLIND_NO_ERROR, sample="no_error"),
    Cheat("no_error_cites_a_zero", "every invoice shows 0.00 somewhere: a zero of get_invoice "
          "is no fact of the disputed record (G11.3)", no_error_cites_a_zero, _BLIND_NO_ERROR,
          sample="no_error"),
    Cheat("no_error_cites_another_invoice", "a fact of another invoice does not back a "
          "no_error on the disputed one (G11.3)", no_error_cites_another_invoice,
          _BLIND_NO_ERROR, sample="no_error"),
    Cheat("id_harvest_no_error", "every invoice opened and every resolved id cited: a chain of "
          "ids earns nothing, even where no_error is the truth (G1.1, G11.3)",
          id_harvest_no_error, 0.0, sample="all"),
    Cheat("id_harvest_keyword", "ids as facts make no amount right: a keyword label and an "
          "uncredited total keep at most the label (0.35)", id_harvest_keyword, 0.35,
          sample="all"),
)  # fmt: skip
