"""Which of a step's gathered groups train: the first `groups_per_step` whose OUTCOME has spread.

Why the outcome, not the reward: ART 0.5.18 takes one AdamW step per trajectory, each clipped
at grad-norm 0.1 (runs/README.md, "What ART optimises"), so a group's share of the update does
not shrink with its advantages. With a tool cost λ > 0, a group whose episodes all fail (or all
succeed) still has reward spread, λ x (calls), and would get full-size steps towards "call
less" (the reward lab measured the tied groups' share of the parameter movement rising from
~0.46 under one step per batch to 0.63-0.87 per row). So a group trains only when its outcome
— the reward without the tool term — differs between episodes; λ then acts only inside
outcome-mixed groups. With λ = 0 the outcome is the reward and this is ART's own equal-reward
drop, made before the backend sees the group.

Dynamic sampling (DAPO, Yu et al. 2025): a step gathers `[grpo] oversample` x groups_per_step
groups and keeps the first groups_per_step informative ones in data order; the rest are
dropped and counted. With `[data] twins` a unit is a scenario and its twin, kept or dropped
together (either one informative makes the unit count), so the pair stays in one update.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import art

TOOL_TERM = "reward/tool_cost"  # the reward's per-call cost term (rewards.reward), <= 0
SPREAD_TOLERANCE = 1e-9  # outcomes closer than this are equal


def outcome(trajectory: art.Trajectory) -> float:
    """The reward without its tool-cost term: what the episode achieved, not what it spent."""
    return float(trajectory.reward) - float(trajectory.metrics.get(TOOL_TERM, 0.0))


def has_outcome_spread(trajectories: Iterable[art.Trajectory]) -> bool:
    values = [outcome(t) for t in trajectories]
    return bool(values) and max(values) - min(values) > SPREAD_TOLERANCE


@dataclass(frozen=True)
class Selection:
    """A step's groups after selection, with the counts the step logs."""

    kept: list[art.TrajectoryGroup]
    gathered: int  # groups rolled out
    informative: int  # units with outcome spread (kept or not)
    tied: int  # groups dropped because their outcomes tie
    surplus: int  # groups of informative units past groups_per_step, dropped
    wanted: int  # groups_per_step (units)

    @property
    def short(self) -> int:
        """Units the step wanted but did not find: oversample more, or the base rate is low."""
        return max(self.wanted - min(self.informative, self.wanted), 0)

    def as_metrics(self, prefix: str = "data/groups_") -> dict[str, float]:
        counts = {
            "gathered": self.gathered,
            "informative": self.informative,
            "kept": len(self.kept),
            "dropped_tied": self.tied,
            "dropped_surplus": self.surplus,
            "short": self.short,
        }
        return {prefix + name: float(value) for name, value in counts.items()}


def select_informative(
    groups: Sequence[art.TrajectoryGroup], units: Sequence[int], wanted: int
) -> Selection:
    """`units`: how many consecutive groups form each unit (1, or 2 with a twin), in order."""
    if sum(units) != len(groups):
        raise ValueError(f"units cover {sum(units)} groups, {len(groups)} were gathered")
    kept: list[art.TrajectoryGroup] = []
    informative = tied = surplus = taken = 0
    start = 0
    for size in units:
        unit = list(groups[start : start + size])
        start += size
        spread = [has_outcome_spread(group.trajectories) for group in unit]
        if not any(spread):
            tied += size
            continue
        informative += 1
        if taken == wanted:
            surplus += size
            continue
        taken += 1
        kept += [group for group, ok in zip(unit, spread, strict=True) if ok]
        tied += spread.count(False)
    return Selection(kept, len(groups), informative, tied, surplus, wanted)
