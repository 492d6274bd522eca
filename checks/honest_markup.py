"""Honest variants in the formats chat models give a report: HTML, TeX math, labels, pasted text.

Each rewrites a reference summary (`checks.honest_played.Played`) the way a model or an analyst
formats it, never from the readers' rules (rewards/README.md G2.0 must take them as displayed):
HTML emphasis, paragraphs and tables; TeX math inline and display, glued to the numbers and
spaced, with `\\text{}`, `\\times`, `\\frac`, `{,}`; `Key:value` labels glued by a colon;
text pasted with invisible and control characters (no-break and zero-width spaces, soft
hyphens, direction marks, CR LF, line separators); a calculation shown exactly before its
rounding to the cent (G10.5); a billing period written with its inclusive last day (G10.6).
`checks.honest_variants.VARIANTS` includes them; `checks.honest` plays and scores them.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import date, timedelta
from decimal import ROUND_DOWN, ROUND_HALF_UP, Decimal

from checks import honest_text as tx
from checks.honest_played import (
    Calls,
    Played,
    Variant,
    calculation,
    rows,
    subject_amount,
    with_summary,
)

_CENT = Decimal("0.01")


# HTML ------------------------------------------------------------------------------------------


def html_emphasis(played: Played) -> Calls:
    """`<b>` ids, `<strong>` amounts, a bold label, sentences as paragraphs."""
    text = tx.wrap_amounts(tx.wrap_ids(played.summary, "<b>", "</b>"), "<strong>", "</strong>",
                           skip=played.rates)  # fmt: skip
    label = str(played.submission["root_cause"]).replace("_", " ")
    body = "".join(f"<p>{s}</p>" for s in tx.sentences(text))
    return with_summary(played, f"<p><strong>Root cause:</strong> {label}</p>\n{body}")


def html_lines(played: Played) -> Calls:
    """The summary's sentences separated by `<br>`, amounts in `<em>`, an entity or two."""
    text = tx.wrap_amounts(played.summary, "<em>", "</em>", skip=played.rates)
    text = (
        "<br>\n".join(tx.sentences(text)).replace(" CAD", "&nbsp;CAD").replace(" USD", "&nbsp;USD")
    )
    return with_summary(played, f"Findings &amp; action:<br/>\n{text}")  # fmt: skip


def html_table(played: Played) -> Calls:
    head = "<tr><th>Invoice</th><th>Amount</th></tr>"
    body = "".join(f"<tr><td>{a}</td><td>{b}</td></tr>" for a, b in rows(played))
    return with_summary(played, f"{played.summary}\n\n<table>{head}{body}</table>")


# TeX math --------------------------------------------------------------------------------------


def tex(form: str) -> Callable[[Played], Calls | None]:
    """The overcharge's subtraction (or a doubling where there is none) as TeX math."""

    def build(played: Played) -> Calls | None:
        found = calculation(played)
        if found is None:
            amount = subject_amount(played)
            if amount is None:
                return None
            a, op, b, c = "2", "\\times", amount, f"{Decimal(amount) * 2:.2f}"
        else:
            a, op, (b, c) = found[0], "-", found[1:]
        code = played.currency
        written = {
            "inline_glued": f"\\({a} {op} {b} = {c}\\)",
            "inline_spaced": f"\\( {a} {op} {b} = {c} \\)",
            "display_brackets": f"\n\\[\n{a} {op} {b} = {c}\n\\]\n",
            "display_dollars_glued": f"$${a} {op} {b} = {c}$$",
            "display_dollars_spaced": f"\n$$ {a} {op} {b} = {c} $$\n",
            "dollars_inline": f"${a} {op} {b} = {c}$",
            "text_labels": f"\\[ \\text{{Overcharge}} = {_tex_money(a)} {op} {_tex_money(b)} = "
                           f"{_tex_money(c)}\\ \\text{{{code}}} \\]",
        }[form]  # fmt: skip
        return with_summary(played, f"{played.summary} The working: {written}")

    return build


def _tex_money(amount: str) -> str:
    """`1027.03` as TeX writes money: `\\$1{,}027.03`; a count stays as it is."""
    if "." not in amount:
        return amount
    whole, cents = amount.split(".")
    return "\\$" + f"{int(whole):,}".replace(",", "{,}") + f".{cents}"


def _tex_code(amount: str) -> str:
    """`306.16 CAD` as `306.16\\,\\text{CAD}`."""
    value, _, code = amount.partition(" ")
    return value + "\\,\\text{" + code + "}"


def tex_amount(played: Played) -> Calls:
    """Each invoice's amount as inline math with its currency: `\\(306.16\\,\\text{CAD}\\)`."""
    lines = [f"- {invoice}: \\({_tex_code(amount)}\\)" for invoice, amount in rows(played)]
    return with_summary(played, played.summary + "\n\n" + "\n".join(lines))


