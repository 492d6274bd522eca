"""The lab policy cannot read the truth: its features come from the public observation only,
and two scenarios that differ only in their truth give identical decisions."""

from __future__ import annotations

import inspect
import re
from dataclasses import fields, replace
from pathlib import Path

import numpy as np
import pytest

from env.generation.generator import generate
from env.generation.splits import split_seeds
from env.scenario import reveal_truth
from experiments.reward_lab import softmax_policy as policy_module
from experiments.reward_lab.desk import TruthSealed, sealed
from experiments.reward_lab.episodes import RewardSpec, play, policy_chooser
from experiments.reward_lab.moves import catalogue
from experiments.reward_lab.softmax_policy import Decision, Observation, SoftmaxPolicy, features

LAB = Path(policy_module.__file__).resolve().parent


def twin_with_other_truth(split: str = "val"):
    """A scenario and a copy whose truth is another scenario's (label, amounts, reference)."""
    seeds = split_seeds(split, 40)
    first = generate(split, seeds[0])
    other = next(
        generate(split, s)
        for s in seeds[1:]
        if reveal_truth(generate(split, s)).label != reveal_truth(first).label
    )
    return first, replace(first, _truth=reveal_truth(other))


def test_features_take_only_the_observation() -> None:
    params = inspect.signature(features).parameters
    assert list(params) == ["obs"]
    assert {f.name for f in fields(Observation)} == {
        "cue", "names_invoice", "claims_amount", "step", "done", "found", "found_matches_cue",
    }  # fmt: skip


def test_identical_decisions_for_scenarios_that_differ_only_in_truth() -> None:
    moves = catalogue()
    policy = SoftmaxPolicy([m.name for m in moves])
    policy.theta = np.random.default_rng(3).normal(0, 2, policy.theta.shape)
    spec = RewardSpec("shaped")
    for split in ("val", "train"):
        a, b = twin_with_other_truth(split)
        for k in range(6):
            ea = play(a, moves, policy_chooser(policy, np.random.default_rng(k), False), spec, "e")
            eb = play(b, moves, policy_chooser(policy, np.random.default_rng(k), False), spec, "e")
            assert ea.moves == eb.moves
            assert [d.active.tolist() for d in ea.decisions] == [
                d.active.tolist() for d in eb.decisions
            ]
            assert [d.probs.tolist() for d in ea.decisions] == [
                d.probs.tolist() for d in eb.decisions
            ]


def test_the_reward_does_see_the_truth() -> None:
    """The same moves on the twin score differently: the truth reaches only the reward."""
    moves = catalogue()
    names = [m.name for m in moves]
    checks = [n for n in names if n.startswith("check_")]

    def every_check_then_close(obs: Observation, mask: list[bool]) -> Decision:
        wanted = [n for n in checks if n not in obs.done]
        wanted += ["close_credit_submit", "submit_no_error"]
        action = next(names.index(n) for n in wanted if mask[names.index(n)])
        return Decision(np.empty(0, dtype=np.int64), np.asarray(mask), action, np.empty(0))

    a, b = twin_with_other_truth()
    ea = play(a, moves, every_check_then_close, RewardSpec("shaped"), "e")
    eb = play(b, moves, every_check_then_close, RewardSpec("shaped"), "e")
    assert ea.moves == eb.moves and ea.submitted
    assert ea.reward != eb.reward


def test_a_sealed_scenario_refuses_its_truth() -> None:
    card = sealed(generate("val", split_seeds("val", 1)[0]))
    assert card.database == b"" and card.difficulty == ""
    with pytest.raises(TruthSealed):
        _ = reveal_truth(card).label


@pytest.mark.parametrize("module", ["softmax_policy.py", "moves.py", "desk.py", "reinforce.py"])
def test_policy_side_code_never_names_the_truth(module: str) -> None:
    source = (LAB / module).read_text(encoding="utf-8")
    assert not re.search(r"reveal_truth|\._truth\b|\.difficulty\b", source)
