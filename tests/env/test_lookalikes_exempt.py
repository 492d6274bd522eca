"""The exemption withheld (`env.generation.lookalikes_exempt`, issue 29 item 4): at L2/L3 in
several classes, the exemption fault's included, an `exemption_withheld` event on a
subscription's timeline taxes a run of invoices the certificate covers (its window, its
jurisdiction), as `tax_exempt_charged` does; those invoices are billed correctly (recompute
difference 0.00, no overcharge in the truth) and only the timeline's event separates them from
the fault's victims.
"""

from __future__ import annotations

from collections import Counter
from functools import cache
from typing import Any

from env.engine.calendar import utc_to_local_date
from env.generation.generator import generate
from env.generation.splits import spec
from env.ledger_env import LedgerEnv
from env.scenario import Scenario, reveal_truth
from tests.env.conftest import ok

SEEDS = range(spec("train").first_seed, spec("train").first_seed + 300)


@cache
def _scenario(seed: int) -> Scenario:
    return generate("train", seed)


def _jurisdiction(customer: dict[str, Any], day: str) -> str:
    since = customer["tax_jurisdiction_since"]
    if customer["previous_tax_jurisdiction"] and since and day < since:
        return str(customer["previous_tax_jurisdiction"])
    return str(customer["tax_jurisdiction"])


def _withheld(seed: int) -> list[tuple[dict[str, Any], dict[str, Any], list[dict[str, Any]]]]:
    """(customer, event, invoices issued in its window) per `exemption_withheld` event."""
    scenario = _scenario(seed)
    episode = LedgerEnv(scenario, episode_id="ep-exempt")
    customer = ok(episode, "get_customer", customer_id=scenario.customer_id)
    listed = ok(episode, "list_invoices", customer_id=scenario.customer_id)["invoices"]
    out = []
    for sub in customer["subscription_ids"]:
        events = ok(episode, "get_subscription_timeline", subscription_id=sub)["events"]
        for event in (e for e in events if e["type"] == "exemption_withheld"):
            window = event["details"]
            covered = []
            for summary in listed:
                issued = utc_to_local_date(summary["issued_at"], customer["timezone"]).isoformat()
                inside = window["issued_from"] <= issued < window["issued_until"]
                if summary["subscription_id"] == sub and inside:
                    invoice = ok(episode, "get_invoice", invoice_id=summary["invoice_id"])
                    covered.append(invoice | {"issue_day": issued, "logged": event["occurred_at"]})
            out.append((customer, event, covered))
    return out


def test_withheld_runs_occur_at_l2_l3_in_several_classes_the_fault_class_included() -> None:
    classes: Counter[str] = Counter()
    for seed in SEEDS:
        for _, _, covered in _withheld(seed):
            assert _scenario(seed).difficulty != "L1"
            assert 1 <= len(covered) <= 3
            classes[reveal_truth(_scenario(seed)).label] += 1
    assert len(classes) >= 6, classes
    assert classes["tax_exempt_charged"] >= 1, classes


def test_withheld_invoices_look_like_the_fault_and_recompute_to_zero() -> None:
    """Inside the certificate's window and jurisdiction, taxed, logged before it was issued,
    and billed correctly; never a fault's victim of tax_exempt_charged."""
    seen = 0
    for seed in SEEDS:
        truth = reveal_truth(_scenario(seed))
        episode = LedgerEnv(_scenario(seed), episode_id="ep-exempt-2")
        for customer, event, covered in _withheld(seed):
            certificate = customer["exemption_certificate"]
            assert event["details"]["certificate_id"] == certificate["certificate_id"]
            for invoice in covered:
                day = invoice["issue_day"]
                assert certificate["valid_from"] <= day < certificate["valid_until"]
                assert certificate["jurisdiction"] == _jurisdiction(customer, day)
                assert invoice["billing_inputs"]["tax_exempt"] is False
                assert invoice["logged"] < invoice["issued_at"]
                if invoice["invoice_id"] in truth.overcharges:
                    assert truth.label != "tax_exempt_charged"
                    continue
                done = ok(episode, "recompute_invoice", invoice_id=invoice["invoice_id"])
                assert done["difference"] == "0.00"
                seen += 1
    assert seen >= 10


def test_recomputed_as_exempt_a_withheld_invoice_shows_the_tax_as_the_fault_would() -> None:
    """The shape: recomputing a withheld invoice with tax_exempt=true gives back its whole tax,
    exactly the fault's evidence; only the event says the tax is due."""
    for seed in SEEDS:
        for _, _, covered in _withheld(seed):
            invoice = covered[0]
            if invoice["tax"]["amount"] == "0.00":
                continue
            episode = LedgerEnv(_scenario(seed), episode_id="ep-exempt-3")
            done = ok(
                episode, "recompute_invoice", invoice_id=invoice["invoice_id"], tax_exempt=True
            )
            assert done["difference"] == invoice["tax"]["amount"]
            return
    raise AssertionError("no withheld invoice with tax found")
