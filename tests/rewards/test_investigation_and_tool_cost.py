"""`no_error` must be investigated (rewards/README.md G11) and the tool cost in both variants,
on real eval scenarios played through `LedgerEnv`, as the reward and the grader see them.

The disputed invoices are the scenario's private truth (`Truth.disputed_invoices`, computed by
`env.generation.complaints.disputed_invoices` at generation); the episodes here read them, or not.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from datetime import datetime
from typing import Any

import pytest

from env.episode import EpisodeRecord, record_episode
from env.generation.generator import generate
from env.generation.splits import split_seeds
from env.ledger_env import LedgerEnv
from env.scenario import Scenario, reveal_truth
from eval.grader import grade_episode
from rewards.reward import RewardConfig, compute_reward

_MONTH = re.compile(
    r"\b(?:January|February|March|April|May|June|July|August|September|October|November"
    r"|December) 20[0-9]{2}\b"
)


def _find(label: str, fits: Callable[[Scenario], bool], split: str = "eval") -> Scenario:
    for seed in split_seeds(split, 400 if split == "train" else None):
        scenario = generate(split, seed)
        if reveal_truth(scenario).label == label and fits(scenario):
            return scenario
    raise AssertionError(f"no {label} {split} scenario fits")


def _listing(scenario: Scenario) -> dict[str, dict[str, Any]]:
    """The customer's invoices as `list_invoices` shows them, by id."""
    env = LedgerEnv(scenario)
    shown = env.call("list_invoices", json.dumps({"customer_id": scenario.customer_id}))
    env.close()
    return {i["invoice_id"]: i for i in json.loads(shown)["invoices"]}


def _listed(scenario: Scenario) -> list[str]:
    return list(_listing(scenario))


@pytest.fixture(scope="module")
def named() -> Scenario:
    """A no_error complaint that names one invoice, and an account with others."""
    return _find("no_error", lambda s: len(reveal_truth(s).disputed_invoices) == 1
                 and len(_listed(s)) > 1)  # fmt: skip


def _play(
    scenario: Scenario, calls: list[tuple[str, dict[str, Any]]], summary: str
) -> EpisodeRecord:
    env = LedgerEnv(scenario, episode_id="ep-g11")
    for name, arguments in calls:
        env.call(name, json.dumps(arguments))
    findings = {"root_cause": "no_error", "affected_invoices": [], "summary": summary}
    env.call("submit_findings", json.dumps(findings))
    record = record_episode(env)
    env.close()
    return record


def _scores(scenario: Scenario, record: EpisodeRecord) -> tuple[float, float, bool, bool]:
    """(shaped, binary, reward's investigated, grader's grounded success)."""
    truth = reveal_truth(scenario)
    shaped = compute_reward(truth, record)
    binary = compute_reward(truth, record, RewardConfig(variant="binary"))
    grade = grade_episode(truth, record, scenario.database)
    assert grade.investigated == shaped.investigated
    return shaped.total, binary.total, shaped.investigated, grade.grounded_success


def _look(scenario: Scenario, invoice: str, tool: str = "get_invoice") -> list:
    customer = ("get_customer", {"customer_id": scenario.customer_id})
    listing = ("list_invoices", {"customer_id": scenario.customer_id})
    return [customer, listing, (tool, {"invoice_id": invoice})]


def test_no_error_after_reading_the_named_invoice_earns_full_marks(named: Scenario) -> None:
    (disputed,) = reveal_truth(named).disputed_invoices
    record = _play(named, _look(named, disputed), f"Checked {disputed}: it is billed right.")
    assert _scores(named, record) == (1.0, 1.0, True, True)


def test_no_error_after_reading_only_the_customer_and_the_list_earns_nothing(named) -> None:
    listed = _listed(named)
    calls = _look(named, "")[:2]
    record = _play(named, calls, f"Checked {', '.join(listed)}: all billed right.")
    # a real chain (every id is in the listing), a right label, no credit: G11 pays nothing
    assert _scores(named, record) == (0.0, 0.0, False, False)


def test_no_error_after_reading_an_invoice_the_complaint_does_not_dispute_earns_nothing(
    named: Scenario,
) -> None:
    other = next(i for i in _listed(named) if i not in reveal_truth(named).disputed_invoices)
    record = _play(named, _look(named, other), f"Checked {other}: it is billed right.")
    assert _scores(named, record) == (0.0, 0.0, False, False)


def test_recompute_invoice_on_the_disputed_invoice_counts_as_reading_it(named) -> None:
    (disputed,) = reveal_truth(named).disputed_invoices
    calls = _look(named, disputed, "recompute_invoice")
    record = _play(named, calls, f"Recomputed {disputed}: difference 0.00.")
    assert _scores(named, record) == (1.0, 1.0, True, True)


