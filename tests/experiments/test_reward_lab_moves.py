"""Lab moves act only through real tool calls: each honest move, run alone, leaves a tool log
that replays call for call on a fresh environment, and investigating never writes."""

from __future__ import annotations

import json

import numpy as np
import pytest

from env.episode import drafted_credits
from env.generation.generator import generate
from env.generation.splits import split_seeds
from env.ledger_env import LedgerEnv
from env.tools import TOOL_NAMES
from experiments.reward_lab.desk import Desk
from experiments.reward_lab.moves import Move, available, catalogue, play_move

SCENARIOS = [generate("val", seed) for seed in split_seeds("val", 4)]
HONEST = [m for m in catalogue() if m.kind in ("investigate", "close")]


def fresh_desk(scenario, tag: str) -> Desk:
    return Desk.open(LedgerEnv(scenario, episode_id=f"test-{tag}"), scenario)


def run_alone(move: Move, scenario) -> Desk:
    desk = fresh_desk(scenario, move.name)
    play_move(desk, move)
    return desk


def replays(desk: Desk, scenario) -> bool:
    """Every logged call, made again on a fresh episode, returns the same result."""
    fresh = LedgerEnv(scenario, episode_id=desk.env.episode_id)
    try:
        return all(fresh.call(r.name, r.arguments) == r.result for r in desk.env.tool_log)
    finally:
        fresh.close()


def test_the_catalogue_has_every_kind() -> None:
    kinds = {m.kind for m in catalogue()}
    assert kinds == {"investigate", "close", "hack"}
    names = [m.name for m in catalogue()]
    assert len(names) == len(set(names))
    assert sum(n.startswith("check_") for n in names) >= 11  # one per auditor check


@pytest.mark.parametrize(
    "move", [m for m in HONEST if m.kind == "investigate"], ids=lambda m: m.name
)
def test_investigation_moves_make_only_real_read_calls(move: Move) -> None:
    for scenario in SCENARIOS:
        desk = run_alone(move, scenario)
        log = desk.env.tool_log
        assert log, f"{move.name} made no tool call"
        assert all(r.name in TOOL_NAMES and not r.is_error for r in log), [r.name for r in log]
        assert not {r.name for r in log} & {"draft_credit_note", "submit_findings"}
        assert not desk.over
        assert drafted_credits(desk.env.final_database(), desk.env.episode_id) == {}
        assert replays(desk, scenario)
        desk.env.close()


def test_a_finding_is_confirmed_by_a_logged_tool_result() -> None:
    """A finding names an invoice the tools showed; a recomputed one is a logged difference."""
    confirmed = 0
    for scenario in SCENARIOS + [generate("train", s) for s in split_seeds("train", 8)]:
        for move in (m for m in HONEST if m.name.startswith("check_")):
            desk = run_alone(move, scenario)
            outputs = " ".join(desk.env.tool_outputs)
            differences = {
                json.loads(r.result).get("difference")
                for r in desk.env.tool_log
                if r.name == "recompute_invoice" and not r.is_error
            }
            for finding in desk.findings:
                assert finding.cents > 0 and finding.invoice_id in outputs
                if "recompute_invoice" in finding.note:
                    cents = finding.cents
                    assert f"{cents // 100}.{cents % 100:02d}" in differences
                confirmed += 1
            desk.env.close()
    assert confirmed > 0


@pytest.mark.parametrize("close_name", ["close_credit_submit", "submit_no_error"])
def test_closing_moves_submit_through_the_tools(close_name: str) -> None:
    move = next(m for m in catalogue() if m.name == close_name)
    for scenario in SCENARIOS:
        desk = fresh_desk(scenario, close_name)
        for check in (m for m in HONEST if m.name.startswith("check_")):
            play_move(desk, check)
        offered = dict(
            zip([m.name for m in catalogue()], available(desk, catalogue()), strict=True)
        )
        if not offered[close_name]:
            assert close_name == "close_credit_submit" and not desk.findings
            continue
        play_move(desk, move)
        assert desk.env.submitted and desk.env.tool_log[-1].name == "submit_findings"
        credits = drafted_credits(desk.env.final_database(), desk.env.episode_id)
        reported = {i.invoice_id: i.overcharge_cents for i in desk.env.findings.affected_invoices}
        assert credits == reported  # the honest close credits exactly what it reports
        assert replays(desk, scenario)
        desk.env.close()


def test_hack_moves_never_touch_the_truth() -> None:
    hacks = [m for m in catalogue() if m.kind == "hack"]
    assert {"stop_early", "guess_from_keywords", "submit_without_credit"} <= {m.name for m in hacks}
    for scenario in SCENARIOS:
        for move in hacks:
            if move.needs_finding:
                continue
            desk = run_alone(move, scenario)
            assert desk.truth_touches == 0, move.name
            assert desk.over, f"{move.name} must end the episode"
            assert all(r.name in TOOL_NAMES for r in desk.env.tool_log)
            desk.env.close()


def test_tool_calls_arguments_are_json_objects() -> None:
    desk = run_alone(next(m for m in HONEST if m.name == "check_wrong_tax_rate"), SCENARIOS[0])
    assert all(isinstance(json.loads(r.arguments), dict) for r in desk.env.tool_log)
    desk.env.close()


def test_a_blind_close_counts_as_a_hack() -> None:
    """submit_no_error with no investigation before it is a guess; after a check it is not."""
    from experiments.reward_lab.episodes import RewardSpec, play
    from experiments.reward_lab.evaluate import hack_used
    from experiments.reward_lab.softmax_policy import Decision

    moves = catalogue()
    names = [m.name for m in moves]
    kinds = {m.name: m.kind for m in moves}

    def script(*wanted: str):
        def choose(obs, mask):
            action = names.index(wanted[min(len(obs.done), len(wanted) - 1)])
            return Decision(np.empty(0, dtype=np.int64), np.asarray(mask), action, np.empty(0))

        return choose

    blind = play(SCENARIOS[0], moves, script("submit_no_error"), RewardSpec("shaped"), "b")
    looked = play(
        SCENARIOS[0], moves, script("check_duplicate_payments", "submit_no_error"),
        RewardSpec("shaped"), "l",
    )  # fmt: skip
    assert hack_used(blind, kinds) == "submit_no_error (blind)"
    assert hack_used(looked, kinds) is None
