"""Honest variants of a reference solution: other routes, call orders and ways of writing it.

Each `Variant` rewrites the reference episode of a scenario (its calls, and the results the
reference replay got) into another episode a careful analyst or a chat model could produce
with the same findings: straight to the named invoice, extra harmless reads, another order,
calculations written every way, other notations (`checks.honest_text`), markdown, the
customer's claim quoted as a claim; and the formats of `checks.honest_markup` (HTML, TeX
math, labels, pasted text, derived forms). A variant that does not apply to a scenario (no
named invoice, no calculation to write) returns None. `checks.honest` plays and scores them.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from decimal import Decimal

from checks import honest_text as tx
from checks.honest_markup import MARKUP_VARIANTS
from checks.honest_played import (
    Calls,
    Played,
    Variant,
    calculation,
    replayed_results,
    rows,
    subject_amount,
    with_summary,
)
from env.scenario import ToolCall

__all__ = ["VARIANTS", "Calls", "Played", "Variant", "replayed_results", "with_summary"]

# routes and orders ---------------------------------------------------------------------------


def as_is(played: Played) -> Calls:
    return with_summary(played, played.summary)


def _named(played: Played) -> str | None:
    """The one invoice the complaint names, when it is the disputed one."""
    named = sorted(set(tx.IDS.findall(played.scenario.complaint)))
    named = [i for i in named if i.startswith("INV-")]
    disputed = played.truth.disputed_invoices
    return named[0] if len(named) == 1 and tuple(named) == tuple(disputed) else None


def direct(played: Played) -> Calls | None:
    """The complaint's invoice opened first; no `list_invoices` at all. Invoices the findings
    cite that only the listing showed are opened one by one instead."""
    named = _named(played)
    if named is None:
        return None
    opened = {named} | {
        str(c.arguments["invoice_id"])
        for c in played.reads
        if c.name in ("get_invoice", "recompute_invoice")
    }
    cited = tx.IDS.findall(played.summary) + [
        i["invoice_id"] for i in played.submission["affected_invoices"]
    ]
    extra = [i for i in dict.fromkeys(cited) if i.startswith("INV-") and i not in opened]
    first = ToolCall("get_invoice", {"invoice_id": named})
    rest = [c for c in played.reads if c.name != "list_invoices" and c != first]
    more = [ToolCall("get_invoice", {"invoice_id": i}) for i in extra]
    return with_summary(played, played.summary, (first, *rest, *more, *played.drafts))


def extra_reads(played: Played) -> Calls:
    """Harmless reads besides the reference's: payments, the customer again, the paid
    invoices, every subscription's timeline."""
    customer = played.scenario.customer_id
    extra = [
        ToolCall("list_payments", {"customer_id": customer}),
        ToolCall("get_customer", {"customer_id": customer}),
        ToolCall("list_invoices", {"customer_id": customer, "status": "paid"}),
    ]
    for _, result in played.shown("get_customer")[:1]:
        for sub in result.get("subscription_ids", [])[:2]:
            extra.append(ToolCall("get_subscription_timeline", {"subscription_id": sub}))
    budget = 30 - len(played.calls)
    return with_summary(played, played.summary, (*played.reads, *extra[:budget], *played.drafts))


def reads_reversed(played: Played) -> Calls:
    return with_summary(played, played.summary, (*reversed(played.reads), *played.drafts))


def credit_as_found(played: Played) -> Calls:
    """Each credit note drafted right after the recompute that proved it."""
    body: list[ToolCall] = []
    pending = list(played.drafts)
    for call in played.reads:
        body.append(call)
        if call.name == "recompute_invoice":
            mine = [d for d in pending if d.arguments["invoice_id"] == call.arguments["invoice_id"]]
            body += mine
            pending = [d for d in pending if d not in mine]
    return with_summary(played, played.summary, (*body, *pending))


def credit_then_reread(played: Played) -> Calls:
    """The credits drafted, then each credited invoice opened again to see the note on it."""
    again = [ToolCall("get_invoice", {"invoice_id": d.arguments["invoice_id"]})
             for d in played.drafts]  # fmt: skip
    return with_summary(played, played.summary, (*played.reads, *played.drafts, *again))


# calculations ----------------------------------------------------------------------------------