def test_an_error_for_the_disputed_invoice_is_not_reading_it(named: Scenario) -> None:
    (disputed,) = reveal_truth(named).disputed_invoices
    calls = _look(named, disputed.lower())  # ids match exactly: the tool refuses it
    record = _play(named, calls, "Checked the account: all billed right.")
    assert _scores(named, record)[2:] == (False, False)


def test_a_blind_no_error_guess_with_no_call_earns_nothing(named: Scenario) -> None:
    record = _play(named, [], "Nothing is wrong.")
    assert _scores(named, record) == (0.0, 0.0, False, False)


def test_a_fault_verdict_needs_no_disputed_invoice_read() -> None:
    scenario = _find("wrong_tax_rate", lambda s: True)
    env = LedgerEnv(scenario)
    env.call("submit_findings", json.dumps(reveal_truth(scenario).reference[-1].arguments))
    reward = compute_reward(reveal_truth(scenario), record_episode(env))
    env.close()
    assert reward.investigated and reward.terms["root_cause"] == 0.35


# which invoices a complaint disputes (G11.1) -----------------------------------------------------


def test_each_disputed_invoice_is_named_or_quoted_by_the_complaint_or_it_quotes_none() -> None:
    for seed in split_seeds("eval"):
        scenario = generate("eval", seed)
        disputed, listing = reveal_truth(scenario).disputed_invoices, _listing(scenario)
        assert disputed and set(disputed) <= set(listing)
        if set(disputed) == set(listing):
            continue  # quotes nothing that singles an invoice out: every invoice counts
        months = {m[0] for m in _MONTH.finditer(scenario.complaint)}
        for invoice in disputed:
            shown = listing[invoice]
            month = datetime.strptime(shown["period_start"][:7], "%Y-%m").strftime("%B %Y")
            quoted = (invoice, shown["total"])
            assert any(q in scenario.complaint for q in quoted) or month in months, seed


def test_a_vague_complaint_that_quotes_a_month_disputes_the_invoices_of_that_month() -> None:
    # the rule does not depend on the frozen sets; world v4's eval has no such case, train does
    scenario = _find("no_error", lambda s: len(reveal_truth(s).disputed_invoices) > 1
                     and _MONTH.search(s.complaint) is not None, "train")  # fmt: skip
    month = _MONTH.search(scenario.complaint)
    assert month is not None
    wanted = datetime.strptime(month[0], "%B %Y").strftime("%Y-%m")
    listing = _listing(scenario).values()
    in_month = {i["invoice_id"] for i in listing if i["period_start"][:7] == wanted}
    assert set(reveal_truth(scenario).disputed_invoices) == in_month


def test_every_eval_reference_of_a_no_error_case_reads_a_disputed_invoice() -> None:
    for seed in split_seeds("eval"):
        truth = reveal_truth(generate("eval", seed))
        if truth.label == "no_error":
            read = {c.arguments["invoice_id"] for c in truth.reference if c.name == "get_invoice"}
            assert read & set(truth.disputed_invoices), seed


# the tool cost, both variants (design §5) -------------------------------------------------------


def test_the_binary_reward_is_one_minus_lambda_per_call_for_a_grounded_success(named) -> None:
    (disputed,) = reveal_truth(named).disputed_invoices
    record = _play(named, _look(named, disputed), f"Checked {disputed}: it is billed right.")
    config = RewardConfig(variant="binary", tool_call_cost=0.01)
    reward = compute_reward(reveal_truth(named), record, config)
    # 3 reads + the submission: 1 - 0.01 x 4
    assert record.tool_calls == 4 and reward.total == 0.96
    assert reward.tool_calls == 4 and reward.config["tool_call_cost"] == 0.01
    assert reward.terms["tool_cost"] == -0.04 and reward.grounded


def test_the_binary_reward_is_minus_lambda_per_call_otherwise(named: Scenario) -> None:
    record = _play(named, _look(named, "")[:2], "Nothing is wrong.")
    config = RewardConfig(variant="binary", tool_call_cost=0.02)
    reward = compute_reward(reveal_truth(named), record, config)
    assert reward.total == -0.06 and reward.tool_calls == 3 and not reward.grounded


def test_the_grader_has_no_tool_cost(named: Scenario) -> None:
    (disputed,) = reveal_truth(named).disputed_invoices
    record = _play(named, _look(named, disputed), f"Checked {disputed}: it is billed right.")
    grade = grade_episode(reveal_truth(named), record, named.database)
    assert grade.grounded_success and grade.tool_calls == 4
    assert not hasattr(grade, "tool_cost")
