"""training.art.trajectories: the shared rollout's trajectory becomes ART's with every `Choice`
object handed over as returned (ART trains only on those), the dict messages unchanged."""

from __future__ import annotations

import asyncio

import art
from openai.types.chat.chat_completion import Choice

from agent.program_policy import reference_policy
from agent.rollout import run_episode
from env.generation.generator import generate
from env.scenario import reveal_truth
from training.art.trajectories import rollout, to_art_trajectory


def test_the_conversion_keeps_each_choice_object_and_every_message_in_order():
    scenario = generate("eval", 100000)
    ours = asyncio.run(run_episode(reference_policy(), scenario)).trajectory
    theirs = to_art_trajectory(ours)
    assert isinstance(theirs, art.Trajectory)
    assert len(theirs.messages_and_choices) == len(ours.messages_and_choices)
    for mine, converted in zip(ours.messages_and_choices, theirs.messages_and_choices, strict=True):
        if isinstance(mine, Choice):
            assert converted is mine
        else:
            assert converted == mine and isinstance(converted, dict)
    assert theirs.tools == ours.tools
    assert (theirs.reward, theirs.metrics, theirs.metadata) == (
        ours.reward,
        ours.metrics,
        ours.metadata,
    )


def test_the_conversion_copies_metrics_so_arts_gather_cannot_change_the_rollouts():
    ours = asyncio.run(run_episode(reference_policy(), generate("eval", 100000))).trajectory
    theirs = to_art_trajectory(ours)
    theirs.metrics["completion_tokens"] = 1.0  # as ART's gather does
    assert "completion_tokens" not in ours.metrics


def test_arts_rollout_plays_one_episode_of_the_shared_rollout():
    scenario = generate("eval", 100000)
    trajectory = asyncio.run(rollout(reference_policy(), scenario))
    assert isinstance(trajectory, art.Trajectory)
    assert trajectory.reward == 1.0
    assert trajectory.metadata["label"] == reveal_truth(scenario).label
    choices = [m for m in trajectory.messages_and_choices if isinstance(m, Choice)]
    assert len(choices) == len(reveal_truth(scenario).reference)