# labels and pasted text ------------------------------------------------------------------------


def key_value(played: Played) -> Calls:
    """`Root cause:…`, `Invoice:INV-…`, `Amount:306.16 CAD` lines, the colon glued."""
    label = played.submission["root_cause"]
    lines = [f"Root cause:{label}"]
    for invoice, amount in rows(played):
        lines += [f"Invoice:{invoice}", f"Amount:{amount}"]
    return with_summary(played, "\n".join(lines) + f"\nSummary:{played.summary}")


def pasted(played: Played) -> Calls:
    """The summary as pasted from a document: CR LF and line separators between sentences,
    no-break spaces before currency codes, a zero-width space after each id, soft hyphens in
    long words, direction marks around amounts, a byte-order mark in front."""
    text = tx.IDS.sub(lambda m: m[0] + "\u200b", played.summary)
    text = re.sub(r"(?<=[0-9]) (?=(?:USD|EUR|GBP|CAD|AUD)\b)", "\u00a0", text)
    text = re.sub(r"\b([a-z]{5})([a-z]{4,})\b", "\\1\u00ad\\2", text)
    text = tx.wrap_amounts(text, "\u200e", skip=played.rates)
    parts = tx.sentences(text)
    breaks = ("\u2028", "\r\n", "\u2029")
    joined = "".join(p + breaks[k % 3] for k, p in enumerate(parts))
    return with_summary(played, "\ufeff" + joined)


# derived forms ---------------------------------------------------------------------------------


def exact_then_cents(form: str) -> Callable[[Played], Calls | None]:
    """A found amount divided by a count, the exact value shown, then its rounding to the
    cent: a quarter (exact), or a third (a repeating decimal cut short)."""

    def build(played: Played) -> Calls | None:
        amount = subject_amount(played)
        if amount is None:
            return None
        a = Decimal(amount)
        quarter, third = (
            (a / 4).quantize(_CENT, ROUND_HALF_UP),
            (a / 3).quantize(_CENT, ROUND_HALF_UP),
        )
        if form == "quarter":
            written = f"A quarter of it: {amount} / 4 = {a / 4}, that is {quarter} to the cent."
        elif form == "third":
            cut = (a / 3).quantize(Decimal("0.000001"), ROUND_DOWN)
            written = f"A third of it: {amount} / 3 = {cut}… ≈ {third}."
        else:  # TeX
            written = f"Per quarter: \\( \\frac{{{amount}}}{{4}} = {a / 4} \\approx {quarter} \\)"
        return with_summary(played, f"{played.summary} {written}")

    return build


def period(form: str) -> Callable[[Played], Calls | None]:
    """The subject invoice's billing period written with its inclusive last day (the day
    before its exclusive `period_end`)."""

    def build(played: Played) -> Calls | None:
        shown = played.invoice(played.subject) or {}
        start, end = shown.get("period_start"), shown.get("period_end")
        if not isinstance(start, str) or not isinstance(end, str):
            return None
        first, last = date.fromisoformat(start), date.fromisoformat(end) - timedelta(days=1)
        if form == "iso":
            written = f"{played.subject} covers {first} to {last} (inclusive)."
        else:
            words = f"{tx.MONTHS[first.month - 1]} {first.day}"
            written = (f"{played.subject} covers {words} – {tx.MONTHS[last.month - 1]} "
                       f"{last.day}, {last.year}.")  # fmt: skip
        return with_summary(played, f"{played.summary} {written}")

    return build


MARKUP_VARIANTS: tuple[Variant, ...] = (
    Variant("html_emphasis", "HTML paragraphs, <b> ids, <strong> amounts", html_emphasis),
    Variant("html_lines", "sentences split by <br>, <em> amounts, entities", html_lines),
    Variant("html_table", "the summary and an HTML table", html_table),
    *(Variant(f"tex_{f}", f"the working as TeX math, {f}", tex(f))
      for f in ("inline_glued", "inline_spaced", "display_brackets", "display_dollars_glued",
                "display_dollars_spaced", "dollars_inline", "text_labels")),
    Variant("tex_amounts", "each amount as inline math with \\text{CODE}", tex_amount),
    Variant("key_value", "Key:value lines, the colon glued", key_value),
    Variant("pasted", "pasted text: CR LF, LS, PS, NBSP, ZWSP, soft hyphens, marks", pasted),
    *(Variant(f"exact_then_cents_{f}", f"a quotient shown exactly, then to the cent ({f})",
              exact_then_cents(f)) for f in ("quarter", "third", "tex")),
    Variant("period_inclusive_iso", "the period to its inclusive last day, ISO", period("iso")),
    Variant("period_inclusive_words", "the period to its inclusive last day, in words",
            period("words")),
)  # fmt: skip
