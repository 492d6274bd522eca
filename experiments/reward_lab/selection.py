"""Which sampled groups a GRPO step trains on: DAPO-style dynamic sampling and the outcome filter.

A group's *outcome* is what the task paid for, without the tool cost: grounded success (the
binary reward's 1) by default, or the reward with its `tool_cost` term taken back out. A group
whose outcomes all tie carries no signal about the task; with λ > 0 its samples still differ by
λ x calls, so every estimator gives it a nonzero advantage that only says "fewer calls".

- Dynamic sampling (Yu et al., "DAPO", 2025): gather more groups than a step needs, train on the
  first `keep` whose outcome has spread, drop the rest (a step may get fewer when too few have).
- The outcome-tied filter: drop every group whose outcome ties, so λ acts only inside groups
  whose outcomes differ.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from experiments.reward_lab.episodes import Episode

OutcomeKey = Literal["grounded", "untaxed"]


def outcome(episode: Episode, key: OutcomeKey = "grounded") -> float:
    if key == "grounded":
        return float(episode.score.grounded)
    return round(episode.reward - episode.score.terms.get("tool_cost", 0.0), 6)


def has_spread(group: Sequence[Episode], key: OutcomeKey = "grounded") -> bool:
    return len({outcome(e, key) for e in group}) > 1


@dataclass(frozen=True)
class Selection:
    """What a step kept, as indices into the gathered groups, and what it counted."""

    kept: tuple[int, ...]
    gathered: int
    with_spread: int  # gathered groups whose outcome has spread

    @property
    def dropped(self) -> int:
        return self.gathered - len(self.kept)


def select(
    groups: Sequence[Sequence[Episode]],
    keep: int,
    *,
    dynamic: bool,
    drop_tied: bool,
    key: OutcomeKey = "grounded",
) -> Selection:
    """Dynamic sampling keeps the first `keep` groups with spread (so it drops tied ones too);
    otherwise the first `keep` groups, less the tied ones when `drop_tied`."""
    spread = [has_spread(g, key) for g in groups]
    if dynamic:
        kept = [i for i, s in enumerate(spread) if s][:keep]
    else:
        kept = [i for i in range(min(keep, len(groups))) if spread[i] or not drop_tied]
    return Selection(tuple(kept), len(groups), sum(spread))
