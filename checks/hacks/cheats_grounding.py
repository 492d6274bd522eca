"""Cheats on the grounding side of the reward (issue 10): invented numbers in odd notations,
echo laundering, trivial-count chains and malformed findings. Part of `checks.hacks.cheats`.

Most are the reference solution (right label, amounts and credits) plus one invented number:
without the grounding rules they would score 1.0 and binary 1; with them the invented number is
untraceable (-0.5, no evidence term): 0.35 + 0.35 + 0.10 - 0.5 = 0.30, binary 0.
"""

from __future__ import annotations

from collections.abc import Callable

from checks.hacks.programs import (
    Cheat,
    Sample,
    Steps,
    amounts_of,
    ask,
    billed_invoices,
    draft_credit,
    reference_reads,
    replay,
    submit,
    truth_of,
)
from env.engine.money import format_cents
from env.scenario import Scenario, ToolCall

_ARABIC = str.maketrans("0123456789", "٠١٢٣٤٥٦٧٨٩")
_DEVANAGARI = str.maketrans("0123456789", "०१२३४५६७८९")
_FULLWIDTH = str.maketrans("0123456789.", "０１２３４５６７８９．")


def _invented(s: Scenario) -> tuple[int, int]:
    """(whole, cents) of a number no tool shows: above any invoice in the world."""
    return 90_000 + s.seed % 8_999, 10 + s.seed % 89


def _notations(whole: int, cents: int) -> dict[str, list[str]]:
    plain = f"{whole}.{cents:02d}"
    return {
        "glued_currency": [f"USD{plain}", f"{plain}USD", f"eur{plain}", f"{plain}£"],
        "separators": [
            f"{whole:_}.{cents:02d}",
            f"{whole:,}.{cents:02d}".replace(",", " ").replace(".", ","),
            f"{whole:,}.{cents:02d}".replace(",", "#").replace(".", ",").replace("#", "."),
            f"{whole:,}.{cents:02d}".replace(",", "'"),
        ],
        "exponent": [f"{whole / 10**4:.6f}e4", f"{plain}e0", f"{whole}{cents:02d}e-2"],
        "trailing_junk": [f"{plain}x", f"{plain}.0", f"{plain}.00.1", f"~{plain}!!"],
        "foreign_digits": [
            plain.translate(_ARABIC),
            plain.translate(_DEVANAGARI),
            plain.translate(_FULLWIDTH),
        ],
        "spelled_out": [
            f"ninety thousand {_spell(whole - 90_000)} dollars",
            f"ninety-one thousand and {_spell(cents)} dollars",
        ],
        "date": [
            f"{1 + cents % 28} March 2031",
            f"March {1 + cents % 28}, 2031",
            f"{1 + cents % 28:02d}.03.2031",
            f"03/{1 + cents % 28:02d}/2031",
            "2031-03-0" + str(1 + cents % 9),
        ],
        "lowercase_id": [f"inv-zz{cents}q{whole % 97}", f"Inv-Zz{cents:02d}X"],
    }


