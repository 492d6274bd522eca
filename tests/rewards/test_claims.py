"""The customer's claim (rewards/README.md G3.1), in the reward and in the grader.

A summary token the complaint shows, and no tool, is `claimed`: no hallucination, never a found
fact. Played through `LedgerEnv` on the first faulted eval scenario whose complaint claims an
amount that no tool of its reference episode shows (found, not hard-coded, so a world change
keeps the test meaningful); each case is judged by both readers (the grader reads the complaint
on its own).
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from typing import Any

import pytest

from env.episode import EpisodeRecord, record_episode
from env.generation.generator import generate
from env.generation.splits import split_seeds
from env.ledger_env import LedgerEnv
from env.scenario import Scenario, reveal_truth
from eval.grader import grade_episode
from eval.grounding import claim_seen
from rewards.claims import claim_keys, complaint_text, episode_claims
from rewards.provenance import ProvenanceReport, trace_episode
from rewards.reward import RewardConfig, compute_reward


@dataclass(frozen=True)
class ClaimCase:
    scenario: Scenario
    amount: str  # the complaint's claimed amount, shown by no tool
    currency: str
    disputed: str  # a disputed invoice the reference reads

    @property
    def quote(self) -> str:
        return f"The customer's claim: “By my count you owe me {self.amount} {self.currency}.” "


def _shown_by_no_tool(scenario: Scenario, amount: str) -> bool:
    record = _play(scenario, f"The customer claims {amount}.")
    assert record.findings is not None
    traces = trace_episode(record.findings, record.tool_log).traces
    return any(t.cited.value == amount and t.status == "untraceable" for t in traces)


@pytest.fixture(scope="module")
def case() -> ClaimCase:
    for seed in split_seeds("eval"):
        scenario = generate("eval", seed)
        truth = reveal_truth(scenario)
        read = {c.arguments.get("invoice_id") for c in truth.reference if c.name == "get_invoice"}
        disputed = [i for i in truth.disputed_invoices if i in read]
        if truth.label == "no_error" or not truth.claimed_amounts or not disputed:
            continue
        amount = truth.claimed_amounts[0]
        if "misleading_claim" in truth.traps and _shown_by_no_tool(scenario, amount):
            currency = next(w for w in ("USD", "EUR", "GBP", "CAD", "AUD")
                            if f"{amount} {w}" in scenario.complaint)  # fmt: skip
            return ClaimCase(scenario, amount, currency, disputed[0])
    raise AssertionError("no eval scenario claims an amount that no tool shows")


def _play(
    scenario: Scenario, summary: str, amount: str | None = None, no_error: bool = False
) -> EpisodeRecord:
    """The reference, its summary replaced; `amount` replaces the overcharge and its credit;
    `no_error`: no credit, and a no_error verdict."""
    env = LedgerEnv(scenario, episode_id="ep-claims")
    try:
        for call in reveal_truth(scenario).reference:
            arguments: dict[str, Any] = dict(call.arguments)
            if call.name == "draft_credit_note" and no_error:
                continue
            if call.name == "draft_credit_note" and amount:
                arguments["amount"] = amount
            if call.name == "submit_findings":
                arguments["summary"] = summary
                if no_error:
                    arguments.update(root_cause="no_error", affected_invoices=[])
                if amount:
                    item = dict(arguments["affected_invoices"][0], overcharge_amount=amount)
                    arguments["affected_invoices"] = [item]
            env.call(call.name, json.dumps(arguments))
        return record_episode(env)
    finally:
        env.close()


def _statuses(scenario: Scenario, record: EpisodeRecord) -> tuple[dict, dict]:
    assert record.findings is not None
    claims = episode_claims(record.final_database)
    reward = {(t.cited.where, t.cited.value): t.status
              for t in trace_episode(record.findings, record.tool_log, claims).traces}  # fmt: skip
    grade = grade_episode(reveal_truth(scenario), record, scenario.database)
    grader = {(t.where, t.value): t.status for t in grade.number_trace}
    return reward, grader


def test_the_complaint_is_read_from_the_database(case: ClaimCase) -> None:
    scenario, amount = case.scenario, case.amount
    assert complaint_text(scenario.database) == scenario.complaint
    assert amount in claim_keys(scenario.complaint).numbers
    assert amount in claim_seen(scenario.database).numbers


def test_a_quoted_claim_keeps_full_marks_in_both_readers(case: ClaimCase) -> None:
    scenario, amount = case.scenario, case.amount
    summary = case.quote + reveal_truth(scenario).reference[-1].arguments["summary"]
    record = _play(scenario, summary)
    reward, grader = _statuses(scenario, record)
    assert reward[("summary", amount)] == grader[("summary", amount)] == "claimed"
    truth = reveal_truth(scenario)
    assert compute_reward(truth, record).total == 1.0
    assert compute_reward(truth, record, RewardConfig(variant="binary")).total == 1.0
    assert grade_episode(truth, record, scenario.database).grounded_success


def test_without_the_complaint_the_claim_is_untraceable(case: ClaimCase) -> None:
    item = reveal_truth(case.scenario).reference[-1].arguments["affected_invoices"][0]
    said = f"{item['invoice_id']} is overcharged by {item['overcharge_amount']}."
    record = _play(case.scenario, case.quote + said)
    assert record.findings is not None
    report = trace_episode(record.findings, record.tool_log)  # no claims passed
    assert [c.value for c in report.untraceable] == [case.amount]


def test_a_claimed_amount_never_grounds_an_overcharge(case: ClaimCase) -> None:
    scenario, amount = case.scenario, case.amount
    said = f"{case.disputed} is overcharged by {amount}."
    record = _play(scenario, case.quote + said, amount=amount)
    reward, grader = _statuses(scenario, record)
    assert reward[("amount", amount)] == grader[("amount", amount)] == "echo_only"  # the draft
    assert reward[("summary", amount)] == grader[("summary", amount)] == "claimed"
    truth = reveal_truth(scenario)
    assert compute_reward(truth, record).hallucinated_numbers
    assert not grade_episode(truth, record, scenario.database).grounded_success


def test_claimed_tokens_alone_make_no_chain(case: ClaimCase) -> None:
    record = _play(case.scenario, f"The customer claims {case.amount} {case.currency}.")
    assert record.findings is not None
    report = trace_episode(record.findings, record.tool_log, episode_claims(record.final_database))
    said = ProvenanceReport(tuple(t for t in report.traces if t.cited.where == "summary"))
    assert report.traceable and said.traceable and not said.chain  # the items make the chain
    assert [t.allowed_kind for t in report.traces if t.status == "claimed"] == [True]


def test_a_database_without_disputes_claims_nothing() -> None:
    empty = sqlite3.connect(":memory:")
    empty.execute("CREATE TABLE t (x)")
    image = empty.serialize()
    assert complaint_text(image) == ""
    assert not claim_seen(image).numbers


def test_a_claimed_token_is_no_fact_of_the_disputed_invoice(case: ClaimCase) -> None:
    """G11.3: the reference read a disputed invoice; a no_error citing its id and the complaint's
    claimed amount cites no fact of it, in both readers."""
    scenario = case.scenario
    said = f"The customer claims {case.amount} {case.currency}; {case.disputed} is right."
    record = _play(scenario, said, no_error=True)
    truth = reveal_truth(scenario)
    reward = compute_reward(truth, record)
    assert not reward.investigated and not reward.hallucinated_numbers
    assert not grade_episode(truth, record, scenario.database).investigated