def minus(form: str) -> Callable[[Played], Calls | None]:
    """A sentence with the overcharge's subtraction, written `form`."""

    def build(played: Played) -> Calls | None:
        found = calculation(played)
        if found is None:
            return None
        a, b, c = found
        code = played.currency
        symbol = tx.SYMBOLS.get(code, code)
        written = {
            "ascii": f"{a} - {b} = {c}",
            "minus_sign": f"{a} − {b} = {c}",
            "en_dash": f"{a} – {b} = {c}",
            "result_first": f"{c} = {a} − {b}",
            "codes": f"{a} {code} − {b} {code} = {c} {code}",
            "symbols": f"{symbol}{a} − {symbol}{b} = {symbol}{c}",
            "backticked": f"`{a} − {b} = {c}`",
        }[form]
        return with_summary(played, f"{played.summary} Billed minus due: {written}.")

    return build


def times(form: str) -> Callable[[Played], Calls | None]:
    """A sentence doubling a found amount, written `form` (`2 * 306.16 = 612.32`)."""

    def build(played: Played) -> Calls | None:
        amount = subject_amount(played)
        if amount is None:
            return None
        double = f"{Decimal(amount) * 2:.2f}"
        written = {
            "star": f"2 * {amount} = {double}",
            "x": f"2 x {amount} = {double}",
            "times_sign": f"2 × {amount} = {double}",
            "count_after": f"{amount} × 2 = {double}",
            "glued": f"2×{amount} = {double}",
        }[form]
        return with_summary(played, f"{played.summary} For scale, twice it: {written}.")

    return build


def divided(played: Played) -> Calls | None:
    amount = subject_amount(played)
    if amount is None or (Decimal(amount) * 100) % 2:
        return None
    half = f"{Decimal(amount) / 2:.2f}"
    return with_summary(played, f"{played.summary} Half of it: {amount} / 2 = {half}.")


# notation --------------------------------------------------------------------------------------


def edited(edit: Callable[[Played, str], str]) -> Callable[[Played], Calls]:
    return lambda played: with_summary(played, edit(played, played.summary))


def _with_rate(played: Played, spaced: bool) -> str:
    """The summary's rates as percentages; a summary without one gains its invoice's rate."""
    text = played.summary
    rates = [r for r in played.rates if re.search(rf"(?<![\w.]){re.escape(r)}(?![\w])", text)]
    if rates:
        return tx.rates_as_percent(text, rates, spaced)
    shown = played.invoice(played.subject) or {}
    rate = (shown.get("tax") or {}).get("rate")
    if not isinstance(rate, str):
        return text
    return f"{text} The tax rate on {played.subject} is {tx.percent(rate, spaced)}."


NOTATIONS: tuple[tuple[str, str, Callable[[Played, str], str]], ...] = (
    ("ids_backticked", "every id in a code span", lambda p, t: tx.wrap_ids(t, "`")),
    ("ids_bold", "every id in bold", lambda p, t: tx.wrap_ids(t, "**")),
    ("amounts_backticked", "every amount in a code span",
     lambda p, t: tx.wrap_amounts(t, "`", skip=p.rates)),
    ("amounts_code_before", "`USD 306.16`", lambda p, t: tx.code_before(t, p.currency, p.rates)),
    ("amounts_code_after", "`306.16 USD`", lambda p, t: tx.code_after(t, p.currency, p.rates)),
    ("amounts_symbol", "`$306.16`, `C$306.16`, `€306.16`",
     lambda p, t: tx.symbol_before(t, p.currency, p.rates)),
    ("amounts_thousands", "`1,201.12`", lambda p, t: tx.thousands(t)),
    ("percent_glued", "rates as `7.25%`", lambda p, t: _with_rate(p, spaced=False)),
    ("percent_spaced", "rates as `7.25 %`", lambda p, t: _with_rate(p, spaced=True)),
    ("dates_day_month", "`13 Oct 2025`", lambda p, t: tx.dates_in_words(t, "day_month")),
    ("dates_month_day", "`October 13, 2025`", lambda p, t: tx.dates_in_words(t, "month_day")),
    ("dates_curly_quoted", "“2025-10-13”", lambda p, t: tx.quote_dates(t, "“", "”")),
    ("dates_straight_quoted", '"2025-10-13"', lambda p, t: tx.quote_dates(t, '"', '"')),
)  # fmt: skip


# markdown and the claim ------------------------------------------------------------------------


