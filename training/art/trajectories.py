"""The rollout's trajectories as ART trains on them: `to_art_trajectory` and ART's `rollout`.

ART trains only on openai `Choice` objects that carry logprobs, so every `Choice` is handed
over as the very object the policy returned (never `choice.message`, never a JSON round trip);
system, user and tool messages stay plain dicts (context). `rollout` is what
`art.gather_trajectory_groups` awaits during GRPO.
"""

from __future__ import annotations

from typing import cast

import art
from art.trajectories import MetadataValue
from art.types import MessagesAndChoices, Tools

from agent.policy import Policy
from agent.rollout import RolloutConfig, run_episode
from agent.trajectory import Trajectory
from env.scenario import Scenario


def to_art_trajectory(trajectory: Trajectory) -> art.Trajectory:
    """A new `art.Trajectory` holding the same Choice objects; metrics and metadata copied."""
    return art.Trajectory(
        messages_and_choices=cast(MessagesAndChoices, list(trajectory.messages_and_choices)),
        tools=cast(Tools, trajectory.tools),
        reward=trajectory.reward,
        metrics=dict(trajectory.metrics),
        metadata=cast(dict[str, MetadataValue], dict(trajectory.metadata)),
    )


async def rollout(
    policy: Policy, scenario: Scenario, config: RolloutConfig | None = None
) -> art.Trajectory:
    """For `art.gather_trajectory_groups`: one episode of the shared rollout, as ART's type."""
    return to_art_trajectory((await run_episode(policy, scenario, config)).trajectory)