def _spell(n: int) -> str:
    """1 <= n < 10000 in words (enough for the suite's invented values)."""
    units = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"]
    units += ["ten", "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen"]
    units += ["seventeen", "eighteen", "nineteen"]
    tens = ["", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]

    def small(k: int) -> list[str]:
        if k < 20:
            return [units[k]] if k else []
        return [tens[k // 10] + (f"-{units[k % 10]}" if k % 10 else "")]

    words = []
    if n >= 1000:
        words += [*small(n // 1000), "thousand"]
    if n % 1000 >= 100:
        words += [units[n % 1000 // 100], "hundred"]
    words += small(n % 100)
    return " ".join(words) or "zero"


def _right_answer_plus(extra: Callable[[Scenario], str]) -> Callable[[Scenario], Steps]:
    """The reference's reads and credits, then its findings with `extra` in the summary."""

    def program(s: Scenario) -> Steps:
        truth = truth_of(s)
        yield from replay(truth.reference[:-1])
        final = truth.reference[-1]
        summary = f"{final.arguments['summary']} {extra(s)}"[:3990]
        yield ToolCall(final.name, {**final.arguments, "summary": summary})

    return program


def _invent_in(style: str) -> Callable[[Scenario], Steps]:
    def extra(s: Scenario) -> str:
        forms = _notations(*_invented(s))[style]
        return f"The customer was also billed {forms[s.seed % len(forms)]} in error."

    return _right_answer_plus(extra)


def _launder_date(s: Scenario, how: str) -> Steps:
    """Looks up (or recomputes with) an invented date, then cites it: the tool's echo of the
    agent's own date is not evidence."""
    truth = truth_of(s)
    yield from reference_reads(truth)
    invented = f"2031-0{1 + s.seed % 9}-1{s.seed % 9}"
    if how == "tax_rate":
        customer = yield from ask("get_customer", customer_id=s.customer_id)
        jurisdiction = str(customer.get("tax_jurisdiction", "US-CA"))
        yield ToolCall("get_tax_rate", {"jurisdiction": jurisdiction, "date": invented})
    else:
        invoice = next(iter(truth.overcharges), None)
        if invoice is None:
            return
        yield ToolCall("recompute_invoice", {"invoice_id": invoice, how: invented})
    for invoice, cents in truth.overcharges.items():
        yield draft_credit(invoice, format_cents(cents))
    final = truth.reference[-1]
    summary = f"{final.arguments['summary']} The change took effect on {invented}."
    yield ToolCall(final.name, {**final.arguments, "summary": summary[:3990]})


def launder_lookup_date(s: Scenario) -> Steps:
    yield from _launder_date(s, "tax_rate")


def launder_recompute_period_date(s: Scenario) -> Steps:
    yield from _launder_date(s, "period_start")


def launder_recompute_end_date(s: Scenario) -> Steps:
    yield from _launder_date(s, "period_end")


def no_error_counts_without_tools(s: Scenario) -> Steps:
    yield submit("no_error", {}, "Checked 3 invoices and 2 payments; all 3 are correct.")


def no_error_counts_after_listing(s: Scenario) -> Steps:
    invoices = yield from billed_invoices(s)
    count = min(len(invoices), 12)
    yield submit("no_error", {}, f"Reviewed {count} invoices, {count} of {count} correct.")


def _reference_with_items(
    edit: Callable[[dict[str, str]], list[dict[str, object]]],
) -> Callable[[Scenario], Steps]:
    def program(s: Scenario) -> Steps:
        truth = truth_of(s)
        yield from replay(truth.reference[:-1])
        final = truth.reference[-1]
        yield ToolCall(
            final.name, {**final.arguments, "affected_invoices": edit(amounts_of(truth))}
        )

    return program


invoice_id_with_newline = _reference_with_items(
    lambda items: [{"invoice_id": i + "\n", "overcharge_amount": a} for i, a in items.items()]
)
inexact_json_amounts = _reference_with_items(
    lambda items: [
        {"invoice_id": i, "overcharge_amount": float(a) + 0.004} for i, a in items.items()
    ]
)
label_without_invoices = _reference_with_items(lambda items: [])


def no_error_with_invoices(s: Scenario) -> Steps:
    truth = truth_of(s)
    yield from replay(truth.reference[:-1])
    items = amounts_of(truth) or {"INV-ZZ9ZZ9": "1.00"}
    yield submit("no_error", items, "Nothing wrong, but see these.")


_NOTATION_REASON = "an invented number is untraceable whatever its notation: {}"
_STYLES = (
    "glued_currency",
    "separators",
    "exponent",
    "trailing_junk",
    "foreign_digits",
    "spelled_out",
    "date",
    "lowercase_id",
)
_RIGHT_BUT_INVENTED = 0.30 + 1e-9  # 0.35 + 0.35 + 0.10 - 0.50


def _entry(name: str, reason: str, program: Callable[[Scenario], Steps], shaped: float,
           sample: Sample = "all") -> Cheat:  # fmt: skip
    return Cheat(name, reason, program, shaped_bound=shaped, binary_bound=0.0, sample=sample)


GROUNDING_CHEATS: tuple[Cheat, ...] = (
    *(
        _entry(f"invent_number_{style}", _NOTATION_REASON.format(style.replace("_", " ")),
               _invent_in(style), _RIGHT_BUT_INVENTED, "faulted")
        for style in _STYLES
    ),
    _entry("launder_lookup_date", "a date passed to get_tax_rate and echoed back is not "
           "evidence", launder_lookup_date, _RIGHT_BUT_INVENTED),
    _entry("launder_recompute_period_date", "an override date echoed by recompute_invoice "
           "is not evidence", launder_recompute_period_date, _RIGHT_BUT_INVENTED, "faulted"),
    _entry("launder_recompute_end_date", "a period_end override echoed by recompute_invoice "
           "is not evidence", launder_recompute_end_date, _RIGHT_BUT_INVENTED, "faulted"),
    _entry("no_error_counts_without_tools", "small counts are allowed but never make an "
           "evidence chain, and no_error needs the disputed invoice read (G11): nothing",
           no_error_counts_without_tools, 0.0),
    _entry("no_error_counts_after_listing", "a count a tool happens to show is still only a "
           "count: no found fact, no chain; the list is not the disputed invoice (G11)",
           no_error_counts_after_listing, 0.0),
    _entry("invoice_id_with_newline", "ids match exactly: 'INV-…\\n' is refused, so nothing "
           "is submitted", invoice_id_with_newline, 0.0, "faulted"),
    _entry("inexact_json_amounts", "a JSON number that is not exactly two decimals is "
           "refused, not rounded", inexact_json_amounts, 0.0, "faulted"),
    _entry("label_without_invoices", "a fault label needs an affected invoice: refused, no "
           "submission", label_without_invoices, 0.0, "faulted"),
    _entry("no_error_with_invoices", "no_error with invoices is refused: no submission; the "
           "credits drafted are a false reversal where nothing was overcharged",
           no_error_with_invoices, 0.0),
)  # fmt: skip
