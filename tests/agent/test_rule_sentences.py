"""Every reference and auditor summary states the rule the engine applied (issue 39 item 2).

A summary's rule sentences (`env.engine.rules`) are read back and compared with the engine's
own bill: the counterfactual twin (`env.generation.twins`) re-bills each faulted invoice from its
correct inputs, so the values a sentence names (the fx rate's day, the tax rate and where, the
day a trial or a plan change starts charging, the seats, plan, coupon, usage units, where a
cancellation took effect) must be the twin's. Cases: every faulted eval and heldout scenario,
the reference's summary, and the auditor's where the grader scores it a success.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from datetime import date
from functools import cache

import pytest

from agent.auditor import auditor_program
from env.engine.calendar import fx_day, utc_to_local_date
from env.engine.money import format_cents, parse_rate
from env.engine.rules import TEMPLATES, parse_rules
from env.generation.generator import generate
from env.generation.splits import split_seeds
from env.generation.twins import twin
from env.ledger_env import open_database
from env.scenario import Scenario, reveal_truth
from eval.grader import grade_episode
from tests.agent.test_auditor import run_program

Values = dict[str, str]


class World:
    """A scenario's database beside its twin's: the bill as billed and as the engine bills it."""

    def __init__(self, scenario: Scenario) -> None:
        self.db = open_database(scenario.database)
        self.twin = open_database(twin(scenario.split, scenario.seed).database)
        for db in (self.db, self.twin):
            db.row_factory = sqlite3.Row
        self.customer = self.db.execute("SELECT * FROM customers").fetchone()

    def invoice(self, invoice_id: str, *, right: bool = False) -> sqlite3.Row | None:
        db = self.twin if right else self.db
        return db.execute("SELECT * FROM invoices WHERE id = ?", (invoice_id,)).fetchone()

    def inputs(self, invoice_id: str) -> dict[str, object] | None:
        row = self.invoice(invoice_id, right=True)
        return None if row is None else json.loads(row["inputs"])

    def issue_day(self, invoice_id: str) -> str:
        row = self.invoice(invoice_id)
        assert row is not None
        return utc_to_local_date(row["issued_at"], self.customer["timezone"]).isoformat()

    def service_end(self, invoice_id: str) -> str:
        """Where the engine stops billing the invoice's subscription: its last invoice's charge
        end in the twin (its proration end, else its period end)."""
        row = self.invoice(invoice_id)
        assert row is not None
        ends = [
            json.loads(r["inputs"]).get("proration_end") or r["period_end"]
            for r in self.twin.execute(
                "SELECT * FROM invoices WHERE subscription_id = ? AND period_start < ?",
                (row["subscription_id"], row["period_start"]),
            )
        ]
        right = self.inputs(invoice_id)
        return str(right["proration_end"]) if right and right["proration_end"] else max(ends)

    def net_paid(self, invoice_id: str) -> int:
        sign = {"succeeded": 1, "refunded": -1}
        return sum(
            sign.get(r["status"], 0) * r["amount_cents"]
            for r in self.db.execute("SELECT * FROM payments WHERE invoice_id = ?", (invoice_id,))
        )


def _fx(world: World, form: int, v: Values) -> bool:
    right = world.inputs(v["invoice"])
    assert right is not None
    day = str(right["fx_rate_date"])
    issued = world.issue_day(v["invoice"])
    if form == 0:
        return v["day"] == issued == day
    if form == 1:
        friday = fx_day(date.fromisoformat(issued)).isoformat()
        return v["day"] == issued and day == friday != issued
    return v["day"] == day == world.customer["fx_rate_lock_date"]


def _tax(world: World, _: int, v: Values) -> bool:
    right = world.inputs(v["invoice"])
    assert right is not None
    same_rate = parse_rate(v["rate"]) == parse_rate(str(right["tax_rate"]))
    place = v["jurisdiction"] == right["tax_jurisdiction"]
    return same_rate and place and v["day"] == world.issue_day(v["invoice"])


def _exempt(world: World, _: int, v: Values) -> bool:
    right, c = world.inputs(v["invoice"]), world.customer
    assert right is not None
    window = (c["exemption_certificate_id"], c["exemption_valid_from"], c["exemption_valid_until"])
    named = (v["certificate"], v["valid_from"], v["valid_until"])
    where = v["jurisdiction"] == c["exemption_jurisdiction"]
    return right["tax_exempt"] is True and named == window and where


def _period(world: World, v: Values) -> bool:
    row = world.invoice(v["invoice"])
    return row is not None and v["start"] == row["period_start"]


def _of_inputs(key: Callable[[dict[str, object]], object]) -> Callable[[World, int, Values], bool]:
    """The sentence's last value is the twin's input read by `key`, at the invoice's period."""

    def check(world: World, _: int, v: Values) -> bool:
        right = world.inputs(v["invoice"])
        value = list(v.values())[-1].split(" = ")[-1]
        return right is not None and _period(world, v) and str(key(right)) == value

    return check


