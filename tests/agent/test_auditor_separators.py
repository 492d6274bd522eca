"""The auditor reads the seat and exemption look-alikes' separating records (issue 29 item 4): a
seat commitment on `get_customer` (`env.generation.lookalikes_seats`) and an
`exemption_withheld` event on the subscription's timeline (`env.generation.lookalikes_exempt`).
Without them the same invoices read exactly like `seat_count_mismatch`'s and
`tax_exempt_charged`'s victims.
"""

from __future__ import annotations

from typing import Any

from agent.audit_checks import seat_count_mismatch, tax_exempt_charged
from agent.audit_evidence import Evidence
from agent.auditor import auditor_program
from env.generation.generator import generate
from env.scenario import reveal_truth
from tests.agent.test_auditor import run_program
from tests.env.test_lookalikes_exempt import SEEDS as EXEMPT_SEEDS
from tests.env.test_lookalikes_exempt import _withheld
from tests.env.test_lookalikes_seats import SEEDS as SEAT_SEEDS
from tests.env.test_lookalikes_seats import _committed


def _seat_evidence(commitment: dict[str, Any] | None) -> Evidence:
    """SUB-1 created with 8 seats, cut to 5 from the next period (logged 2025-02-10); invoice
    INV-1 for the period starting 2025-03-01 bills 8 seats."""
    ev = Evidence()
    ev.customer = {"timezone": "UTC", "seat_commitment": commitment}
    ev.invoices = [
        {
            "invoice_id": "INV-1",
            "subscription_id": "SUB-1",
            "period_start": "2025-03-01",
            "period_end": "2025-04-01",
            "issued_at": "2025-03-01T10:00:00Z",
        }
    ]
    ev.details["INV-1"] = {"billing_inputs": {"plan": {"pricing": "per_seat"}, "seats": 8}}
    ev.timelines["SUB-1"] = {
        "events": [
            {"occurred_at": "2025-01-01T10:00:00Z", "type": "created", "details": {"seats": 8}},
            {
                "occurred_at": "2025-02-10T10:00:00Z",
                "type": "seats_changed",
                "details": {"from_seats": 8, "to_seats": 5, "effective": "next_period"},
            },
        ]
    }
    return ev


def _commitment(sub: str, since: str, until: str) -> dict[str, Any]:
    return {"subscription_id": sub, "seats": 8, "periods_from": since, "periods_until": until}


def test_a_commitment_covering_the_period_explains_the_seats() -> None:
    assert [c.label for c in seat_count_mismatch(_seat_evidence(None))] == ["seat_count_mismatch"]
    covered = _seat_evidence(_commitment("SUB-1", "2025-03-01", "2025-05-01"))
    assert seat_count_mismatch(covered) == []


def test_a_commitment_elsewhere_explains_nothing() -> None:
    for commitment in (
        _commitment("SUB-2", "2025-03-01", "2025-05-01"),  # another subscription
        _commitment("SUB-1", "2025-04-01", "2025-05-01"),  # a later window
        _commitment("SUB-1", "2025-01-01", "2025-03-01"),  # ended (exclusive)
    ):
        assert len(seat_count_mismatch(_seat_evidence(commitment))) == 1


def _exempt_evidence(withheld: dict[str, Any] | None) -> Evidence:
    """A certificate over 2025, an invoice of SUB-1 issued 2025-03-05 taxed 8.25 USD."""
    ev = Evidence()
    ev.customer = {
        "tax_jurisdiction": "US-CA",
        "timezone": "UTC",
        "exemption_certificate": {
            "certificate_id": "TXC-1",
            "valid_from": "2025-01-01",
            "valid_until": "2026-01-01",
            "jurisdiction": "US-CA",
        },
    }
    ev.invoices = [
        {"invoice_id": "INV-1", "subscription_id": "SUB-1", "issued_at": "2025-03-05T10:00:00Z"}
    ]
    ev.details["INV-1"] = {
        "currency": "USD",
        "tax": {"jurisdiction": "US-CA", "rate": "0.0825", "exempt": False, "amount": "8.25"},
        "billing_inputs": {"tax_jurisdiction": "US-CA", "tax_rate": "0.0825"},
    }
    events = [{"occurred_at": "2025-01-02T10:00:00Z", "type": "created", "details": {}}]
    if withheld is not None:
        events.append(
            {
                "occurred_at": "2025-03-01T10:00:00Z",
                "type": "exemption_withheld",
                "details": withheld,
            }
        )
    ev.timelines["SUB-1"] = {"events": events}
    return ev


def test_an_exemption_withheld_on_the_issue_day_makes_the_tax_due() -> None:
    assert [c.label for c in tax_exempt_charged(_exempt_evidence(None))] == ["tax_exempt_charged"]
    window = {"certificate_id": "TXC-1", "issued_from": "2025-03-05", "issued_until": "2025-04-05"}
    assert tax_exempt_charged(_exempt_evidence(window)) == []
    later = window | {"issued_from": "2025-03-06"}  # the issue day is outside it
    assert len(tax_exempt_charged(_exempt_evidence(later))) == 1


def _scenarios_with(found: list[int], label: str) -> list[int]:
    return [s for s in found if reveal_truth(generate("train", s)).label != label][:6]


def test_the_auditor_is_not_misled_by_the_seat_commitments() -> None:
    binding = []
    for seed in SEAT_SEEDS:
        commitment, covered = _committed(seed)
        if commitment and any(i["billing_inputs"]["seats"] > i["in_force"] for i in covered):
            binding.append(seed)
    seeds = _scenarios_with(binding, "seat_count_mismatch")
    assert len(seeds) >= 3
    for seed in seeds:
        record = run_program(auditor_program, generate("train", seed))
        assert record.findings is not None
        assert record.findings.root_cause != "seat_count_mismatch", seed


def test_the_auditor_is_not_misled_by_a_withheld_exemption() -> None:
    withheld = [seed for seed in EXEMPT_SEEDS if _withheld(seed)]
    seeds = _scenarios_with(withheld, "tax_exempt_charged")
    assert len(seeds) >= 3
    for seed in seeds:
        record = run_program(auditor_program, generate("train", seed))
        assert record.findings is not None
        assert record.findings.root_cause != "tax_exempt_charged", seed