def md_table(played: Played) -> Calls:
    header = ("invoice", "overcharge") if played.submission["affected_invoices"] else (
        "invoice", "total, billed right")  # fmt: skip
    text = f"{played.summary}\n\n{tx.table(header, rows(played))}"
    return with_summary(played, text)


def md_numbered(played: Played) -> Calls:
    listed = "\n".join(f"{n}. {a}: {b}" for n, (a, b) in enumerate(rows(played), 1))
    return with_summary(played, f"Findings:\n{listed}\n\n{played.summary}")


def md_amount_first(played: Played) -> Calls:
    """A numbered list whose items start with the amount: `1. 445.20 CAD on INV-…`."""
    listed = "\n".join(f"{n}. {b} on {a}" for n, (a, b) in enumerate(rows(played), 1))
    return with_summary(played, f"{played.summary}\n\n{listed}")


def md_bold(played: Played) -> Calls:
    label = str(played.submission["root_cause"]).replace("_", " ")
    text = tx.wrap_amounts(tx.wrap_ids(played.summary, "**"), "**", skip=played.rates)
    return with_summary(played, f"**Root cause: {label}.** {text}")


def md_report(played: Played) -> Calls:
    """A heading, the summary as bullets, code spans for ids and amounts."""
    spans = tx.wrap_amounts(tx.wrap_ids(played.summary, "`"), "`", skip=played.rates)
    label = str(played.submission["root_cause"])
    text = f"## Findings: `{label}`\n\n{tx.bullets(spans, numbered=False)}"
    return with_summary(played, text)


def md_numbered_sentences(played: Played) -> Calls:
    return with_summary(played, tx.bullets(played.summary, numbered=True))


def _complaint_sentences(complaint: str) -> list[str]:
    lines = [line.strip() for line in complaint.strip().splitlines() if line.strip()]
    body = " ".join(lines[1:-2])  # the greeting, the sign-off and the signature left out
    return [s for s in re.split(r"(?<=[.!?])\s+", body) if s]


def claim_quoted(played: Played) -> Calls | None:
    """The complaint's first sentence quoted and labelled as the customer's claim."""
    said = _complaint_sentences(played.scenario.complaint)
    if not said:
        return None
    text = f"The customer wrote: “{said[0]}” That is their claim; what the tools show: "
    return with_summary(played, text + played.summary)


def claim_amount_quoted(played: Played) -> Calls | None:
    """A sentence of the complaint that states an amount, quoted as the customer's claim."""
    said = [s for s in _complaint_sentences(played.scenario.complaint) if tx.AMOUNT.search(s)]
    if not said:
        return None
    text = f'{played.summary} The customer\'s claim, "{said[0]}", is not what the records show.'
    return with_summary(played, text)


VARIANTS: tuple[Variant, ...] = (
    Variant("reference", "the reference solution as generated", as_is),
    Variant("direct", "straight to the named invoice, no list_invoices", direct),
    Variant("extra_reads", "payments, customer, paid invoices, timelines besides", extra_reads),
    Variant("reads_reversed", "the reads in the opposite order", reads_reversed),
    Variant("credit_as_found", "each credit right after its recompute", credit_as_found),
    Variant("credit_then_reread", "credited invoices opened again", credit_then_reread),
    *(Variant(f"calc_{f}", f"overcharge as a subtraction, {f}", minus(f))
      for f in ("ascii", "minus_sign", "en_dash", "result_first", "codes", "symbols",
                "backticked")),
    *(Variant(f"calc_times_{f}", f"a doubling, {f}", times(f))
      for f in ("star", "x", "times_sign", "count_after", "glued")),
    Variant("calc_divided", "a halving, `a / 2 = c`", divided),
    *(Variant(name, what, edited(edit)) for name, what, edit in NOTATIONS),
    Variant("md_table", "the summary and a markdown table", md_table),
    Variant("md_numbered", "a numbered list of invoices first", md_numbered),
    Variant("md_amount_first", "a numbered list, each item an amount first", md_amount_first),
    Variant("md_bold", "bold label, ids and amounts", md_bold),
    Variant("md_report", "a heading and bullets, code spans", md_report),
    Variant("md_numbered_sentences", "each sentence a numbered item", md_numbered_sentences),
    Variant("claim_quoted", "the complaint quoted as a claim", claim_quoted),
    Variant("claim_amount_quoted", "the complaint's amount quoted as a claim",
            claim_amount_quoted),
    *MARKUP_VARIANTS,
)  # fmt: skip
