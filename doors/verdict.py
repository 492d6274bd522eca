"""The verdict on a finished door episode: LedgerGym's reward and grader, called as they are.

A door ends where `agent.rollout.run_episode` ends, with an `EpisodeRecord`; this module scores it
with `rewards.reward.compute_reward` and judges it with `eval.grader.grade_episode`, so no door
can score an episode differently from the rollout. The grade and the metrics sit beside the
reward and are never added to it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from env.episode import EpisodeRecord
from env.scenario import Scenario, reveal_truth
from eval.grader import EpisodeGrade, grade_episode
from rewards.reward import RewardBreakdown, RewardConfig, Variant, compute_reward

VARIANTS: tuple[Variant, ...] = ("shaped", "binary")


@dataclass(frozen=True)
class EpisodeVerdict:
    reward: RewardBreakdown  # the training signal, in the variant asked for
    grade: EpisodeGrade  # the evaluation grader's separate judgement


def judge_episode(
    scenario: Scenario, record: EpisodeRecord, variant: Variant = "shaped"
) -> EpisodeVerdict:
    """Reward (default weights, `variant`) and grade of one finished episode."""
    truth = reveal_truth(scenario)
    reward = compute_reward(truth, record, RewardConfig(variant=variant))
    return EpisodeVerdict(reward, grade_episode(truth, record, scenario.database))


def judge_variants(
    scenario: Scenario, record: EpisodeRecord
) -> tuple[EpisodeGrade, dict[Variant, RewardBreakdown]]:
    """The grade once and the reward in both variants (default weights), for doors that
    report both."""
    truth = reveal_truth(scenario)
    rewards = {v: compute_reward(truth, record, RewardConfig(variant=v)) for v in VARIANTS}
    return grade_episode(truth, record, scenario.database), rewards


def verdict_metrics(verdict: EpisodeVerdict) -> dict[str, float]:
    """Flat numbers for a metrics table: every reward term and flag, and the grader's verdict."""
    grade = verdict.grade
    metrics = verdict.reward.as_metrics()
    metrics.update(
        {
            "success": float(grade.success),
            "grounded_success": float(grade.grounded_success),
            "grade_false_reversal": float(grade.false_reversal),
            "grade_hallucinated_numbers": float(grade.hallucinated_numbers),
            "tool_calls": float(grade.tool_calls),
        }
    )
    return metrics


def verdict_summary(verdict: EpisodeVerdict) -> dict[str, Any]:
    """What the MCP door returns once findings are in: the grade and every reward term.

    Both variants share one breakdown (design §5), so the binary total is the grounded success.
    """
    grade, reward = verdict.grade, verdict.reward
    return {
        "success": grade.success,
        "grounded_success": grade.grounded_success,
        "false_reversal": grade.false_reversal,
        "hallucinated_numbers": grade.hallucinated_numbers,
        "untraceable": list(grade.untraceable),
        "tool_calls": grade.tool_calls,
        "reward": {
            "variant": reward.variant,
            "total": reward.total,
            "binary": float(reward.grounded),
            "terms": dict(reward.terms),
        },
    }
