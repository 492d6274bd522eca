"""The auditor reads the tax look-alikes' separating records (`env.generation.lookalikes_tax`): the
jurisdiction in force on the issue day (a move on record) and the certificate's jurisdiction.
"""

from __future__ import annotations

from agent.audit_checks import tax_exempt_charged, wrong_tax_rate
from agent.audit_evidence import Evidence, TaxWindow
from agent.auditor import auditor_program
from env.generation.generator import generate
from env.scenario import reveal_truth
from tests.agent.test_auditor import run_program
from tests.env.test_lookalikes_tax import _lookalikes


def _evidence(jurisdiction: str, certificate_in: str) -> Evidence:
    """A customer in US-WA since 2025-06-01 (US-CA before) with a certificate for
    `certificate_in`, and one invoice issued 2025-03-05 taxed in `jurisdiction` at 0.0825."""
    ev = Evidence()
    ev.customer = {
        "tax_jurisdiction": "US-WA",
        "previous_tax_jurisdiction": "US-CA",
        "tax_jurisdiction_since": "2025-06-01",
        "timezone": "UTC",
        "exemption_certificate": {
            "certificate_id": "TXC-1",
            "valid_from": "2025-01-01",
            "valid_until": "2026-01-01",
            "jurisdiction": certificate_in,
        },
    }
    summary = {"invoice_id": "INV-1", "issued_at": "2025-03-05T10:00:00Z"}
    ev.invoices = [summary]
    ev.details["INV-1"] = {
        "currency": "USD",
        "tax": {"jurisdiction": jurisdiction, "rate": "0.0825", "exempt": False, "amount": "8.25"},
        "billing_inputs": {"tax_jurisdiction": jurisdiction, "tax_rate": "0.0825"},
    }
    ev.tax_windows = [
        TaxWindow("0.0825", "2023-01-01", None, "US-CA"),
        TaxWindow("0.065", "2023-01-01", None, "US-WA"),
    ]
    return ev


def test_before_the_move_the_previous_jurisdiction_is_in_force() -> None:
    ev = _evidence("US-CA", "US-WA")
    assert ev.jurisdiction_on("2025-03-05") == "US-CA"
    assert ev.jurisdiction_on("2025-06-01") == "US-WA"
    assert wrong_tax_rate(ev) == []  # taxed in US-CA at its rate: correct
    assert tax_exempt_charged(ev) == []  # the certificate is for US-WA


def test_a_certificate_for_the_jurisdiction_in_force_is_still_a_fault() -> None:
    assert [c.label for c in tax_exempt_charged(_evidence("US-CA", "US-CA"))] == [
        "tax_exempt_charged"
    ]
    assert [c.label for c in wrong_tax_rate(_evidence("US-WA", "US-WA"))] == ["wrong_tax_rate"]


def test_the_auditor_is_not_misled_by_the_lookalikes_in_other_classes() -> None:
    moved, elsewhere = _lookalikes()
    seeds = sorted({seed for seed, _ in moved[:8] + elsewhere[:8]})
    for seed in seeds:
        scenario = generate("train", seed)
        truth = reveal_truth(scenario)
        if truth.label in ("wrong_tax_rate", "tax_exempt_charged"):
            continue
        record = run_program(auditor_program, scenario)
        assert record.findings is not None
        assert record.findings.root_cause not in ("wrong_tax_rate", "tax_exempt_charged"), seed
