"""experiments.reward_lab.pairing: a twin in the step makes following the complaint cost more."""

from __future__ import annotations

from env.generation.generator import generate
from env.generation.twins import twin
from experiments.reward_lab.pairing import Rewards, complaint_trusting, measure
from rewards.reward import RewardConfig
from tests.env.test_twins import SEEDS


def test_pairing_lowers_the_advantage_of_a_policy_paid_only_where_the_fault_is() -> None:
    # follows the complaint: right on the original, a false reversal on its twin
    pairs = [(Rewards(complaint=1.0, evidence=1.0), Rewards(complaint=-1.0, evidence=1.0))]
    unpaired, paired = measure(pairs)
    assert unpaired.dr_grpo_advantage == 0.0  # no difference to learn from the original alone
    assert paired.dr_grpo_advantage < 0.0 and paired.complaint_reward < unpaired.complaint_reward


def test_trusting_the_complaint_on_a_twin_credits_what_is_not_owed() -> None:
    config = RewardConfig(variant="shaped")
    for seed in SEEDS:
        if generate("eval", seed)._truth.label == "no_error":
            continue
        assert complaint_trusting(twin("eval", seed), config) < 0.0
        return
