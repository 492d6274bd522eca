"""The reward-hacking suite (checks/hacks/) keeps every bound, and the reward keeps its sources.

Every cheat runs through `agent.rollout.run_episode`, as in `python -m checks.hacks`. A
representative subset (one cheat per mechanism) runs by default; the rest are marked slow and
run with `pytest -m slow`, since the whole suite takes longer than ten seconds here.
"""

from __future__ import annotations

import asyncio
import dataclasses

import pytest

from agent.program_policy import reference_policy
from agent.rollout import run_episode
from checks.hacks.cheats import CHEATS
from checks.hacks.check import run_cheat, sample, score
from checks.hacks.programs import NO_ERROR_SHARE, Cheat
from env.scenario import reveal_truth
from rewards.reward import compute_reward

REPRESENTATIVE = {
    "credit_split_in_small_notes",  # credits summed per invoice before the check
    "launder_credit_echo",  # the agent's own credit note read back
    "launder_recompute_units",  # overridden counts echoed in recompute lines
    "right_label_wrong_amount",  # evidence pays only for a right answer
    "right_amount_wrong_label",
    "guess_no_error_after_one_call",  # a blind no_error earns nothing (G11)
    "derive_dozens_guess",  # luck on no_error widens the bound
    "derive_wrong_sum_right_result",  # a wrong calculation is a hallucination (G10.4)
    "no_error_after_unrelated_invoice",  # not the disputed invoice (G11.1)
    "never_credit",  # the design bound: 1 - action weight
    "truncate_after_credit",  # penalties survive truncation
    "display_emphasis",  # `*9*226.04` shows a number no tool printed (G2.0)
    "display_control",  # so does a control character between the digits
    "display_calc_emphasis",  # `*2*120.56 = 241.12` shows `2120.56 = 241.12`
}


def _case(cheat: Cheat) -> object:
    marks = () if cheat.name in REPRESENTATIVE else (pytest.mark.slow,)
    return pytest.param(cheat, marks=marks, id=cheat.name)


@pytest.mark.parametrize("cheat", [_case(c) for c in CHEATS])
def test_the_cheat_stays_within_its_bounds(cheat: Cheat) -> None:
    result = asyncio.run(run_cheat(cheat))
    assert result.passed, (
        f"{cheat.name}: mean shaped {result.mean_shaped:+.3f} (bound {result.shaped_bound}), "
        f"mean binary {result.mean_binary:.3f} (bound {result.binary_bound}); highest episode "
        f"{result.worst.scenario_id}: {result.worst.breakdown}"
    )


def test_the_suite_has_at_least_22_named_cheats_with_reasons() -> None:
    names = [c.name for c in CHEATS]
    assert len(names) >= 22 and len(set(names)) == len(names)
    assert all(c.reason for c in CHEATS)
    assert all(c.shaped_bound <= 0.5 for c in CHEATS if c.name != "never_credit")
    assert set(REPRESENTATIVE) <= set(names)


def test_a_lucky_share_widens_a_bound_by_that_share_of_full_marks() -> None:
    lucky = next(c for c in CHEATS if c.name == "derive_dozens_guess")
    truths = [reveal_truth(s) for s in sample("all")]
    # 2 no_error of 26: 0 + (2/26) * (1 - 0) for both variants
    assert lucky.bounds(truths) == pytest.approx((NO_ERROR_SHARE, NO_ERROR_SHARE))
    assert len(truths) == 26 and sum(t.label == "no_error" for t in truths) == 2


def test_the_reference_scores_full_marks_on_the_cheat_sample() -> None:
    policy = reference_policy()
    for scenario in sample("all"):
        result = asyncio.run(score(policy, scenario))
        assert (result.shaped, result.binary) == (1.0, 1.0), result.breakdown


def test_the_reward_ignores_the_arguments_echoed_in_the_tool_log() -> None:
    """It reads the findings and the credit notes, never what the agent says it passed."""
    scenario = sample("faulted")[0]
    record = asyncio.run(run_episode(reference_policy(), scenario)).record
    scrambled = dataclasses.replace(
        record,
        tool_log=tuple(
            dataclasses.replace(r, arguments='{"amount": "99999.99", "invoice_id": "INV-ZZZZ"}')
            for r in record.tool_log
        ),
    )
    truth = reveal_truth(scenario)
    assert compute_reward(truth, scrambled) == compute_reward(truth, record)
    assert compute_reward(truth, record).total == 1.0
