"""The reward terms (rewards/reward.py), each with a hand-worked example on a generated scenario.

Episodes are driven the agent's way, `LedgerEnv.call(name, json)`, on real eval scenarios found
by label; `record_episode` then `compute_reward(reveal_truth(s), record, config)`. Weights are
the design's: root cause 0.35, amounts 0.35, action 0.10, evidence 0.20, false reversal -1.00,
hallucination -0.50, extra invoices -0.10 each beyond the first, tool calls -lambda each.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from env.engine.money import format_cents, parse_amount
from env.episode import record_episode
from env.generation.generator import generate
from env.generation.splits import split_assignment, split_seeds
from env.labels import ROOT_CAUSES
from env.ledger_env import LedgerEnv
from env.scenario import Scenario, reveal_truth
from rewards.provenance import Trace, trace_episode
from rewards.reward import RewardBreakdown, RewardConfig, compute_reward


def _totals(scenario: Scenario) -> dict[str, int]:
    env = LedgerEnv(scenario)
    listed = json.loads(
        env.call("list_invoices", json.dumps({"customer_id": scenario.customer_id}))
    )
    env.close()
    return {i["invoice_id"]: parse_amount(i["total"]) for i in listed["invoices"]}


def _find(label: str | None, fits: Callable[[Scenario], bool]) -> Scenario:
    for seed in split_seeds("eval"):
        assigned = split_assignment("eval", seed).label
        if (label is None and assigned != "no_error") or assigned == label:
            scenario = generate("eval", seed)
            if fits(scenario):
                return scenario
    raise AssertionError(f"no eval scenario fits ({label})")


def _one_partial_overcharge(scenario: Scenario) -> bool:
    """One affected invoice owed less than its total, and three unaffected invoices."""
    truth, totals = reveal_truth(scenario), _totals(scenario)
    unaffected = [i for i, cents in totals.items() if i not in truth.overcharges and cents > 0]
    return (
        len(truth.overcharges) == 1
        and len(unaffected) >= 3
        and all(2 <= cents < totals[i] for i, cents in truth.overcharges.items())
    )


@pytest.fixture(scope="module")
def faulted() -> Scenario:
    return _find(None, _one_partial_overcharge)


@pytest.fixture(scope="module")
def claimed() -> Scenario:
    """A complaint claiming an amount that no invoice totals (the half-plus-a-cent kind)."""
    return _find(None, lambda s: any(
        parse_amount(c) not in _totals(s).values() for c in reveal_truth(s).claimed_amounts
    ))  # fmt: skip


@pytest.fixture(scope="module")
def calm() -> Scenario:
    return _find("no_error", lambda s: bool(_totals(s)))


class Episode:
    """One episode driven through LedgerEnv, with the reference's moves as building blocks."""

    def __init__(self, scenario: Scenario) -> None:
        self.scenario = scenario
        self.truth = reveal_truth(scenario)
        self.env = LedgerEnv(scenario, episode_id="ep-reward")
        self.totals = _totals(scenario)

    def call(self, name: str, **arguments: Any) -> dict[str, Any]:
        result = json.loads(self.env.call(name, json.dumps(arguments)))
        assert isinstance(result, dict)
        return result

    def investigate(self) -> None:
        """The reference's read calls: every number a careful agent cites is shown by them."""
        for step in self.truth.reference:
            if step.name not in ("draft_credit_note", "submit_findings"):
                assert "error" not in self.call(step.name, **step.arguments)

    def read_disputed(self) -> dict[str, Any]:
        """The invoice the complaint disputes, read: what a no_error verdict needs (G11), once
        its summary cites a fact of it (G11.3)."""
        invoice = self.call("get_invoice", invoice_id=self.truth.disputed_invoices[0])
        assert "error" not in invoice
        return invoice

    def credit(self, invoice_id: str, cents: int) -> None:
        note = self.call("draft_credit_note", invoice_id=invoice_id, amount=format_cents(cents),
                         reason="Verified overcharge")  # fmt: skip
        assert "error" not in note, note

    def credit_truth(self) -> None:
        for invoice_id, cents in self.truth.overcharges.items():
            self.credit(invoice_id, cents)

    @property
    def reference_findings(self) -> dict[str, Any]:
        return dict(self.truth.reference[-1].arguments)

    def submit(self, **changes: Any) -> dict[str, Any]:
        return self.call("submit_findings", **{**self.reference_findings, **changes})

    @property
    def affected(self) -> str:
        return next(iter(self.truth.overcharges))

    @property
    def unaffected(self) -> list[str]:
        return [i for i, c in self.totals.items() if i not in self.truth.overcharges and c > 0]

    def items(self, amounts: dict[str, int]) -> list[dict[str, str]]:
        return [{"invoice_id": i, "overcharge_amount": format_cents(c)} for i, c in amounts.items()]

    def reward(self, **config: Any) -> RewardBreakdown:
        return compute_reward(self.truth, record_episode(self.env), RewardConfig(**config))

    def reward_traces(self) -> tuple[Trace, ...]:
        findings = self.env.findings
        assert findings is not None
        return trace_episode(findings, self.env.tool_log).traces


