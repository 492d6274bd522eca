"""Complaints are a customer's words, not a label (design §1.2, issue 9 item 4).

The phrasing pools: one file per train fault class plus `generic`, nothing of no_error's or the
held-out class's own; disjoint train and eval pools with real variety. Who says what: L3 and
no_error complaints name only classes plausible for the customer; a vague complaint's month is
not the affected invoice's by construction.
"""

from __future__ import annotations

import random
import re
import sqlite3
from datetime import date
from importlib import resources
from typing import Any, cast

import pytest

from checks.dedup import body_of, mask_body
from env.generation.builder import WorldBuilder, data
from env.generation.complaints import (
    GENERIC,
    Cues,
    bodies,
    choose_source,
    phrasing_pool,
    placeholders,
)
from env.generation.faults.base import FaultOutcome
from env.generation.generator import generate
from env.generation.splits import split_seeds
from env.labels import HELDOUT_LABEL, TRAIN_FAULT_LABELS
from env.scenario import reveal_truth

SOURCES = (*TRAIN_FAULT_LABELS, GENERIC)
SLOTS = {
    "invoice_id", "month", "total", "currency", "tax", "plan", "company", "certificate",
    "coupon", "seats", "cancel_date", "trial_days", "included", "old_plan", "new_plan",
}  # fmt: skip
_MONTH = re.compile(
    r"\b(?:January|February|March|April|May|June|July|August|September|October|November|"
    r"December) \d{4}\b"
)


def _filled(template: str) -> str:
    """A template filled with stand-ins that `mask_body` masks: equal templates, equal masks."""
    stand_ins = dict.fromkeys(placeholders(template), "INV-AAAA11")
    return mask_body(template.format(**stand_ins)).replace("<id>", "<x>")


def test_pool_files_are_the_train_fault_classes_and_generic() -> None:
    folder = resources.files("env.generation").joinpath("data/complaints")
    names = {p.name.removesuffix(".json") for p in folder.iterdir() if p.name.endswith(".json")}
    assert names == {*SOURCES, "common", "plausibility"}


@pytest.mark.parametrize("source", SOURCES)
def test_each_pool_has_variety_and_the_right_shape(source: str) -> None:
    for pool in ("train", "eval"):
        for level in ("L1", "L2"):
            texts = bodies(source, pool, level)
            assert len(set(texts)) == len(texts) >= 8, (source, pool, level)
            for text in texts:
                assert placeholders(text) <= SLOTS, text
                assert ("invoice_id" in placeholders(text)) == (level == "L1"), text


@pytest.mark.parametrize("source", SOURCES)
def test_train_and_eval_phrasings_are_disjoint_after_masking(source: str) -> None:
    train = {_filled(t) for lv in ("L1", "L2") for t in bodies(source, "train", lv)}
    evaluation = {_filled(t) for lv in ("L1", "L2") for t in bodies(source, "eval", lv)}
    assert not train & evaluation


def test_only_train_uses_the_train_pool() -> None:
    assert phrasing_pool("train") == "train"
    assert {phrasing_pool(p) for p in ("eval", "val")} == {"eval"}
    common = data("complaints/common.json")
    assert set(common) == {"greetings", "closers", "claims", "injections"}


def _outcome(label: str, variant: str = "") -> FaultOutcome:
    return FaultOutcome(label, cast(Any, None), [], [], "", variant=variant)


def _sources(label: str, level: str, cues: Cues, variant: str = "") -> set[str]:
    seen = set()
    for seed in range(300):
        b = WorldBuilder(random.Random(seed), name_pool="train", difficulty=level)
        seen.add(choose_source(b, _outcome(label, variant), cues))
    return {source for source, _ in seen}


USD_FLAT = Cues(plausible=["duplicate_payment", "wrong_tax_rate", "coupon_not_applied"])


def test_l3_blames_only_plausible_classes_other_than_the_truth() -> None:
    assert _sources("coupon_not_applied", "L3", USD_FLAT) == {
        "duplicate_payment", "wrong_tax_rate",
    }  # fmt: skip
    assert _sources("no_error", "L3", USD_FLAT) == set(USD_FLAT.plausible)


