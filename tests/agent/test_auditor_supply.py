"""The auditor reads the service-site look-alike's separating record
(`env.generation.lookalikes_supply`): an invoice taxed in the jurisdiction the customer moved
from is right while the subscription's timeline shows its service at the old site
(`place_of_supply`), and a `wrong_tax_rate` victim without one."""

from __future__ import annotations

from agent.audit_checks import wrong_tax_rate
from agent.audit_evidence import Evidence, TaxWindow
from agent.auditor import auditor_program
from env.scenario import reveal_truth
from tests.agent.test_auditor import run_program
from tests.env.test_lookalikes_supply import _sited


def _evidence(site: dict[str, object] | None) -> Evidence:
    """A customer in US-WA since 2025-06-01 (US-CA before), one invoice of SUB-1 issued
    2025-06-05 taxed in US-CA at its rate, and SUB-1's timeline with `site`."""
    ev = Evidence()
    ev.customer = {
        "tax_jurisdiction": "US-WA",
        "previous_tax_jurisdiction": "US-CA",
        "tax_jurisdiction_since": "2025-06-01",
        "timezone": "UTC",
    }
    ev.invoices = [
        {"invoice_id": "INV-1", "subscription_id": "SUB-1", "issued_at": "2025-06-05T10:00:00Z"}
    ]
    ev.details["INV-1"] = {
        "currency": "USD",
        "billing_inputs": {"tax_jurisdiction": "US-CA", "tax_rate": "0.0825"},
    }
    ev.timelines["SUB-1"] = {"place_of_supply": site, "events": []}
    ev.tax_windows = [
        TaxWindow("0.0825", "2023-01-01", None, "US-CA"),
        TaxWindow("0.065", "2023-01-01", None, "US-WA"),
    ]
    return ev


def test_a_site_on_the_timeline_makes_the_old_jurisdiction_right() -> None:
    for until in ("2025-07-01", None):
        ev = _evidence({"jurisdiction": "US-CA", "until": until, "reason": "old office"})
        assert ev.jurisdiction_on("2025-06-05", "SUB-1") == "US-CA"
        assert ev.rate_on("2025-06-05", "SUB-1") == "0.0825"
        assert wrong_tax_rate(ev) == []


def test_without_the_site_or_after_it_the_same_invoice_is_a_fault() -> None:
    assert [c.label for c in wrong_tax_rate(_evidence(None))] == ["wrong_tax_rate"]
    ended = _evidence({"jurisdiction": "US-CA", "until": "2025-06-03", "reason": "moved"})
    assert [c.label for c in wrong_tax_rate(ended)] == ["wrong_tax_rate"]
    garbled = _evidence({"jurisdiction": "US-CA", "until": "soon", "reason": "?"})
    assert [c.label for c in wrong_tax_rate(garbled)] == ["wrong_tax_rate"]
    assert _evidence(None).jurisdiction_on("not a day", "SUB-1") == "US-WA"  # never raises


def test_the_auditor_is_not_misled_by_the_sites() -> None:
    checked = 0
    for scenario, _sub in _sited()[:10]:
        truth = reveal_truth(scenario)
        record = run_program(auditor_program, scenario)
        assert record.findings is not None
        assert record.findings.root_cause != "wrong_tax_rate", scenario.scenario_id
        checked += truth.label != "no_error"
    assert checked >= 3