@pytest.fixture
def ep(faulted: Scenario) -> Iterator[Episode]:
    episode = Episode(faulted)
    yield episode
    episode.env.close()


@pytest.fixture
def calm_ep(calm: Scenario) -> Iterator[Episode]:
    episode = Episode(calm)
    yield episode
    episode.env.close()


def _reference(ep: Episode) -> None:
    ep.investigate()
    ep.credit_truth()
    assert ep.submit() == {
        "status": "submitted",
        "root_cause": ep.truth.label,
        "affected_invoices": len(ep.truth.overcharges),
    }


# the positive terms ----------------------------------------------------------------------------


def test_the_reference_solution_earns_every_positive_term(ep: Episode) -> None:
    _reference(ep)
    reward = ep.reward()
    # 0.35 + 0.35 + 0.10 + 0.20 = 1.00, no penalty
    assert reward.terms == {"root_cause": 0.35, "amounts": 0.35, "action": 0.10, "evidence": 0.20,
                            "false_reversal": 0.0, "hallucination": 0.0, "extra_invoices": 0.0,
                            "tool_cost": 0.0}  # fmt: skip
    assert reward.total == 1.0 and reward.success and reward.submitted
    assert ep.reward(variant="binary").total == 1.0


def test_a_wrong_root_cause_costs_its_term_and_the_evidence_term(ep: Episode) -> None:
    ep.investigate()
    ep.credit_truth()
    wrong = next(label for label in ROOT_CAUSES if label != ep.truth.label)
    ep.submit(root_cause=wrong)
    reward = ep.reward()
    # 0 + 0.35 + 0.10 + 0 = 0.45: the chain is traceable, but it backs a wrong answer
    assert reward.terms["root_cause"] == 0.0 and reward.terms["evidence"] == 0.0
    assert reward.total == 0.45 and not reward.hallucinated_numbers


def test_an_amount_one_cent_short_is_wrong_and_untraceable(ep: Episode) -> None:
    ep.investigate()
    ep.credit_truth()
    short = ep.truth.overcharges[ep.affected] - 1
    ep.submit(affected_invoices=ep.items({ep.affected: short}))
    reward = ep.reward()
    # 0.35 + 0 + 0.10 + 0 - 0.50 = -0.05
    assert reward.terms["amounts"] == 0.0
    assert reward.untraceable == (format_cents(short),)
    assert reward.total == -0.05


def test_an_amount_claimed_for_an_unaffected_invoice_makes_the_amounts_wrong(ep: Episode) -> None:
    ep.investigate()
    ep.credit_truth()
    extra = ep.unaffected[0]
    ep.call("get_invoice", invoice_id=extra)  # its total is then traceable
    ep.submit(affected_invoices=ep.items({**ep.truth.overcharges, extra: ep.totals[extra]}))
    reward = ep.reward()
    # 0.35 + 0 + 0.10 + 0, and the first unaffected invoice costs -0.10 * (1 - 1) = 0: 0.45
    assert reward.terms["amounts"] == 0.0 and reward.terms["extra_invoices"] == 0.0
    assert reward.total == 0.45 and not reward.hallucinated_numbers