def test_no_error_speaks_in_a_fault_pool_never_its_own() -> None:
    for level in ("L1", "L2"):
        seen = _sources("no_error", level, USD_FLAT, variant="tax_change")
        assert seen <= {*USD_FLAT.plausible, GENERIC}
        assert "wrong_tax_rate" in seen and "currency_conversion_error" not in seen


def test_the_held_out_class_reads_like_the_class_it_resembles() -> None:
    cues = Cues(plausible=["duplicate_payment", "billed_after_cancellation"])
    seen = _sources(HELDOUT_LABEL, "L1", cues, variant="cancellation")
    assert seen == {"billed_after_cancellation", GENERIC}


def test_a_vague_complaints_month_is_not_a_pointer_to_the_answer() -> None:
    """Over L2/L3 faulted train scenarios that quote a month, the quoted month is the
    affected invoice's month far less often than always (it is an invoice picked at random)."""
    hits = total = 0
    for seed in split_seeds("train", 500):
        scenario = generate("train", seed)
        truth = reveal_truth(scenario)
        if scenario.difficulty == "L1" or truth.label == "no_error":
            continue
        named = _MONTH.findall(body_of(scenario.complaint))
        if not named:
            continue
        db = sqlite3.connect(":memory:")
        db.deserialize(scenario.database)
        rows = db.execute("SELECT id, period_start FROM invoices").fetchall()
        months = {invoice: date.fromisoformat(start).strftime("%B %Y") for invoice, start in rows}
        total += 1
        hits += named[0] in {months[i] for i in truth.overcharges}
    assert total >= 15
    assert hits / total < 0.7


def test_plausibility_rates_are_measured_from_train_worlds() -> None:
    from env.generation import complaints
    from env.generation.cue_rates import measure_rates

    rates = measure_rates(25)
    assert rates["duplicate_payment"] == 1.0  # anyone who pays can believe they paid twice
    assert set(rates) <= set(TRAIN_FAULT_LABELS)
    assert all(0.0 < r <= 1.0 for r in rates.values())
    assert complaints.CUE_LOG is None
    stored = data(complaints.RATES_FILE)
    assert set(stored["rates"]) == set(TRAIN_FAULT_LABELS)


def test_the_rates_command_rejects_a_bad_limit(capsys: pytest.CaptureFixture[str]) -> None:
    from env.generation.cue_rates import main

    assert main(["--limit", "0"]) == 2
    assert "must be at least 1" in capsys.readouterr().err


def test_an_l2_fault_guesses_among_its_plausible_classes_its_own_one_of_them() -> None:
    """Issue 29 item 5: at L2 the topic is no pointer; the own class is drawn like the rest."""
    seen = _sources("coupon_not_applied", "L2", USD_FLAT)
    assert seen == {*USD_FLAT.plausible, GENERIC}
    assert _sources("coupon_not_applied", "L1", USD_FLAT) == {"coupon_not_applied", GENERIC}


def test_no_complaint_quotes_a_zero_total_or_a_zero_tax() -> None:
    """A trial's 0.00 invoice has no tax, payment or price to dispute, nor has a 0.00 tax line."""
    for split in ("train", "eval"):
        for seed in split_seeds(split, 150):
            scenario = generate(split, seed)
            assert re.search(r"(?<![\d.])0\.00(?!\d)", scenario.complaint) is None, seed


def test_the_topic_probe_reads_the_pool_a_body_came_from() -> None:
    from checks.probe_topics import topic_of, topic_table

    body = bodies("wrong_tax_rate", "train", "L2")[0]
    text = "Hello,\n\n" + body.format(**dict.fromkeys(placeholders(body), "X")) + "\n\nThanks"
    assert topic_of(text) == "wrong_tax_rate"
    plausible = frozenset({"wrong_tax_rate", "duplicate_payment"})
    rows = topic_table(
        [("wrong_tax_rate", "L2", text, plausible), ("no_error", "L2", text, plausible)]
    )
    assert [(r.topic, r.own, r.support, r.precision, r.chance) for r in rows] == [
        ("wrong_tax_rate", 1, 2, 0.5, 0.5)  # one of the two who could write it is of its class
    ]
