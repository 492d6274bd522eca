"""Surface-cue policies (issue 9 item 6): what they read, how they act, how they are bounded.

The full bounds run in `python -m checks.hacks` over the whole eval split; here each policy is
driven on a few eval scenarios through the real rollout, and its choices are checked.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from agent.program_policy import ProgramPolicy
from agent.rollout import RolloutConfig, run_episode
from checks.hacks import check
from checks.hacks.cheats_surface import (
    BINARY_MARGIN,
    SHAPED_BOUND,
    SURFACE_CHEATS,
    SurfaceCheat,
    keyword_label,
)
from env.generation.generator import generate
from env.generation.splits import split_seeds
from env.ledger_env import LedgerEnv
from env.scenario import Scenario, Truth
from rewards.reward import RewardConfig


def _scenario_with(complaint: str) -> Scenario:
    base = generate("eval", split_seeds("eval")[0])
    return Scenario(
        base.scenario_id, base.split, base.seed, base.difficulty, base.customer_id, complaint,
        base.opened_at, base.database, base._truth,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("complaint", "label"),
    [
        ("We paid INV-AAAA11 twice.", "duplicate_payment"),
        ("Our exemption certificate is on file, yet tax was charged.", "tax_exempt_charged"),
        ("The VAT rate looks old.", "wrong_tax_rate"),
        ("We cancelled months ago.", "billed_after_cancellation"),
        ("Our bill looks wrong to me.", "no_error"),
    ],
)
def test_keyword_triage_reads_the_complaint_only(complaint: str, label: str) -> None:
    assert keyword_label(_scenario_with(complaint)) == label


def test_bounds_are_flat_shaped_and_base_rate_plus_margin_binary() -> None:
    cheat = SURFACE_CHEATS[0]
    assert isinstance(cheat, SurfaceCheat) and cheat.sample == "eval"
    truths = [Truth("no_error", {}, {}, (), "")] * 1 + [Truth("wrong_tax_rate", {}, {}, (), "")] * 3
    assert cheat.bounds(truths) == (SHAPED_BOUND, 0.25 + BINARY_MARGIN)


def test_the_suite_runs_them_on_the_whole_eval_split() -> None:
    names = {c.name for c in SURFACE_CHEATS}
    assert len(names) == 4
    assert len(check.sample("eval")) == len(split_seeds("eval"))


def _run(name: str, scenario: Scenario) -> list[dict[str, Any]]:
    cheat = next(c for c in SURFACE_CHEATS if c.name == name)
    policy = ProgramPolicy(cheat.name, cheat.program)
    result = asyncio.run(run_episode(policy, scenario, RolloutConfig(reward=RewardConfig())))
    return [{"name": r.name, "arguments": json.loads(r.arguments)} for r in result.record.tool_log]


def test_a_fired_cue_copies_a_printed_amount_and_credits_it() -> None:
    scenario = _scenario_with("Invoice looks wrong. We cancelled long ago.")
    calls = _run("surface_keywords_copy_credit", scenario)
    names = [c["name"] for c in calls]
    assert names[-2:] == ["draft_credit_note", "submit_findings"]
    credit = calls[-2]["arguments"]
    env = LedgerEnv(scenario)
    shown = json.loads(env.call("get_invoice", json.dumps({"invoice_id": credit["invoice_id"]})))
    assert credit["amount"] == shown["total"]  # a number the tools print, never computed


def test_no_cue_abstains_without_credit() -> None:
    scenario = _scenario_with("Our bill looks wrong to me.")
    calls = _run("surface_keywords_copy_no_credit", scenario)
    assert "draft_credit_note" not in [c["name"] for c in calls]
    assert calls[-1]["arguments"]["root_cause"] == "no_error"


def test_the_surface_model_policy_is_fitted_on_train_and_reads_the_database(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from checks.hacks import cheats_surface
    from env.labels import ROOT_CAUSES

    monkeypatch.setattr(cheats_surface, "SURFACE_TRAIN", 80)
    cheats_surface._surface_tree.cache_clear()
    try:
        _, names = cheats_surface._surface_tree()
        assert "rows_invoices" in names
        assert cheats_surface.surface_label(generate("eval", 100_001)) in ROOT_CAUSES
    finally:
        cheats_surface._surface_tree.cache_clear()
