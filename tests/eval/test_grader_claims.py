"""The grader's side of the customer's claim (rewards/README.md G3.1), on its own code.

`eval.grounding.trace_findings` gives a summary token the complaint backs, and no tool, the
status `claimed`: allowed-kind, so it makes no chain (G4); an item's amount or id is never
claimed; a tool's showing comes first. The reward's side: tests/rewards/test_claims.py.
"""

from __future__ import annotations

from env.findings import Findings
from eval.grounding import Seen, grounded, trace_findings
from eval.grounding.read import read


def _seen(text: str) -> Seen:
    seen = Seen.empty()
    for reading in read(text):
        seen.add_reading(reading)
    return seen


_COMPLAINT = _seen("I was billed 36 days on INV-ABC123 and 612.32 twice on 15 March 2026.")
_TOOL = (_seen('{"invoice_id": "INV-ABC123", "total": "612.32", "difference": "306.16"}'),
         Seen.empty())  # fmt: skip


def _statuses(findings: Findings) -> dict[tuple[str, str], str]:
    traced = trace_findings(findings, [_TOOL], _COMPLAINT)
    return {(t.where, t.value): t.status for t in traced}


def test_the_complaints_tokens_are_claimed_and_a_tools_are_evidence() -> None:
    findings = Findings(
        root_cause="duplicate_payment",
        affected_invoices=[{"invoice_id": "INV-ABC123", "overcharge_amount": "306.16"}],
        summary='The customer writes "billed 36 days ... 612.32 twice on 15 March"; 306.16 due.',
    )
    status = _statuses(findings)
    assert status[("summary", "36")] == "claimed"
    assert status[("summary", "--03-15")] == "claimed"
    assert status[("summary", "612.32")] == "evidence"  # the tool shows it: a found fact
    assert grounded(trace_findings(findings, [_TOOL], _COMPLAINT))


def test_a_claimed_amount_is_never_an_items_amount() -> None:
    findings = Findings(
        root_cause="duplicate_payment",
        affected_invoices=[{"invoice_id": "INV-ABC123", "overcharge_amount": "36.00"}],
        summary="The customer claims 36 days.",
    )
    status = _statuses(findings)
    assert status[("amount", "36")] == "untraceable"
    assert status[("summary", "36")] == "claimed"


def test_claimed_tokens_alone_make_no_chain() -> None:
    findings = Findings(root_cause="no_error", summary="The customer claims 36 days, 15 March.")
    traced = trace_findings(findings, [(Seen.empty(), Seen.empty())], _COMPLAINT)
    assert {t.status for t in traced} == {"claimed"}
    assert all(t.allowed_kind for t in traced) and not grounded(traced)


def test_without_the_complaint_they_are_untraceable() -> None:
    findings = Findings(root_cause="no_error", summary="The customer claims 36 days.")
    traced = trace_findings(findings, [(Seen.empty(), Seen.empty())])
    assert [t.status for t in traced] == ["untraceable"]
