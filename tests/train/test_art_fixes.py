"""training.art.fixes: copies only, faithful argument repairs, dropped turns and groups counted."""

from __future__ import annotations

import copy
import json

import art
import pytest
from art.preprocessing.tokenize import tokenize_trajectory_groups
from openai.types.chat.chat_completion import Choice

from tests.train.toy_rollout import Turn, run_rollout, three_turn_script
from tests.train.toy_tokenizer import build_toy_tokenizer
from training.art.fixes import (
    drop_intermediate_tool_calls,
    prepare_groups_for_training,
    sanitise_tool_call_arguments,
)

NO_ARGUMENT_CALL = (("list_open_disputes", {}),)


@pytest.fixture(scope="module")
def tokenizer():
    return build_toy_tokenizer()


def context_turn(raw_arguments: str) -> Turn:
    """A demonstrated (not sampled) call, as a warm-start or API-model turn sits in a history."""
    return Turn(
        calls=NO_ARGUMENT_CALL, results=('{"open": 1}',), sampled=False, raw_arguments=raw_arguments
    )


def trajectory_with(tokenizer, first_turn: Turn, reward: float = 1.0) -> art.Trajectory:
    return run_rollout(tokenizer, [first_turn, *three_turn_script()]).trajectory(reward)


def art_tokens(tokenizer, trajectories: list[art.Trajectory]) -> list[int]:
    groups = [art.TrajectoryGroup(trajectories)]
    results = tokenize_trajectory_groups(
        tokenizer,
        groups,
        allow_training_without_logprobs=False,
        scale_rewards=True,
        shuffle_group_trajectories=False,
        chat_template_tool_schema_format="vllm_openai",
    )
    return next(iter(results)).token_ids


def with_arguments(trajectory: art.Trajectory, index: int, raw: str) -> art.Trajectory:
    """A copy whose item `index` calls with `raw` arguments, which vLLM could not have rendered."""
    items = list(trajectory.messages_and_choices)
    item = items[index]
    if isinstance(item, Choice):
        call = item.message.tool_calls[0]  # type: ignore[index]
        function = call.function.model_copy(update={"arguments": raw})  # type: ignore[union-attr]
        message = item.message.model_copy(
            update={"tool_calls": [call.model_copy(update={"function": function})]}
        )
        items[index] = item.model_copy(update={"message": message})
    else:
        changed = copy.deepcopy(dict(item))
        changed["tool_calls"][0]["function"]["arguments"] = raw  # type: ignore[typeddict-item]
        items[index] = changed  # type: ignore[call-overload]
    return trajectory.model_copy(update={"messages_and_choices": items})


def test_dropping_intermediate_tool_calls_leaves_the_callers_trajectory_untouched(tokenizer):
    original = run_rollout(tokenizer, three_turn_script()).trajectory(1.0)
    before = original.model_dump_json()
    fixed = drop_intermediate_tool_calls(original)
    assert original.model_dump_json() == before
    calls = [
        item.message.tool_calls for item in fixed.messages_and_choices if isinstance(item, Choice)
    ]
    assert calls == [None, None, None]


def test_the_final_trainable_turn_keeps_its_tool_calls(tokenizer):
    script = three_turn_script()[:2]  # ends on a tool call, as a turn-limited episode does
    fixed = drop_intermediate_tool_calls(run_rollout(tokenizer, script).trajectory(1.0))
    choices = [item for item in fixed.messages_and_choices if isinstance(item, Choice)]
    assert choices[0].message.tool_calls is None
    assert choices[1].message.tool_calls[0].function.name == "list_payments"


def test_art_crashes_on_empty_arguments_in_a_context_turn(tokenizer):
    trajectory = trajectory_with(tokenizer, context_turn(""))
    with pytest.raises(json.JSONDecodeError):
        art_tokens(tokenizer, [trajectory, trajectory.model_copy(update={"reward": 0.0})])


def test_empty_arguments_become_the_empty_object_vllm_rendered(tokenizer):
    rollout = run_rollout(tokenizer, [context_turn(""), *three_turn_script()])
    original = rollout.trajectory(1.0)
    result = sanitise_tool_call_arguments(original)
    assert result.trajectory is not None and result.repaired_calls == 1
    context = original.messages_and_choices[2]
    assert context["tool_calls"][0]["function"]["arguments"] == ""  # type: ignore[index]
    fixed = drop_intermediate_tool_calls(result.trajectory)
    tokens = art_tokens(tokenizer, [fixed, fixed.model_copy(update={"reward": 0.0})])
    assert tokens == rollout.inference_tokens


@pytest.mark.parametrize(
    ("first_turn", "raw"),
    [(context_turn("{}"), "{invoice"), (None, "[1, 2]"), (None, '"INV-1001"')],
    ids=["context-turn-invalid-json", "sampled-turn-json-list", "sampled-turn-json-string"],
)
def test_malformed_arguments_before_the_last_sampled_turn_drop_the_trajectory(
    tokenizer, first_turn, raw
):
    turns = [first_turn, *three_turn_script()] if first_turn else three_turn_script()
    trajectory = with_arguments(run_rollout(tokenizer, turns).trajectory(1.0), 2, raw)
    result = sanitise_tool_call_arguments(trajectory)
    assert result.trajectory is None
    assert result.drop_reason is not None and raw in result.drop_reason


def test_malformed_arguments_in_the_last_sampled_turn_are_trained_as_sampled(tokenizer):
    rollout = run_rollout(tokenizer, three_turn_script()[:2])  # ends on a tool call
    last_choice = 4
    broken = with_arguments(rollout.trajectory(1.0), last_choice, "{bad")
    group = art.TrajectoryGroup([broken, broken.model_copy(update={"reward": 0.0})])
    kept, stats = prepare_groups_for_training([group])
    assert stats.trajectories_dropped == 0
    assert art_tokens(tokenizer, kept[0].trajectories) == rollout.inference_tokens


def test_prepare_drops_equal_reward_groups_and_counts_everything(tokenizer):
    rollout = run_rollout(tokenizer, three_turn_script())
    broken = with_arguments(trajectory_with(tokenizer, context_turn("{}"), 0.5), 2, "not json")
    repaired = trajectory_with(tokenizer, context_turn(""), reward=0.0)
    groups = [
        art.TrajectoryGroup([rollout.trajectory(1.0), broken, repaired]),
        art.TrajectoryGroup([rollout.trajectory(0.5), rollout.trajectory(0.5)]),
        art.TrajectoryGroup([broken]),
    ]
    kept, stats = prepare_groups_for_training(groups)
    assert [len(group) for group in kept] == [2]
    assert (stats.groups_in, stats.groups_out) == (3, 1)
    assert (stats.zero_variance_groups, stats.empty_groups) == (1, 1)
    assert (stats.trajectories_in, stats.trajectories_out) == (6, 2)
    assert (stats.trajectories_dropped, stats.trajectories_sanitised) == (2, 1)
    assert stats.intermediate_tool_calls_dropped == 2 * 2  # kept trajectories only
    assert stats.as_metrics()["data/prep_zero_variance_share"] == pytest.approx(1 / 3)


def test_prepare_keeps_group_metadata_and_returns_new_groups(tokenizer):
    rollout = run_rollout(tokenizer, three_turn_script())
    group = art.TrajectoryGroup(
        [rollout.trajectory(1.0), rollout.trajectory(0.0)], metadata={"scenario_id": "s-7"}
    )
    kept, _ = prepare_groups_for_training([group])
    assert kept[0] is not group and kept[0].metadata == {"scenario_id": "s-7"}
    assert kept[0].trajectories[0] is not group.trajectories[0]
