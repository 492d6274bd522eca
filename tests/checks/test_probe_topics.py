"""Complaint topics at chance (issue 39 item 4, `checks.probe_topics`): an L2 topic names the true
class between 0.5x and 1.5x of chance, where chance is the class's share of the customers who
could write in that topic's pool; a complaint that names an invoice is about one that carries what
it names; the gates fail on a topic below chance as well as above it."""

from __future__ import annotations

import json
import re
from functools import cache

from checks.probe_topics import (
    GENERIC,
    Case,
    TopicRow,
    cases_of,
    gates_of,
    outside_band,
    plausible_classes,
    topic_of,
)
from env.generation.generator import generate
from env.generation.splits import split_seeds
from env.ledger_env import open_database
from env.scenario import reveal_truth

FITS = {  # a topic -> what the invoice its complaint names must bill (usage, an overage
    # where the customer has one: `complaints._fits`)
    "usage_overage_miscalculated": lambda i: i["usage_units"] is not None,
    "seat_count_mismatch": lambda i: i["plan"]["pricing"] == "per_seat",
}


@cache
def _cases() -> list[Case]:
    return cases_of("train", 1500)


def test_every_topic_is_a_class_plausible_for_its_customer() -> None:
    for label, level, complaint, plausible in _cases():
        topic = topic_of(complaint)
        if level == "L2" and topic not in (None, GENERIC):
            assert topic in plausible, (label, topic)
        if label != "no_error":
            assert label in plausible  # a customer can always believe in its own fault


def test_the_train_topics_sit_between_half_and_one_and_a_half_times_chance() -> None:
    gates = gates_of("train", _cases())
    band = [g for g in gates if g[0].startswith("topic/chance")]
    assert band and all(value <= bound for _, _, value, bound, _ in band), band


def test_topics_that_never_name_their_class_break_the_lower_bound() -> None:
    """The same complaints relabelled so that no topic is ever its class's: ratio 0."""
    shifted = []
    for label, level, complaint, plausible in _cases():
        topic = topic_of(complaint)
        if level == "L2" and topic == label:
            label = "no_error"
        shifted.append((label, level, complaint, plausible))
    gates = {g[0]: g for g in gates_of("train", shifted)}
    assert gates["topic/chance L2 below 0.5x"][2] > 0  # value above its bound 0: broken


def test_a_topic_far_from_chance_beyond_its_noise_breaks_the_per_topic_band() -> None:
    never = TopicRow("wrong_tax_rate", 400, 0, 0.1)  # 0 of 400 where chance gives 40
    always = TopicRow("coupon_not_applied", 400, 200, 0.1)  # 5x chance
    near = TopicRow("seat_count_mismatch", 40, 2, 0.1)  # 0.5x, but 40 complaints: noise
    assert outside_band([never])[0] > 0.4 and outside_band([always])[0] > 2
    assert outside_band([near]) == (0.0, "seat_count_mismatch 0.50x (2/40)")


def test_a_complaint_naming_an_invoice_names_one_that_bills_what_it_is_about() -> None:
    checked = 0
    for seed in split_seeds("train", 1500):
        scenario = generate("train", seed)
        topic = topic_of(scenario.complaint)
        named = re.findall(r"INV-[0-9A-Z]+", scenario.complaint)
        if scenario.difficulty == "L1" or topic not in FITS or not named:
            continue
        db = open_database(scenario.database)
        row = db.execute("SELECT inputs FROM invoices WHERE id = ?", (named[0],)).fetchone()
        db.close()
        assert row is not None and FITS[topic](json.loads(row[0])), scenario.scenario_id
        checked += 1
    assert checked >= 10


def test_plausibility_read_off_the_database_includes_every_faulted_class() -> None:
    for seed in split_seeds("eval"):
        scenario = generate("eval", seed)
        label = reveal_truth(scenario).label
        db = open_database(scenario.database)
        plausible = plausible_classes(db)
        db.close()
        assert "duplicate_payment" in plausible
        assert label == "no_error" or label in plausible or label == "timezone_period_boundary"
