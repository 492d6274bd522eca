"""The kept-credit look-alike (`env.generation.lookalikes_pay.kept_second_charge`, issue 29 item 4):
at L2/L3 in several classes a second succeeded charge, in `duplicate_payment`'s sizes, that the
customer keeps as account credit (`get_customer`'s `account_credit`): net payments exceed the
invoice's total plus what was credited, as under the fault, yet nothing is owed; only the customer
record separates the two.
"""

from __future__ import annotations

from collections import Counter
from functools import cache

from env.engine.money import parse_amount
from env.generation.generator import generate
from env.generation.splits import spec
from env.ledger_env import LedgerEnv
from env.scenario import Scenario, reveal_truth
from tests.env.conftest import ok

SEEDS = range(spec("train").first_seed, spec("train").first_seed + 200)


@cache
def _scenario(seed: int) -> Scenario:
    return generate("train", seed)


def test_kept_charges_occur_at_l2_l3_in_several_classes_and_owe_nothing() -> None:
    classes: Counter[str] = Counter()
    for seed in SEEDS:
        scenario = _scenario(seed)
        episode = LedgerEnv(scenario, episode_id="ep-kept")
        kept = ok(episode, "get_customer", customer_id=scenario.customer_id)["account_credit"]
        if kept is None:
            continue
        assert scenario.difficulty != "L1"
        truth = reveal_truth(scenario)
        classes[truth.label] += 1
        payments = ok(episode, "list_payments", customer_id=scenario.customer_id)["payments"]
        row = next(p for p in payments if p["payment_id"] == kept["payment_id"])
        invoice = ok(episode, "get_invoice", invoice_id=row["invoice_id"])
        paid = parse_amount(invoice["amount_paid"])
        owed_back = paid - parse_amount(invoice["total"]) - parse_amount(invoice["amount_credited"])
        assert owed_back == parse_amount(kept["amount"]) > 0  # the fault's shape, all of it kept
        assert row["invoice_id"] not in truth.overcharges
    assert len(classes) >= 5, classes
