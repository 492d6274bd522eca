"""ART's own tokenisation of a 3-turn tool-use trajectory against what inference saw (CPU)."""

from __future__ import annotations

import art
import pytest
from art.preprocessing.tokenize import TokenizedResult, tokenize_trajectory_groups

from tests.train.toy_rollout import (
    SAMPLED_LOGPROB,
    ToyRollout,
    run_rollout,
    three_turn_script,
)
from tests.train.toy_tokenizer import build_toy_tokenizer
from training.art.fixes import prepare_groups_for_training

TOOL_SCHEMA_FORMAT = "vllm_openai"


@pytest.fixture(scope="module")
def tokenizer():
    return build_toy_tokenizer()


@pytest.fixture(scope="module")
def rollout(tokenizer) -> ToyRollout:
    return run_rollout(tokenizer, three_turn_script())


def groups_of(rollout: ToyRollout) -> list[art.TrajectoryGroup]:
    """Two members with different rewards, so ART does not skip them for zero advantage."""
    return [art.TrajectoryGroup([rollout.trajectory(1.0), rollout.trajectory(0.0)])]


def art_tokenize(
    tokenizer, groups, tool_schema_format: str = TOOL_SCHEMA_FORMAT
) -> TokenizedResult:
    """The call LocalBackend._get_packed_tensors makes (local/backend.py:477-487), unshuffled."""
    results = tokenize_trajectory_groups(
        tokenizer,
        groups,
        allow_training_without_logprobs=False,
        scale_rewards=True,
        shuffle_group_trajectories=False,
        chat_template_kwargs={"enable_thinking": False},
        chat_template_tool_schema_format=tool_schema_format,  # type: ignore[arg-type]
    )
    return next(iter(results))


def test_the_toy_template_extends_each_prompt_with_the_previous_sample(rollout):
    for prompt, sample, next_prompt in zip(
        rollout.prompts, rollout.samples, rollout.prompts[1:], strict=False
    ):
        assert next_prompt[: len(prompt) + len(sample)] == prompt + sample


def test_art_trains_on_the_inference_tokens_once_intermediate_tool_calls_are_dropped(
    tokenizer, rollout
):
    prepared, _ = prepare_groups_for_training(groups_of(rollout))
    result = art_tokenize(tokenizer, prepared)
    assert result.token_ids == rollout.inference_tokens


def test_art_masks_exactly_the_sampled_tokens_with_their_logprobs(tokenizer, rollout):
    prepared, _ = prepare_groups_for_training(groups_of(rollout))
    result = art_tokenize(tokenizer, prepared)
    assert result.choice_offsets == [len(prompt) for prompt in rollout.prompts]
    sampled_positions = {
        offset + i
        for offset, sample in zip(result.choice_offsets, rollout.samples, strict=True)
        for i in range(len(sample))
    }
    masked = {i for i, bit in enumerate(result.assistant_mask) if bit}
    assert masked == sampled_positions
    assert all(result.logprobs[i] == SAMPLED_LOGPROB for i in sampled_positions)


def test_without_the_fix_art_renders_every_intermediate_tool_call_twice(tokenizer, rollout):
    result = art_tokenize(tokenizer, groups_of(rollout))
    tool_call_id = tokenizer.convert_tokens_to_ids("<tool_call>")
    assert result.token_ids != rollout.inference_tokens
    extra_tool_calls = result.token_ids.count(tool_call_id) - rollout.inference_tokens.count(
        tool_call_id
    )
    assert extra_tool_calls == 2  # one duplicate per intermediate turn


def test_the_default_tool_schema_format_renders_a_different_system_prompt(tokenizer, rollout):
    prepared, _ = prepare_groups_for_training(groups_of(rollout))
    result = art_tokenize(tokenizer, prepared, tool_schema_format="default")
    first_difference = next(
        i
        for i, (ours, theirs) in enumerate(
            zip(result.token_ids, rollout.inference_tokens, strict=False)
        )
        if ours != theirs
    )
    assert first_difference < len(rollout.prompts[0])


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # numpy 2 warning inside ART
def test_local_backend_packs_the_inference_tokens_with_our_internal_config(
    tokenizer, rollout, tmp_path
):
    """The real LocalBackend path reads chat_template_kwargs and the tool schema format from
    `_internal_config` and loads the tokenizer from `base_model`; packing needs no GPU."""
    local = pytest.importorskip("art.local.backend")
    tokenizer.save_pretrained(tmp_path / "toy-tokenizer")
    model = art.TrainableModel(
        name="alignment",
        project="ledgergym-tests",
        base_model=str(tmp_path / "toy-tokenizer"),
        _internal_config=art.dev.InternalModelConfig(
            chat_template_kwargs={"enable_thinking": False},
            chat_template_tool_schema_format=TOOL_SCHEMA_FORMAT,
        ),
    )
    backend = local.LocalBackend(path=str(tmp_path / "art"))
    prepared, _ = prepare_groups_for_training(groups_of(rollout))
    packed = backend._get_packed_tensors(
        model,
        prepared,
        advantage_balance=0.0,
        allow_training_without_logprobs=False,
        scale_rewards=True,
        plot_tensors=False,
        packed_sequence_length=None,
        logprob_calculation_chunk_size=1024,
    )
    assert packed is not None
    expected = rollout.inference_tokens
    for row in packed["tokens"].tolist():
        assert row[: len(expected)] == expected
