"""An undercharge never grounds an overcharge (rewards/README.md G7.1), in the grader's code.

`eval.grounding.trace_findings` backs an item's overcharge amount only by a showing without a
minus; summary tokens compare without sign. The reward's side:
tests/rewards/test_overcharge_sign.py.
"""

from __future__ import annotations

from typing import Any

from env.findings import Findings
from eval.grounding import Seen, trace_findings


def _status(amount: str, summary: str, output: dict[str, Any]) -> dict[tuple[str, str], str]:
    findings = Findings(
        root_cause="proration_error",
        affected_invoices=[{"invoice_id": "INV-ABC123", "overcharge_amount": amount}],
        summary=summary,
    )
    shown = Seen.empty()
    shown.add_json(output)
    return {(t.where, t.value): t.status for t in trace_findings(findings, [(shown, Seen.empty())])}


def test_a_negative_difference_grounds_no_overcharge() -> None:
    output = {"invoice_id": "INV-ABC123", "difference": "-139.04"}
    status = _status("139.04", "The difference is -139.04.", output)
    assert status[("amount", "139.04")] == "untraceable"
    assert status[("summary", "139.04")] == "evidence"
    assert _status("139.04", "x", {"d": "139.04"})[("amount", "139.04")] == "evidence"


def test_json_numbers_keep_their_sign_for_an_overcharge() -> None:
    output = {"invoice_id": "INV-ABC123", "difference": -139.04, "credit": 45.5}
    assert _status("139.04", "Checked.", output)[("amount", "139.04")] == "untraceable"
    assert _status("45.50", "Checked.", output)[("amount", "45.5")] == "evidence"


def test_a_credit_line_shown_negative_is_cited_in_the_summary() -> None:
    output = {"lines": [{"amount": "-45.00"}], "difference": "12.40", "invoice_id": "INV-ABC123"}
    status = _status("12.40", "The proration credit of 45.00 is right.", output)
    assert status[("summary", "45")] == "evidence"
    assert status[("amount", "12.4")] == "evidence"
