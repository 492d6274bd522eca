"""The value look-alikes (`env.generation.lookalikes_values`, issue 19): the recorded inputs a fault
leaves are values the correct world also produces. Seat cuts and high fx days occur at L2/L3 in
several classes, their invoices are billed correctly (recompute difference 0.00, no overcharge in
the truth), and the faults' wrong values stay inside the same ranges.
"""

from __future__ import annotations

import json
from collections import Counter
from fractions import Fraction
from functools import cache

from env.engine.calendar import fx_day, utc_to_local_date
from env.engine.money import parse_rate
from env.generation.builder import data
from env.generation.generator import generate
from env.generation.lookalikes_pay import fx_band_top
from env.generation.splits import spec
from env.ledger_env import LedgerEnv, open_database
from env.scenario import Scenario, reveal_truth
from tests.env.conftest import ok

SEAT_EVENTS = "SELECT subscription_id, details FROM subscription_events WHERE type='seats_changed'"
SEEDS = range(spec("train").first_seed, spec("train").first_seed + 400)


@cache
def _scenario(seed: int) -> Scenario:
    return generate("train", seed)


def _rows(seed: int, sql: str) -> list[tuple[object, ...]]:
    db = open_database(_scenario(seed).database)
    try:
        return db.execute(sql).fetchall()
    finally:
        db.close()


def _inputs(seed: int) -> list[tuple[str, str, dict[str, object]]]:
    rows = _rows(seed, "SELECT id, subscription_id, inputs FROM invoices ORDER BY issued_at")
    return [(str(i), str(s), json.loads(str(d))) for i, s, d in rows]


def _billed_right(seed: int, invoice: str) -> None:
    scenario = _scenario(seed)
    assert invoice not in reveal_truth(scenario).overcharges
    episode = LedgerEnv(scenario, episode_id="ep-values")
    assert ok(episode, "recompute_invoice", invoice_id=invoice)["difference"] == "0.00"


def _cut_invoices(seed: int) -> list[str]:
    """Invoices that bill fewer seats than the same subscription's invoice before them, where a
    seats_changed event named that cut."""
    cuts = {
        (str(s), json.loads(str(d))["to_seats"])
        for s, d in _rows(seed, SEAT_EVENTS)
        if json.loads(str(d))["to_seats"] < json.loads(str(d))["from_seats"]
    }
    found, last = [], {}
    for invoice, sub, inputs in _inputs(seed):
        seats = inputs["seats"]
        if sub in last and seats < last[sub] and (sub, seats) in cuts:
            found.append(invoice)
        last[sub] = seats
    return found


def test_seat_cuts_occur_at_l2_l3_in_several_classes_billed_right() -> None:
    classes: Counter[str] = Counter()
    for seed in SEEDS:
        scenario = _scenario(seed)
        label = reveal_truth(scenario).label
        if scenario.difficulty == "L1" or label == "seat_count_mismatch":
            continue
        for invoice in _cut_invoices(seed):
            if invoice not in reveal_truth(scenario).overcharges:
                _billed_right(seed, invoice)
                classes[label] += 1
    assert len(classes) >= 6 and "no_error" in classes, classes


def test_seat_fault_bills_a_count_of_its_own_timeline() -> None:
    seen = 0
    for seed in SEEDS:
        scenario = _scenario(seed)
        truth = reveal_truth(scenario)
        if truth.label != "seat_count_mismatch":
            continue
        seen += 1
        named = set()
        for _, details in _rows(seed, SEAT_EVENTS):
            parsed = json.loads(str(details))
            named |= {parsed["from_seats"], parsed["to_seats"]}
        for invoice, _, inputs in _inputs(seed):
            if invoice in truth.overcharges:
                assert inputs["seats"] in named
    assert seen >= 10


def test_seat_class_gets_pending_seat_changes_and_rises_as_often_as_cuts() -> None:
    """The seat class, like every other, has seat changes ordered after its last invoice (the
    row shows them, no invoice bills them), and its fault is a rise about as often as a cut:
    neither the row nor the count of billed seat values per event singles it out."""
    pending = rises = cuts = 0
    for seed in SEEDS:
        scenario = _scenario(seed)
        truth = reveal_truth(scenario)
        if truth.label != "seat_count_mismatch":
            continue
        last_issue: dict[str, str] = {}
        for sub, issued in _rows(seed, "SELECT subscription_id, issued_at FROM invoices"):
            last_issue[str(sub)] = max(last_issue.get(str(sub), ""), str(issued))
        stamped = "SELECT subscription_id, occurred_at, details FROM subscription_events "
        stamped += "WHERE type='seats_changed'"
        for sub, at, details in _rows(seed, stamped):
            if str(at) > last_issue.get(str(sub), ""):
                pending += 1
                row = _rows(seed, f"SELECT seats FROM subscriptions WHERE id='{sub}'")[0][0]
                later = [r for r in _rows(seed, stamped) if r[0] == sub and str(r[1]) > str(at)]
                if not later:
                    assert row == json.loads(str(details))["to_seats"]
        over = {i: inputs["seats"] for i, _, inputs in _inputs(seed) if i in truth.overcharges}
        named = [json.loads(str(d)) for _, d in _rows(seed, SEAT_EVENTS)]
        billed = set(over.values())
        cut = any(n["to_seats"] < n["from_seats"] and n["from_seats"] in billed for n in named)
        cuts += cut
        rises += not cut
    assert pending >= 5
    assert 0.35 <= rises / (rises + cuts) <= 0.65, (rises, cuts)


