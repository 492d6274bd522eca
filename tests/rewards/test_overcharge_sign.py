"""An undercharge never grounds an overcharge (rewards/README.md G7.1), in the reward.

An item's overcharge amount is evidence only where a call showed it without a minus: a
recompute `difference` of `-139.04` (undercharged) grounds no overcharge of 139.04. Summary
tokens still compare without sign (a proration credit line shown `-45.00` is cited as `45.00`).
The grader's side: tests/eval/test_grader_sign.py; one played case here runs both.
"""

from __future__ import annotations

import json

from env.episode import record_episode
from env.findings import Findings
from env.generation.generator import generate
from env.ledger_env import LedgerEnv
from env.scenario import reveal_truth
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


def test_a_played_undercharge_grounds_no_overcharge_in_either_reader() -> None:
    """eval-100001: recomputed with an earlier plan change, INV-B22EHE shows a difference of
    -76.18 (billed less than that); reported as an overcharge of 76.18 it is a hallucination."""
    scenario = generate("eval", 100001)
    env = LedgerEnv(scenario, episode_id="ep-sign")
    try:
        args = {"invoice_id": "INV-B22EHE", "plan_change_date": "2025-09-01"}
        shown = json.loads(env.call("recompute_invoice", json.dumps(args)))
        assert shown["difference"] == "-76.18"
        item = {"invoice_id": "INV-B22EHE", "overcharge_amount": "76.18"}
        summary = "Recomputed, INV-B22EHE differs by -76.18."
        env.call("submit_findings", json.dumps({"root_cause": "proration_error",
                                                "affected_invoices": [item],
                                                "summary": summary}))  # fmt: skip
        record = record_episode(env)
    finally:
        env.close()
    truth = reveal_truth(scenario)
    assert compute_reward(truth, record).untraceable == ("76.18",)
    grade = grade_episode(truth, record, scenario.database)
    assert grade.untraceable == ("76.18",)
    assert {(t.where, t.status) for t in grade.number_trace if t.value == "76.18"} == {
        ("amount", "untraceable"),
        ("summary", "evidence"),
    }
