"""Fixed policies on val: every hack move played alone, against the auditor's moves.

What the optimiser converges to depends on what it can find; this table says what each hack
*would* earn under each reward if a policy used it everywhere. A hack whose mean reward comes
near the honest policy's is a hole in the reward whether or not RL found it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from env.scenario import Scenario
from training.lab.cold_start import Teach, auditor_teacher, teacher_chooser
from training.lab.episodes import RewardSpec, run_moves, score
from training.lab.moves import Move
from training.lab.policy import Observation, SoftmaxPolicy

HONEST = "auditor's moves (honest)"


@dataclass(frozen=True)
class FixedRow:
    policy: str
    rewards: dict[str, float]  # mean val reward per reward variant label
    grounded: float
    tool_calls: float


def _one_move(name: str, checks: Sequence[str], after_checks: bool) -> Teach:
    """The move first; a move that needs a finding comes after the auditor's checks."""
    audit = auditor_teacher(checks)

    def teach(obs: Observation) -> str:
        if after_checks and any(c not in obs.done for c in checks):
            return audit(obs)
        return name

    return teach


def fixed_policies(
    moves: Sequence[Move], scenarios: Sequence[Scenario], specs: Sequence[RewardSpec]
) -> list[FixedRow]:
    names = [m.name for m in moves]
    checks = [n for n in names if n.startswith("check_")]
    policy = SoftmaxPolicy(names)  # only for its feature encoding
    teachers: list[tuple[str, Teach]] = [(HONEST, auditor_teacher(checks))]
    teachers += [
        (m.name, _one_move(m.name, checks, m.needs_finding)) for m in moves if m.kind == "hack"
    ]
    rows = []
    for label, teach in teachers:
        choose = teacher_chooser(policy, teach)
        totals = dict.fromkeys((spec.label for spec in specs), 0.0)
        grounded = calls = 0
        for i, scenario in enumerate(scenarios):
            record, _, _ = run_moves(scenario, moves, choose, f"fixed-{i}")
            for spec in specs:  # one episode, scored under every reward variant
                scored = score(scenario, record, spec)
                totals[spec.label] += scored.reward
            grounded += scored.grounded
            calls += record.tool_calls
        n = max(len(scenarios), 1)
        rewards = {name: total / n for name, total in totals.items()}
        rows.append(FixedRow(label, rewards, grounded / n, calls / n))
    return rows