def _band_top(currency: str) -> Fraction:
    base = parse_rate(data("catalog.json")["fx_base"][currency])
    return Fraction(round(fx_band_top(base) * 10000), 10000)


def test_high_fx_days_occur_in_several_classes_billed_right() -> None:
    classes: Counter[str] = Counter()
    for seed in SEEDS:
        scenario = _scenario(seed)
        label = reveal_truth(scenario).label
        (currency,) = _rows(seed, "SELECT currency FROM customers")[0]
        if scenario.difficulty == "L1" or currency == "USD" or label.startswith("currency"):
            continue
        base = parse_rate(data("catalog.json")["fx_base"][str(currency)])
        for invoice, _, inputs in _inputs(seed):
            rate = parse_rate(str(inputs["fx_rate"]))
            if (
                rate >= base * Fraction(103, 100)
                and invoice not in reveal_truth(scenario).overcharges
            ):
                _billed_right(seed, invoice)
                classes[label] += 1
    assert len(classes) >= 6 and "no_error" in classes, classes


def test_fx_fault_rates_stay_inside_the_band() -> None:
    seen = 0
    for seed in SEEDS:
        scenario = _scenario(seed)
        truth = reveal_truth(scenario)
        if truth.label != "currency_conversion_error":
            continue
        (currency,) = _rows(seed, "SELECT currency FROM customers")[0]
        for invoice, _, inputs in _inputs(seed):
            if invoice in truth.overcharges:
                seen += 1
                assert parse_rate(str(inputs["fx_rate"])) <= _band_top(str(currency)) * Fraction(
                    101, 100
                )
    assert seen >= 10


def _right_fx_days(seed: int) -> dict[str, str]:
    """Invoice -> the day whose rate is right: the local issue day, or the last business day
    before it (billed inputs record it, except on an fx fault's victims)."""
    (zone,) = _rows(seed, "SELECT timezone FROM customers")[0]
    rows = _rows(seed, "SELECT id, issued_at FROM invoices")
    return {str(i): fx_day(utc_to_local_date(str(at), str(zone))).isoformat() for i, at in rows}


def test_fx_fault_rate_is_no_other_invoices_and_mostly_on_an_off_start_invoice() -> None:
    """A wrong-date victim records a day no other invoice of its subscription records (no rate
    two of its invoices share; a subscription billed after the fault may hit the day by chance)
    and, mostly, is an invoice whose right fx date already is not its period start."""
    victims = off = 0
    for seed in SEEDS:
        truth = reveal_truth(_scenario(seed))
        if truth.label != "currency_conversion_error":
            continue
        inputs, right = _inputs(seed), _right_fx_days(seed)
        for invoice, sub, billed in inputs:
            if invoice not in truth.overcharges:
                continue
            others = {i["fx_rate_date"] for o, s, i in inputs if o != invoice and s == sub}
            assert billed["fx_rate_date"] not in others
            victims += 1
            off += right[invoice] != billed["period_start"]
    assert victims >= 10 and off >= victims * 0.6, (victims, off)


def test_rate_table_holds_the_same_extra_days_in_every_class() -> None:
    """Every non-USD table holds up to 12 days beyond the invoices' right ones (a random day
    may fall on one already there), a fault's stale day among them (`extra_fx_days`): as many
    in the fx class as elsewhere."""
    extra: dict[bool, list[int]] = {True: [], False: []}
    for seed in SEEDS:
        (currency,) = _rows(seed, "SELECT currency FROM customers")[0]
        if currency == "USD":
            continue
        used = set(_right_fx_days(seed).values())
        days = {str(d) for (d,) in _rows(seed, "SELECT date FROM fx_rates")}
        assert len(days - used) <= 12, (seed, len(days - used))
        fx_class = reveal_truth(_scenario(seed)).label == "currency_conversion_error"
        extra[fx_class].append(len(days - used))
    assert len(extra[True]) >= 5
    mean = {k: sum(v) / len(v) for k, v in extra.items()}
    assert abs(mean[True] - mean[False]) <= 1.5, mean
