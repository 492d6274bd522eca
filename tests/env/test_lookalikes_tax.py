"""Tax look-alikes (`env.generation.lookalikes_tax`, design §1.2): a customer who moved jurisdiction
and a certificate issued for another jurisdiction fire the same comparisons as `wrong_tax_rate` and
`tax_exempt_charged` at L2/L3 in several classes, are billed correctly, and `get_customer`
shows the record that separates them; the invariants flag the worlds the rules forbid.
"""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from functools import cache

from checks.invariants import world_problems
from env.engine.calendar import utc_to_local_date
from env.generation import lookalikes_tax
from env.generation.builder import data
from env.generation.generator import generate
from env.generation.splits import spec
from env.ledger_env import LedgerEnv, open_database
from env.scenario import Scenario, reveal_truth
from tests.env.conftest import ok

SEEDS = range(spec("train").first_seed, spec("train").first_seed + 400)


def _db(scenario: Scenario) -> sqlite3.Connection:
    db = open_database(scenario.database)
    db.row_factory = sqlite3.Row
    return db


def _issue_day(customer: sqlite3.Row, invoice: sqlite3.Row) -> str:
    return utc_to_local_date(invoice["issued_at"], customer["timezone"]).isoformat()


def _withheld(db: sqlite3.Connection, subscription_id: str, day: str) -> bool:
    """Whether an `exemption_withheld` event (`lookalikes_exempt`, another look-alike) on the
    subscription's timeline holds the issue day: there the tax is due for that reason."""
    rows = db.execute(
        "SELECT details FROM subscription_events WHERE subscription_id = ? AND type = ?",
        (subscription_id, "exemption_withheld"),
    )
    windows = [json.loads(r[0]) for r in rows]
    return any(w["issued_from"] <= day < w["issued_until"] for w in windows)


@cache
def _lookalikes() -> tuple[list[tuple[int, str]], list[tuple[int, str]]]:
    """(seed, invoice) of untouched L2/L3 invoices taxed in the previous jurisdiction before a
    move, and of untouched invoices taxed inside a certificate issued for elsewhere."""
    moved, elsewhere = [], []
    for seed in SEEDS:
        scenario = generate("train", seed)
        if scenario.difficulty == "L1":
            continue
        faulted = set(reveal_truth(scenario).overcharges)
        db = _db(scenario)
        customer = db.execute("SELECT * FROM customers").fetchone()
        for invoice in db.execute("SELECT * FROM invoices ORDER BY issued_at"):
            if invoice["id"] in faulted:
                continue
            inputs = json.loads(invoice["inputs"])
            day = _issue_day(customer, invoice)
            if inputs["tax_jurisdiction"] != customer["tax_jurisdiction"]:
                moved.append((seed, invoice["id"]))
            start, end = customer["exemption_valid_from"], customer["exemption_valid_until"]
            covered = start is not None and start <= day < end
            covered = covered and not _withheld(db, invoice["subscription_id"], day)
            if covered and not inputs["tax_exempt"] and invoice["tax_cents"] > 0:
                elsewhere.append((seed, invoice["id"]))
        db.close()
    return moved, elsewhere


def _labels(found: list[tuple[int, str]]) -> Counter[str]:
    return Counter(reveal_truth(generate("train", seed)).label for seed, _ in found)


def test_a_move_on_record_occurs_at_l2_l3_in_several_classes() -> None:
    moved, _ = _lookalikes()
    labels = _labels(moved)
    assert len(set(labels) - {"wrong_tax_rate"}) >= 5, labels


def test_a_certificate_for_another_jurisdiction_occurs_in_several_classes() -> None:
    _, elsewhere = _lookalikes()
    labels = _labels(elsewhere)
    assert len(set(labels) - {"tax_exempt_charged"}) >= 5, labels


def test_the_lookalike_invoices_are_billed_correctly_and_the_customer_shows_why() -> None:
    moved, elsewhere = _lookalikes()
    for kind, cases in (("moved", moved[:6]), ("elsewhere", elsewhere[:6])):
        for seed, invoice_id in cases:
            scenario = generate("train", seed)
            assert invoice_id not in reveal_truth(scenario).overcharges
            episode = LedgerEnv(scenario, tool_budget=20)
            customer = ok(episode, "get_customer", customer_id=scenario.customer_id)
            invoice = ok(episode, "get_invoice", invoice_id=invoice_id)
            recomputed = ok(episode, "recompute_invoice", invoice_id=invoice_id)
            assert recomputed["difference"] == "0.00"
            issued = utc_to_local_date(invoice["issued_at"], customer["timezone"]).isoformat()
            taxed_in = invoice["billing_inputs"]["tax_jurisdiction"]
            if kind == "moved":  # taxed in the old jurisdiction, before the move took effect
                assert taxed_in == customer["previous_tax_jurisdiction"]
                assert issued < customer["tax_jurisdiction_since"]
                rate = ok(episode, "get_tax_rate", jurisdiction=taxed_in, date=issued)
                assert rate["rate"] == invoice["billing_inputs"]["tax_rate"]
            else:  # the certificate applies elsewhere
                assert customer["exemption_certificate"]["jurisdiction"] != taxed_in
            episode.close()


