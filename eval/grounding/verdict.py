"""The grader's verdict on the findings: each citation's status, and whether they are grounded.

rewards/README.md G6 (what is cited), G3 (allowed numbers), G3.1 (the customer's claim), G8
and G10.4 (status: evidence, derived, allowed, claimed, echo_only, untraceable), G10 (derived
amounts: `eval.grounding.derive`) and G4 (a chain needs a found fact). `trace_findings` takes
the per-call views of `eval.grounding.trace.call_views`; `grounded` is the verdict `eval.grader`
reports as grounded success, and the binary reward must equal it (G9, `python -m
checks.agreement`).
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from env.findings import Findings
from eval.grounding.derive import derived_values
from eval.grounding.display import rendered
from eval.grounding.notation import Reading, decimal_text
from eval.grounding.read import read
from eval.grounding.trace import Seen


@dataclass(frozen=True)
class Traced:
    """One citation's status (G8); `sources` index the calls that showed it."""

    text: str
    where: str
    value: str
    status: str
    sources: tuple[int, ...]
    allowed_kind: bool
    kind: str = ""  # the reading's kind (G2.4): number, percent, date, id, ...


def _citations(findings: Findings) -> list[tuple[Reading, str]]:
    """rewards/README.md G6: ids and amounts, then every summary token; each distinct one once."""
    cited: list[tuple[Reading, str]] = []
    for item in findings.affected_invoices:
        cited.append((Reading(item.invoice_id, "id", item.invoice_id), "invoice_id"))
        amount = decimal_text(Decimal(item.overcharge_amount))
        cited.append((Reading(item.overcharge_amount, "number", amount), "amount"))
    cited.extend((r, "summary") for r in read(rendered(findings.summary)))  # G2.0: as seen
    unique: dict[tuple[Reading, str], None] = {}
    for entry in cited:
        unique.setdefault(entry, None)
    return list(unique)


def trace_findings(
    findings: Findings, views: list[tuple[Seen, Seen]], claims: Seen | None = None
) -> list[Traced]:
    """Each citation's status, in the order of rewards/README.md G8 with G10.4: the result of
    a wrong calculation is untraceable; else found in a call's evidence, else derived by a
    calculation (G10), else allowed (G3), else a summary token the complaint `claims` backs
    (G3.1: claimed, allowed-kind), else seen only in echoes, else untraceable."""
    claimed = claims or Seen.empty()
    items = findings.affected_invoices
    total = None
    if len(items) > 1:
        total = decimal_text(sum((Decimal(i.overcharge_amount) for i in items), Decimal(0)))

    def allowed_kind(reading: Reading) -> bool:
        # G3: a time of day, a whole number 0-12 without currency, the own total of 2+ amounts
        return reading.kind == "time" or (
            reading.kind == "number"
            and ((reading.whole and int(reading.value) <= 12) or reading.value == total)
        )

    def found_fact(reading: Reading) -> tuple[int, ...]:
        if allowed_kind(reading):  # G10.3: a count or the own total grounds nothing
            return ()
        return tuple(n for n, (shown, _) in enumerate(views) if shown.backs(reading))

    derived = derived_values(findings.summary, found_fact)
    traced = []
    for reading, where in _citations(findings):
        allowed = allowed_kind(reading)
        backs = Seen.backs_overcharge if where == "amount" else Seen.backs  # G7.1
        found = tuple(n for n, (shown, _) in enumerate(views) if backs(shown, reading))
        echoed = tuple(n for n, (_, echo) in enumerate(views) if backs(echo, reading))
        number = reading.kind == "number"
        sources: tuple[int, ...]
        if number and reading.value in derived.wrong:  # G10.4: a wrong calculation
            status, sources = "untraceable", ()
        elif found:
            status, sources = "evidence", found
        elif number and reading.value in derived.grounds:
            status, sources = "derived", tuple(sorted(derived.grounds[reading.value]))
        elif last_day := tuple(n for n, (shown, _) in enumerate(views)
                               if shown.backs_last_day(reading)):  # fmt: skip
            status, sources = "derived", last_day  # G10.6: an inclusive period end
        elif allowed:
            status, sources = "allowed", ()
        elif where == "summary" and claimed.backs(reading):  # G3.1: the customer's claim
            status, sources, allowed = "claimed", (), True
        elif echoed:
            status, sources = "echo_only", echoed
        else:
            status, sources = "untraceable", ()
        traced.append(
            Traced(reading.text, where, reading.value, status, sources, allowed, reading.kind)
        )
    return traced


def grounded(traced: list[Traced]) -> bool:
    """rewards/README.md G8: nothing echo_only or untraceable, and a chain (G4): at least one
    found fact that is not a count, time or own total."""
    if any(t.status in ("echo_only", "untraceable") for t in traced):
        return False
    return any(t.status == "evidence" and not t.allowed_kind for t in traced)
