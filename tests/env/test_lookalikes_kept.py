"""The kept-credit look-alike (`env.generation.lookalikes_pay.kept_second_charge`, issue 29 item 4;
world v6, issue 39 item 1): at L2/L3 in several classes a second succeeded charge, in
`duplicate_payment`'s sizes, that the customer keeps as account credit (`get_customer`'s
`account_credit`): net payments exceed the invoice's total plus what was credited, as under the
fault. Billing applies the balance to the invoices issued after it (`list_payments` rows of method
`account_credit` naming it in `applied_from`, `get_invoice`'s `balance_applied`), so nothing is
owed; where it never did (the fault's kept form), what it should have applied is owed back.
"""

from __future__ import annotations

from collections import Counter
from functools import cache
from typing import Any

from env.engine.money import parse_amount
from env.generation.generator import generate
from env.generation.splits import spec
from env.generation.twins import twin
from env.ledger_env import LedgerEnv
from env.scenario import Scenario, reveal_truth
from tests.env.conftest import ok

SEEDS = range(spec("train").first_seed, spec("train").first_seed + 300)


@cache
def _scenario(seed: int) -> Scenario:
    return generate("train", seed)


def _kept(seed: int) -> tuple[Scenario, dict[str, Any], list[dict[str, Any]], LedgerEnv] | None:
    scenario = _scenario(seed)
    episode = LedgerEnv(scenario, episode_id="ep-kept")
    kept = ok(episode, "get_customer", customer_id=scenario.customer_id)["account_credit"]
    if kept is None:
        episode.close()
        return None
    payments = ok(episode, "list_payments", customer_id=scenario.customer_id)["payments"]
    return scenario, kept, payments, episode


def _should_apply(
    episode: LedgerEnv, customer: str, kept: dict[str, Any], source: dict[str, Any]
) -> int:
    """min(kept, totals of the invoices issued after the kept payment): the engine's rule."""
    listing = ok(episode, "list_invoices", customer_id=customer)["invoices"]
    later = sum(parse_amount(i["total"]) for i in listing if i["issued_at"] > source["paid_at"])
    return min(parse_amount(kept["amount"]), later)


def test_kept_charges_occur_at_l2_l3_in_several_classes_and_applied_ones_owe_nothing() -> None:
    classes: Counter[str] = Counter()
    for seed in SEEDS:
        found = _kept(seed)
        if found is None:
            continue
        scenario, kept, payments, episode = found
        assert scenario.difficulty != "L1"
        truth = reveal_truth(scenario)
        source = next(p for p in payments if p["payment_id"] == kept["payment_id"])
        invoice = ok(episode, "get_invoice", invoice_id=source["invoice_id"])
        paid = parse_amount(invoice["amount_paid"])
        owed_back = paid - parse_amount(invoice["total"]) - parse_amount(invoice["amount_credited"])
        assert owed_back == parse_amount(kept["amount"]) > 0  # the fault's shape, all of it kept
        applied = sum(
            parse_amount(p["amount"]) for p in payments if p["applied_from"] == kept["payment_id"]
        )
        should = _should_apply(episode, scenario.customer_id, kept, source)
        owed = truth.overcharges.get(source["invoice_id"], 0)
        assert owed == should - applied  # nothing owed where billing applied it as the rule says
        if applied:
            classes[truth.label] += 1
        else:  # the fault's kept form: billing never applied what it should have
            assert truth.label == "duplicate_payment" and owed > 0
        episode.close()
    assert len(classes) >= 5, classes


def test_each_application_pays_a_later_invoice_within_its_total_and_shows_on_it() -> None:
    checked = 0
    for seed in SEEDS:
        found = _kept(seed)
        if found is None:
            continue
        _, kept, payments, episode = found
        source = next(p for p in payments if p["payment_id"] == kept["payment_id"])
        for row in (p for p in payments if p["applied_from"] == kept["payment_id"]):
            assert row["method"] == "account_credit" and row["status"] == "succeeded"
            assert row["paid_at"] > source["paid_at"]
            invoice = ok(episode, "get_invoice", invoice_id=row["invoice_id"])
            assert invoice["balance_applied"] == row["amount"]
            assert invoice["amount_paid"] == invoice["total"]  # the rest charged as usual
            assert parse_amount(row["amount"]) <= parse_amount(invoice["total"])
            checked += 1
        episode.close()
    assert checked >= 10


def test_a_kept_credit_billing_never_applied_is_applied_in_its_twin() -> None:
    for seed in SEEDS:
        found = _kept(seed)
        if found is None:
            continue
        _, kept, payments, episode = found
        episode.close()
        if any(p["applied_from"] == kept["payment_id"] for p in payments):
            continue
        repaired = twin("train", seed)
        assert reveal_truth(repaired).overcharges == {}
        other = LedgerEnv(repaired, episode_id="ep-twin")
        rows = ok(other, "list_payments", customer_id=repaired.customer_id)["payments"]
        assert any(p["applied_from"] == kept["payment_id"] for p in rows)
        other.close()
        return
    raise AssertionError("no kept credit billing never applied among the seeds")