def test_the_faults_differ_from_their_lookalikes() -> None:
    """wrong_tax_rate's victims are issued after any move; tax_exempt_charged's certificate
    applies in the jurisdiction its victims are taxed in."""
    seen = Counter()
    for seed in SEEDS:
        scenario = generate("train", seed)
        truth = reveal_truth(scenario)
        if truth.label not in ("wrong_tax_rate", "tax_exempt_charged"):
            continue
        db = _db(scenario)
        customer = db.execute("SELECT * FROM customers").fetchone()
        since = customer["tax_jurisdiction_since"]
        for invoice_id in truth.overcharges:
            invoice = db.execute("SELECT * FROM invoices WHERE id = ?", (invoice_id,)).fetchone()
            day = _issue_day(customer, invoice)
            assert since is None or since <= day
            if truth.label == "tax_exempt_charged":
                assert customer["exemption_jurisdiction"] == customer["tax_jurisdiction"]
        seen[(truth.label, since is not None)] += 1
        db.close()
    assert seen[("wrong_tax_rate", True)] and seen[("tax_exempt_charged", True)], seen


def _moved_world() -> tuple[sqlite3.Connection, set[str], str]:
    """A world with an untouched invoice taxed in the previous jurisdiction."""
    moved, _ = _lookalikes()
    seed, invoice_id = moved[0]
    scenario = generate("train", seed)
    return _db(scenario), set(reveal_truth(scenario).overcharges), invoice_id


def test_the_invariants_accept_a_move_and_flag_a_move_ignored() -> None:
    db, faulted, invoice_id = _moved_world()
    assert world_problems(db, faulted) == []
    db.execute("UPDATE customers SET tax_jurisdiction_since = NULL")
    assert any(invoice_id in p and "taxed under" in p for p in world_problems(db, faulted))


def test_the_invariants_flag_an_exemption_applied_in_the_wrong_jurisdiction() -> None:
    _, elsewhere = _lookalikes()
    seed, invoice_id = elsewhere[0]
    scenario = generate("train", seed)
    db, faulted = _db(scenario), set(reveal_truth(scenario).overcharges)
    assert world_problems(db, faulted) == []
    taxed_in = json.loads(
        db.execute("SELECT inputs FROM invoices WHERE id = ?", (invoice_id,)).fetchone()[0]
    )["tax_jurisdiction"]
    db.execute("UPDATE customers SET exemption_jurisdiction = ?", (taxed_in,))
    assert any(invoice_id in p and "tax_exempt" in p for p in world_problems(db, faulted))


def test_l2_l3_customers_of_every_class_live_where_a_neighbour_taxes_higher() -> None:
    """The locale draw is conditioned alike for every class: no currency or jurisdiction says
    `wrong_tax_rate` (which needs such a neighbour at L2/L3)."""
    locales = {loc["jurisdiction"]: loc for loc in data("locales.json")}
    labels: Counter[str] = Counter()
    for seed in SEEDS:
        scenario = generate("train", seed)
        if scenario.difficulty == "L1":
            continue
        db = _db(scenario)
        jurisdiction = db.execute("SELECT tax_jurisdiction FROM customers").fetchone()[0]
        db.close()
        assert lookalikes_tax.higher_neighbour(locales[jurisdiction]), (seed, jurisdiction)
        labels[reveal_truth(scenario).label] += 1
    assert len(labels) >= 10, labels


def _covered(customer: sqlite3.Row, day: str) -> bool:
    start, end = customer["exemption_valid_from"], customer["exemption_valid_until"]
    return start is not None and start <= day < end


def test_certificate_windows_miss_invoices_in_every_class_and_never_a_tax_rate_victim() -> None:
    """Every class's certificate may end or open between two invoices of the main
    subscription (`certificate_gap`); `wrong_tax_rate`'s victims lie outside the window or
    where it does not apply, so they are taxed, as a lapsed certificate taxes any invoice."""
    gaps: Counter[str] = Counter()
    for seed in SEEDS:
        scenario = generate("train", seed)
        truth = reveal_truth(scenario)
        db = _db(scenario)
        customer = db.execute("SELECT * FROM customers").fetchone()
        invoices = db.execute("SELECT * FROM invoices ORDER BY issued_at").fetchall()
        main = [i for i in invoices if i["subscription_id"] == invoices[0]["subscription_id"]]
        flags = {_covered(customer, _issue_day(customer, i)) for i in main}
        if flags == {True, False}:
            gaps[truth.label] += 1
        if truth.label == "wrong_tax_rate":
            for invoice in invoices:
                if invoice["id"] in truth.overcharges:
                    assert not json.loads(invoice["inputs"])["tax_exempt"]
                    assert invoice["tax_cents"] > 0
        db.close()
    assert len(set(gaps) - {"wrong_tax_rate", "tax_exempt_charged"}) >= 8, gaps


def test_an_own_rate_change_inside_the_story_occurs_at_l3_in_several_classes() -> None:
    """Two rates of the customer's own jurisdiction on untouched invoices, each right on its
    issue day: what `wrong_tax_rate` at L3 shows beside its victims."""
    labels: Counter[str] = Counter()
    for seed in SEEDS:
        scenario = generate("train", seed)
        if scenario.difficulty != "L3":
            continue
        truth = reveal_truth(scenario)
        db = _db(scenario)
        own = db.execute("SELECT tax_jurisdiction FROM customers").fetchone()[0]
        rates = {
            json.loads(row["inputs"])["tax_rate"]
            for row in db.execute("SELECT * FROM invoices")
            if row["id"] not in truth.overcharges
            and json.loads(row["inputs"])["tax_jurisdiction"] == own
            and not json.loads(row["inputs"])["tax_exempt"]
        }
        if len(rates) >= 2:
            labels[truth.label] += 1
        assert world_problems(db, set(truth.overcharges)) == []
        db.close()
    assert len(set(labels) - {"wrong_tax_rate"}) >= 6, labels
