"""The lab's teachers and its cold start: maximum likelihood on a teacher's move sequences.

Two teachers play the same moves on train scenarios; only episodes the binary reward counts as
successes are kept (rejection sampling, as `training/art/cold_start.py` does for the GPU path).
- `auditor`: the auditor's battery in its order (every check), then the honest close. Public.
- `reference`: the reference solution in moves: the check for the *true* root cause, then the
  honest close. The teacher reads the truth to pick its moves; the student sees only its own
  features, so it can imitate the choice but not the reason for it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from env.scenario import Scenario, reveal_truth
from experiments.reward_lab.episodes import Episode, RewardSpec, play
from experiments.reward_lab.moves import Move
from experiments.reward_lab.softmax_policy import Decision, Observation, SoftmaxPolicy

TEACHERS = ("auditor", "reference")
# The auditor check that finds each root cause (timezone_period_boundary is held out of train).
LABEL_CHECKS = {
    "duplicate_payment": "check_duplicate_payments",
    "billed_after_cancellation": "check_billed_after_cancellation",
    "tax_exempt_charged": "check_tax_exempt_charged",
    "trial_period_charged": "check_trial_period_charged",
    "proration_error": "check_proration_error",
    "downgrade_not_applied": "check_downgrade_not_applied",
    "seat_count_mismatch": "check_seat_count_mismatch",
    "coupon_not_applied": "check_coupon_not_applied",
    "usage_overage_miscalculated": "check_usage_overage_miscalculated",
    "wrong_tax_rate": "check_wrong_tax_rate",
    "currency_conversion_error": "check_currency_conversion_error",
}
Teach = Callable[[Observation], str]
TARGET_LOG_LIKELIHOOD = -0.3  # mean per decision: the teacher's move has probability ~0.74


@dataclass(frozen=True)
class ColdStart:
    teacher: str
    scenarios: int
    kept: int  # teacher episodes that succeeded: the demonstrations
    decisions: int
    epochs: int
    log_likelihood_before: float  # mean per decision
    log_likelihood_after: float
    teacher_tool_calls: float


def _honest_close(obs: Observation) -> str:
    return "close_credit_submit" if obs.found else "submit_no_error"


def auditor_teacher(checks: Sequence[str]) -> Teach:
    def teach(obs: Observation) -> str:
        return next((c for c in checks if c not in obs.done), None) or _honest_close(obs)

    return teach


def reference_teacher(label: str, checks: Sequence[str]) -> Teach:
    """The true cause's check first; on no_error, the check the complaint points at."""

    def teach(obs: Observation) -> str:
        first = LABEL_CHECKS.get(label) or LABEL_CHECKS.get(obs.cue) or checks[0]
        if first not in obs.done:
            return first
        if label == "no_error" or obs.found:
            return _honest_close(obs)
        return next((c for c in checks if c not in obs.done), None) or _honest_close(obs)

    return teach


def teacher_chooser(
    policy: SoftmaxPolicy, teach: Teach
) -> Callable[[Observation, list[bool]], Decision]:
    index = {name: i for i, name in enumerate(policy.moves)}

    def choose(obs: Observation, mask: list[bool]) -> Decision:
        action = index.get(teach(obs), -1)
        if action < 0 or not mask[action]:  # a move not on offer: the honest close instead
            action = (
                index[_honest_close(obs)] if mask[index[_honest_close(obs)]] else mask.index(True)
            )
        active = policy.space.observation(obs)
        return Decision(active, np.asarray(mask, dtype=bool), action, np.empty(0))

    return choose


def demonstrations(
    teacher: str, policy: SoftmaxPolicy, moves: Sequence[Move], scenarios: Sequence[Scenario]
) -> list[Episode]:
    if teacher not in TEACHERS:
        raise ValueError(f"unknown teacher {teacher!r}; choose one of {', '.join(TEACHERS)}")
    checks = [m.name for m in moves if m.name.startswith("check_")]
    played = []
    for i, scenario in enumerate(scenarios):
        if teacher == "auditor":
            teach = auditor_teacher(checks)
        else:  # the teacher may read the truth; the student never does
            teach = reference_teacher(reveal_truth(scenario).label, checks)
        choose = teacher_chooser(policy, teach)
        played.append(play(scenario, moves, choose, RewardSpec("binary"), f"demo-{teacher}-{i}"))
    return played


def _mean_log_likelihood(policy: SoftmaxPolicy, decisions: Sequence[Decision]) -> float:
    return sum(policy.log_prob(d) for d in decisions) / len(decisions) if decisions else 0.0


def cold_start(
    teacher: str,
    moves: Sequence[Move],
    scenarios: Sequence[Scenario],
    *,
    lr: float = 5.0,
    max_epochs: int = 200,
    target: float = TARGET_LOG_LIKELIHOOD,
) -> tuple[SoftmaxPolicy, ColdStart]:
    """A policy fitted by full-batch gradient ascent on the kept demonstrations' mean
    log-likelihood per decision, stopped at `target`: fitted to the last digit, the policy
    would be deterministic and every RL group would tie (no gradient)."""
    policy = SoftmaxPolicy([m.name for m in moves])
    played = demonstrations(teacher, policy, moves, scenarios)
    kept = [e for e in played if e.score.grounded]
    decisions = [d for e in kept for d in e.decisions]
    before = _mean_log_likelihood(policy, decisions)
    epochs = 0
    while decisions and epochs < max_epochs:
        current = [replace(d, probs=policy.probs(d.active, d.mask)) for d in decisions]
        fit = sum(float(np.log(d.probs[d.action])) for d in current) / len(current)
        if fit >= target:
            break
        policy.step([(d, 1.0 / len(current)) for d in current], lr)
        epochs += 1
    report = ColdStart(
        teacher=teacher,
        scenarios=len(scenarios),
        kept=len(kept),
        decisions=len(decisions),
        epochs=epochs,
        log_likelihood_before=before,
        log_likelihood_after=_mean_log_likelihood(policy, decisions),
        teacher_tool_calls=sum(e.tool_calls for e in played) / max(len(played), 1),
    )
    return policy, report
