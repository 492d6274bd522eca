"""An undercharge never grounds an overcharge (rewards/README.md G7.1), in the reward.

An item's overcharge amount is evidence only where a call showed it without a minus: a
recompute `difference` of `-139.04` (undercharged) grounds no overcharge of 139.04. Summary
tokens still compare without sign (a proration credit line shown `-45.00` is cited as `45.00`).
The grader's side: tests/eval/test_grader_sign.py; one played case here runs both.
"""

from __future__ import annotations

import json
from datetime import date, timedelta

from env.episode import record_episode
from env.findings import Findings
from env.generation.generator import generate
from env.generation.splits import split_seeds
from env.ledger_env import LedgerEnv
from env.scenario import Scenario, reveal_truth
from eval.grader import grade_episode
from rewards.provenance import check_provenance
from rewards.reward import compute_reward


def _findings(amount: str, summary: str) -> Findings:
    return Findings(
        root_cause="proration_error",
        affected_invoices=[{"invoice_id": "INV-ABC123", "overcharge_amount": amount}],
        summary=summary,
    )


def _status(findings: Findings, output: dict) -> dict[tuple[str, str], str]:
    report = check_provenance(findings, [json.dumps(output)])
    return {(t.cited.where, t.cited.value): t.status for t in report.traces}


_UNDER = {"invoice_id": "INV-ABC123", "total": "900.00", "difference": "-139.04"}


def test_a_negative_difference_grounds_no_overcharge() -> None:
    status = _status(_findings("139.04", "The difference is -139.04."), _UNDER)
    assert status[("amount", "139.04")] == "untraceable"
    assert status[("summary", "139.04")] == "evidence"  # the summary may cite it as shown


def test_a_positive_difference_grounds_it() -> None:
    over = dict(_UNDER, difference="139.04")
    assert _status(_findings("139.04", "Overcharged."), over)[("amount", "139.04")] == "evidence"


def test_json_numbers_keep_their_sign_for_an_overcharge() -> None:
    shown = {"invoice_id": "INV-ABC123", "difference": -139.04, "credit": 45.5}
    status = _status(_findings("139.04", "Checked."), shown)
    assert status[("amount", "139.04")] == "untraceable"
    assert _status(_findings("45.50", "Checked."), shown)[("amount", "45.5")] == "evidence"


def test_a_credit_line_shown_negative_is_cited_in_the_summary() -> None:
    shown = {"invoice_id": "INV-ABC123", "lines": [{"amount": "-45.00"}], "difference": "12.40"}
    status = _status(_findings("12.40", "The proration credit of 45.00 is right."), shown)
    assert status[("summary", "45")] == "evidence"
    assert status[("amount", "12.4")] == "evidence"


def _undercharge(scenario: Scenario) -> tuple[str, str] | None:
    """(invoice, plan_change_date) of a what-if that bills more than the invoice: the reference's
    own recompute with the change moved later, searched on a scratch episode so that the played
    one shows that single output."""
    (fix,) = [c for c in reveal_truth(scenario).reference if c.name == "recompute_invoice"]
    invoice = fix.arguments["invoice_id"]
    moved = date.fromisoformat(fix.arguments["plan_change_date"])
    scratch = LedgerEnv(scenario, episode_id="ep-scratch")
    try:
        for days in range(1, 28):
            args = {"invoice_id": invoice, "plan_change_date": str(moved + timedelta(days=days))}
            shown = json.loads(scratch.call("recompute_invoice", json.dumps(args)))
            if shown.get("difference", "").startswith("-"):
                return invoice, args["plan_change_date"]
    finally:
        scratch.close()
    return None  # no later plan change bills more (an upgrade)


def test_a_played_undercharge_grounds_no_overcharge_in_either_reader() -> None:
    """A downgrade's recompute with the change moved later shows a negative difference (billed
    less than that); reported as an overcharge of the same size it is a hallucination."""
    scenario, (invoice, when) = next(
        (s, found)
        for s in (generate("eval", seed) for seed in split_seeds("eval"))
        if reveal_truth(s).label == "proration_error" and (found := _undercharge(s)) is not None
    )  # a change moved later bills more where the change is a downgrade
    env = LedgerEnv(scenario, episode_id="ep-sign")
    try:
        args = {"invoice_id": invoice, "plan_change_date": when}
        difference = json.loads(env.call("recompute_invoice", json.dumps(args)))["difference"]
        size = difference.removeprefix("-")
        item = {"invoice_id": invoice, "overcharge_amount": size}
        summary = f"Recomputed, {invoice} differs by {difference}."
        env.call("submit_findings", json.dumps({"root_cause": "proration_error",
                                                "affected_invoices": [item],
                                                "summary": summary}))  # fmt: skip
        record = record_episode(env)
    finally:
        env.close()
    truth = reveal_truth(scenario)
    assert compute_reward(truth, record).untraceable == (size,)
    grade = grade_episode(truth, record, scenario.database)
    assert grade.untraceable == (size,)
    assert {(t.where, t.status) for t in grade.number_trace if t.value == size} == {
        ("amount", "untraceable"),
        ("summary", "evidence"),
    }