@pytest.mark.parametrize(("extra", "expected"), [(2, 0.35), (3, 0.25)])
def test_each_unaffected_invoice_beyond_the_first_costs_a_tenth(
    ep: Episode, extra: int, expected: float
) -> None:
    ep.investigate()
    ep.credit_truth()
    padded = dict(ep.truth.overcharges)
    for invoice in ep.unaffected[:extra]:
        ep.call("get_invoice", invoice_id=invoice)
        padded[invoice] = ep.totals[invoice]
    ep.submit(affected_invoices=ep.items(padded))
    reward = ep.reward()
    # 2 extra: 0.35 + 0.10 - 0.10 * (2 - 1) = 0.35; 3 extra: 0.35 + 0.10 - 0.10 * (3 - 1) = 0.25
    assert reward.terms["extra_invoices"] == round(-0.1 * (extra - 1), 6)
    assert reward.total == expected


def test_credits_summed_per_invoice_to_the_overcharge_are_the_right_action(ep: Episode) -> None:
    ep.investigate()
    owed = ep.truth.overcharges[ep.affected]
    ep.credit(ep.affected, owed // 2)
    ep.credit(ep.affected, owed - owed // 2)  # two notes, a + b = the overcharge
    ep.submit()
    reward = ep.reward()
    # 0.35 + 0.35 + 0.10 + 0.20 = 1.00
    assert reward.credits == {ep.affected: owed}
    assert reward.terms["action"] == 0.10 and reward.total == 1.0


def test_a_missing_credit_loses_the_action_the_amounts_and_the_evidence_terms(ep: Episode) -> None:
    ep.investigate()
    ep.submit()
    reward = ep.reward()
    # reported amounts the episode did not act on earn nothing: 0.35 + 0 + 0 + 0 = 0.35
    assert reward.terms["action"] == 0.0 and reward.terms["amounts"] == 0.0
    assert reward.terms["evidence"] == 0.0 and reward.total == 0.35
    assert ep.reward(variant="binary").total == 0.0


def test_a_credit_that_differs_from_the_reported_amount_loses_the_amounts_term(
    ep: Episode,
) -> None:
    ep.investigate()
    owed = ep.truth.overcharges[ep.affected]
    ep.credit(ep.affected, owed - 1)  # one cent short of what the findings will report
    ep.submit()
    reward = ep.reward()
    # label 0.35; amounts 0 (credits != reported); action 0 (credits != truth); evidence 0
    assert reward.terms["amounts"] == 0.0 and reward.total == 0.35


def test_no_error_with_no_credit_is_the_right_action(calm_ep: Episode) -> None:
    _reference(calm_ep)
    reward = calm_ep.reward()
    # 0.35 + 0.35 ({} == {}) + 0.10 (no credit) + 0.20 = 1.00
    assert reward.credits == {} and reward.terms["action"] == 0.10 and reward.total == 1.0


# evidence and hallucination ---------------------------------------------------------------------


def test_findings_that_cite_nothing_earn_no_evidence_term(calm_ep: Episode) -> None:
    calm_ep.read_disputed()
    calm_ep.submit(summary="Nothing is wrong.")  # no id, amount or date: an empty chain
    reward = calm_ep.reward()
    # G11.3: a no_error that cites nothing of the disputed invoice earns no term at all (it
    # was 0.80 before the fourth release: right, no chain); binary needs a chain as well
    assert reward.terms["evidence"] == 0.0 and reward.total == 0.0
    assert not reward.hallucinated_numbers and not reward.investigated
    assert calm_ep.reward(variant="binary").total == 0.0


def test_a_non_empty_traceable_chain_earns_the_evidence_term(calm_ep: Episode) -> None:
    invoice = calm_ep.read_disputed()
    customer = calm_ep.call("get_customer", customer_id=calm_ep.scenario.customer_id)
    subscription = customer["subscription_ids"][0]
    calm_ep.submit(summary=f"Checked {subscription}: the total {invoice['total']} is right.")
    reward = calm_ep.reward()
    # 0.35 + 0.35 + 0.10 + 0.20 = 1.00: get_customer showed the subscription id, get_invoice
    # the disputed invoice's total (a fact of it, G11.3)
    assert reward.terms["evidence"] == 0.20 and reward.total == 1.0


def test_the_customer_id_get_customer_resolved_is_a_found_fact(calm_ep: Episode) -> None:
    invoice = calm_ep.read_disputed()
    calm_ep.call("get_customer", customer_id=calm_ep.scenario.customer_id)
    calm_ep.submit(summary=f"{calm_ep.scenario.customer_id}: total {invoice['total']}, right.")
    trace = {t.cited.raw: t for t in calm_ep.reward_traces()}
    # G1.1: a look-up key the tool resolved to a record is a fact of that output
    assert trace[calm_ep.scenario.customer_id].status == "evidence"
    assert calm_ep.reward().total == 1.0


def test_an_untraceable_number_in_the_summary_costs_half_a_point(ep: Episode) -> None:
    ep.investigate()
    ep.credit_truth()
    ep.submit(summary=ep.reference_findings["summary"] + " Refunded 31337.77 so far.")
    reward = ep.reward()
    # 0.35 + 0.35 + 0.10 + 0 (chain broken) - 0.50 = 0.30
    assert reward.untraceable == ("31337.77",) and reward.hallucinated_numbers
    assert reward.total == 0.3
    assert ep.reward(variant="binary").total == 0.0


def test_an_amount_the_complaint_claims_is_not_evidence(claimed: Scenario) -> None:
    """G3.1: quoted in the summary it is claimed (no hallucination, no found fact); the
    reward reads the complaint from the episode's database, `trace_episode` alone does not."""
    episode = Episode(claimed)
    episode.investigate()
    episode.credit_truth()
    claim = episode.truth.claimed_amounts[0]
    assert claim in claimed.complaint
    episode.submit(summary=episode.reference_findings["summary"] + f" They claimed {claim}.")
    assert episode.reward().untraceable == () and episode.reward().total == 1.0
    assert [t.cited.raw for t in episode.reward_traces() if t.status == "untraceable"] == [claim]


def test_an_amount_read_back_from_the_agents_own_credit_note_is_not_evidence(ep: Episode) -> None:
    ep.investigate()
    invented = ep.truth.overcharges[ep.affected] - 1  # short of the truth: no false reversal
    ep.credit(ep.affected, invented)
    shown = ep.call("get_invoice", invoice_id=ep.affected)
    assert shown["amount_credited"] == format_cents(invented)  # the echo the reward ignores
    ep.submit(summary=f"Refunded {format_cents(invented)}.")
    assert ep.reward().untraceable == (format_cents(invented),)


def test_inputs_echoed_by_recompute_invoice_are_not_evidence(ep: Episode) -> None:
    ep.investigate()
    ep.credit_truth()
    shown = ep.call("recompute_invoice", invoice_id=ep.affected, tax_rate="0.1234", seats=97)
    assert shown["tax"]["rate"] == "0.1234" and shown["assumptions"]["seats"] == 97
    summary = ep.reference_findings["summary"] + " At 12.34% and 97 seats it recomputes lower."
    ep.submit(summary=summary)
    assert ep.reward().untraceable == ("12.34%", "97")


# penalties ---------------------------------------------------------------------------------------


def test_a_credit_one_cent_beyond_the_overcharge_is_a_false_reversal(ep: Episode) -> None:
    ep.investigate()
    ep.credit(ep.affected, ep.truth.overcharges[ep.affected] + 1)
    ep.submit()
    reward = ep.reward()
    # label 0.35; amounts and evidence 0 (the credit is not what was reported); -1.00 = -0.65
    assert reward.false_reversal and reward.terms["false_reversal"] == -1.0
    assert reward.total == -0.65


def test_two_small_notes_that_together_exceed_the_overcharge_are_a_false_reversal(
    ep: Episode,
) -> None:
    ep.investigate()
    owed = ep.truth.overcharges[ep.affected]
    half_and_a_cent = owed // 2 + 1  # each note is within the overcharge; the sum is not
    ep.credit(ep.affected, half_and_a_cent)
    ep.credit(ep.affected, half_and_a_cent)
    ep.submit()
    reward = ep.reward()
    # credits summed first: 2 * (owed // 2 + 1) > owed; 0.35 + 0 + 0 + 0 - 1.00 = -0.65
    assert reward.credits == {ep.affected: 2 * half_and_a_cent}
    assert reward.false_reversal and reward.total == -0.65


def test_any_credit_in_a_no_error_case_is_a_false_reversal(calm_ep: Episode) -> None:
    calm_ep.investigate()
    billed = next(i for i, cents in calm_ep.totals.items() if cents > 0)  # not a trial's 0.00
    calm_ep.credit(billed, 1)  # one cent
    calm_ep.submit()
    reward = calm_ep.reward()
    # label 0.35; the empty report is contradicted by the credit: 0 + 0 + 0; -1.00 = -0.65
    assert reward.false_reversal and reward.total == -0.65


def test_the_tool_call_cost_is_lambda_per_call(ep: Episode) -> None:
    _reference(ep)
    calls = len(ep.truth.reference)
    reward = ep.reward(tool_call_cost=0.01)
    # e.g. 8 calls: 1.00 - 0.01 * 8 = 0.92
    assert ep.env.tool_calls == calls
    assert reward.terms["tool_cost"] == round(-0.01 * calls, 6)
    assert reward.total == round(1.0 - 0.01 * calls, 6)


def test_without_a_submission_positive_terms_are_zero_but_penalties_apply(ep: Episode) -> None:
    ep.investigate()
    ep.credit(ep.affected, ep.truth.overcharges[ep.affected] + 1)
    ep.env.truncate()
    reward = ep.reward(tool_call_cost=0.01)
    calls = ep.env.tool_calls
    # nothing positive; -1.00 for the over-credit and -0.01 per call
    assert not reward.submitted and reward.truncated
    assert reward.terms["root_cause"] == reward.terms["evidence"] == 0.0
    assert reward.total == round(-1.0 - 0.01 * calls, 6)


def test_a_truncated_episode_with_exactly_the_right_credits_scores_zero(ep: Episode) -> None:
    ep.investigate()
    ep.credit_truth()
    ep.env.truncate()
    reward = ep.reward()
    assert not reward.submitted and reward.total == 0.0 and not reward.false_reversal


def test_a_second_submit_findings_is_refused_and_changes_nothing(ep: Episode) -> None:
    _reference(ep)
    calls = ep.env.tool_calls
    second = ep.submit(root_cause="no_error", affected_invoices=[], summary="")
    assert set(second) == {"error"}
    assert ep.env.tool_calls == calls and ep.env.findings is not None
    assert ep.env.findings.root_cause == ep.truth.label
    assert ep.reward().total == 1.0


# variants and config -----------------------------------------------------------------------------


def test_binary_reward_is_one_only_for_a_success_with_a_traceable_chain(
    ep: Episode, calm_ep: Episode
) -> None:
    _reference(ep)
    assert ep.reward(variant="binary").total == 1.0
    calm_ep.submit(summary="")  # a success by the grader's rules, but an empty chain
    binary = calm_ep.reward(variant="binary")
    assert binary.success and binary.total == 0.0
    assert binary.terms == calm_ep.reward().terms  # both variants log the same breakdown


def test_the_breakdown_records_the_config(ep: Episode) -> None:
    _reference(ep)
    config = RewardConfig(tool_call_cost=0.02, hallucination=-0.25)
    reward = compute_reward(ep.truth, record_episode(ep.env), config)
    assert reward.config == config.model_dump()
    assert reward.config["tool_call_cost"] == 0.02 and reward.config["hallucination"] == -0.25
    assert reward.to_dict()["config"] == config.model_dump()


def test_reward_config_refuses_unknown_fields_and_a_negative_lambda() -> None:
    with pytest.raises(ValidationError):
        RewardConfig(bonus=1.0)  # type: ignore[call-arg]
    with pytest.raises(ValidationError):
        RewardConfig.model_validate({"evidence_weight": 0.2})
    with pytest.raises(ValidationError):
        RewardConfig(tool_call_cost=-0.1)


def test_no_module_in_rewards_imports_from_eval() -> None:
    for path in sorted((Path(__file__).resolve().parents[2] / "rewards").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                modules = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                modules = [node.module or ""]
            else:
                continue
            assert not any(m == "eval" or m.startswith("eval.") for m in modules), path.name