def _dated(field: str) -> Callable[[World, int, Values], bool]:
    def check(world: World, _: int, v: Values) -> bool:
        right = world.inputs(v["invoice"])
        return right is not None and v["day"] == right[field]

    return check


def _trial(world: World, _: int, v: Values) -> bool:
    right = world.inputs(v["invoice"])
    if right is not None:  # charged from the trial's end
        return v["day"] == right["proration_start"]
    row = world.invoice(v["invoice"])  # a period wholly inside the trial: no invoice at all
    return row is not None and v["day"] >= row["period_end"]


def _duplicate(world: World, _: int, v: Values) -> bool:
    row = world.invoice(v["invoice"])
    assert row is not None
    total = v["total"] == format_cents(row["total_cents"])
    return total and v["net"] == format_cents(world.net_paid(v["invoice"]))


def _timezone(world: World, form: int, v: Values) -> bool:
    right = world.inputs(v["invoice"])
    if v["what"] == "the cancellation":
        return v["day"] == world.service_end(v["invoice"])
    key = "proration_start" if v["what"] == "the trial's end" else "plan_change_date"
    right_tz = v["timezone"] == world.customer["timezone"]
    return right is not None and right_tz and v["day"] == right[key]


CHECKS: dict[str, Callable[[World, int, Values], bool]] = {
    "duplicate_payment": _duplicate,
    "proration_error": _dated("plan_change_date"),
    "wrong_tax_rate": _tax,
    "tax_exempt_charged": _exempt,
    "coupon_not_applied": _of_inputs(lambda i: (i["coupon"] or {}).get("coupon_code")),  # type: ignore[union-attr]
    "seat_count_mismatch": _of_inputs(lambda i: i["seats"]),
    "billed_after_cancellation": lambda w, _, v: v["end"] == w.service_end(v["invoice"]),
    "trial_period_charged": _trial,
    "usage_overage_miscalculated": _of_inputs(lambda i: i["usage_units"]),
    "currency_conversion_error": _fx,
    "downgrade_not_applied": _of_inputs(lambda i: i["plan"]["plan_id"]),  # type: ignore[index]
    "timezone_period_boundary": _timezone,
}


@cache
def _faulted() -> list[Scenario]:
    found = [generate(s, seed) for s in ("eval", "heldout") for seed in split_seeds(s)]
    return [s for s in found if reveal_truth(s).label != "no_error"]


def _problems(scenario: Scenario, summary: str) -> list[str]:
    """Each affected invoice needs a rule sentence of the label's, true to the engine's bill."""
    truth = reveal_truth(scenario)
    world = World(scenario)
    said = {v["invoice"]: (label, form, v) for label, form, v in parse_rules(summary)}
    problems = []
    for invoice_id in truth.overcharges:
        if invoice_id not in said:
            problems.append(f"{invoice_id}: no rule sentence")
            continue
        label, form, values = said[invoice_id]
        if label != truth.label or not CHECKS[label](world, form, values):
            problems.append(f"{invoice_id}: {label} {values} is not the engine's rule")
    return problems


def test_every_root_cause_has_a_rule_and_a_check() -> None:
    assert set(TEMPLATES) == set(CHECKS)


def test_every_reference_summary_states_the_rule_the_engine_applied() -> None:
    for scenario in _faulted():
        summary = reveal_truth(scenario).reference[-1].arguments["summary"]
        assert _problems(scenario, str(summary)) == [], scenario.scenario_id


def test_every_successful_auditor_summary_states_the_rule_the_engine_applied() -> None:
    checked = 0
    for scenario in _faulted():
        record = run_program(auditor_program, scenario)
        grade = grade_episode(reveal_truth(scenario), record, scenario.database)
        if not grade.success or record.findings is None:
            continue
        assert _problems(scenario, record.findings.summary) == [], scenario.scenario_id
        checked += 1
    assert checked >= 100


@pytest.mark.parametrize(
    "edit",
    [
        lambda s: s.replace("local issue day", "period start"),
        lambda s: s.replace(": 1", ": 9"),
    ],
)
def test_a_wrong_rule_sentence_is_caught(edit: Callable[[str], str]) -> None:
    """The comparison is no tautology: a reference sentence with another day or value fails."""
    for scenario in _faulted():
        summary = str(reveal_truth(scenario).reference[-1].arguments["summary"])
        if edit(summary) != summary and parse_rules(summary):
            changed = edit(summary)
            if parse_rules(changed) != parse_rules(summary):
                assert _problems(scenario, changed)
                return
    pytest.skip("no reference summary this edit changes")


def test_no_currency_reference_names_the_period_start_as_the_rates_day() -> None:
    """The right rate is the local issue day's (or the business day before): a clause calling
    it the period start's contradicted the rule sentence after it (eval-100015: a Sunday issue
    day, the Friday's rate)."""
    found = 0
    for seed in split_seeds("eval", 100):
        scenario = generate("eval", seed)
        truth = reveal_truth(scenario)
        if truth.label == "currency_conversion_error":
            found += 1
            assert "period start" not in truth.reference[-1].arguments["summary"], seed
    assert found
