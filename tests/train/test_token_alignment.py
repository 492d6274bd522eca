"""ART's own tokenisation of a 3-turn tool-use trajectory against what inference saw (CPU)."""

from __future__ import annotations

import json
from typing import Any, cast

import art
import pytest
from art.preprocessing.tokenize import TokenizedResult, tokenize_trajectory_groups
from openai.types.chat.chat_completion import Choice

from tests.train.toy_rollout import (
    SAMPLED_LOGPROB,
    ToyRollout,
    run_rollout,
    three_turn_script,
)
from tests.train.toy_rollout import Turn as ToyTurn
from tests.train.toy_tokenizer import build_toy_tokenizer
from training.art.fixes import prepare_groups_for_training, sanitise_tool_call_arguments

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


# Arguments strings as a tool parser may return them, each of which a JSON round trip rewrites
# (compact separators, key order, an escape or a literal non-ASCII letter). LedgerGym's tool
# parameters are strings, so the sampled XML carries the values exactly as written here.
REWRITTEN_ARGUMENTS: dict[str, tuple[dict[str, str], str]] = {
    "decimal": (
        {"invoice_id": "INV-1001", "amount": "10.50"},
        '{"invoice_id":"INV-1001","amount":"10.50"}',
    ),
    "exponent": (
        {"invoice_id": "INV-1001", "amount": "1e3"},
        '{"invoice_id":"INV-1001","amount":"1e3"}',
    ),
    "key-order": (
        {"note": "refund", "invoice_id": "INV-1001"},
        '{"note": "refund", "invoice_id": "INV-1001"}',
    ),
    "escape": (
        {"invoice_id": "INV-1001", "note": "Renée"},
        '{"invoice_id":"INV-1001","note":"Ren\\u00e9e"}',
    ),
    "literal": (
        {"invoice_id": "INV-1001", "note": "Renée"},
        '{"invoice_id": "INV-1001", "note": "Renée"}',
    ),
}
RESULTS = ('{"invoice_id": "INV-1001", "total": "10.50"}',)


def tool_turns(args: dict[str, str], raw: str, *, first_sampled: bool = True) -> list[ToyTurn]:
    return [
        ToyTurn(
            calls=(("get_invoice", args),),
            results=RESULTS,
            raw_arguments=raw,
            sampled=first_sampled,
        ),
        ToyTurn(calls=(("list_payments", args),), results=RESULTS, raw_arguments=raw),
        ToyTurn(answer="INV-1001 was paid twice; 10.50 USD is due."),
    ]


def call_arguments(trajectory: art.Trajectory) -> list[str]:
    """Every tool call's arguments string, in Choices and in plain messages, in order."""
    found: list[str] = []
    for item in trajectory.messages_and_choices:
        if isinstance(item, Choice):
            calls = [call.model_dump() for call in item.message.tool_calls or []]
        else:
            calls = list(cast(dict[str, Any], item).get("tool_calls") or [])
        found += [call["function"]["arguments"] for call in calls]
    return found


def assert_trains_the_sampled_tokens(result: TokenizedResult, rollout: ToyRollout) -> None:
    assert result.choice_offsets == [len(prompt) for prompt in rollout.prompts]
    for offset, sample in zip(result.choice_offsets, rollout.samples, strict=True):
        assert result.token_ids[offset : offset + len(sample)] == sample


@pytest.mark.parametrize("case", sorted(REWRITTEN_ARGUMENTS))
def test_arguments_a_json_round_trip_would_rewrite_train_exactly_what_was_sampled(tokenizer, case):
    args, raw = REWRITTEN_ARGUMENTS[case]
    assert json.dumps(json.loads(raw), sort_keys=True) != raw  # the trap: re-serialising
    rollout = run_rollout(tokenizer, tool_turns(args, raw))
    groups = groups_of(rollout)
    prepared, stats = prepare_groups_for_training(groups)
    assert (stats.trajectories_sanitised, stats.trajectories_dropped) == (0, 0)
    result = art_tokenize(tokenizer, prepared)
    assert result.token_ids == rollout.inference_tokens  # every prompt and every sample
    assert_trains_the_sampled_tokens(result, rollout)
    # the original strings survive byte for byte: in the logged groups and in the trained copy
    assert call_arguments(groups[0].trajectories[0]) == [raw, raw]
    assert call_arguments(prepared[0].trajectories[0]) == []  # intermediate calls are hidden
    sanitised = sanitise_tool_call_arguments(groups[0].trajectories[0])
    assert sanitised.repaired_calls == 0 and sanitised.trajectory is not None
    assert call_arguments(sanitised.trajectory) == [raw, raw]


def test_a_context_turn_with_rewritable_numbers_renders_as_vllm_rendered_it(tokenizer):
    """A plain (untrained) assistant turn, e.g. a teacher's: ART and vLLM both parse its
    arguments and render the parsed values, so 10.50, 1e3 and \\u00e9 come out the same."""
    raw = '{"z":1,"amount":10.50,"count":1e3,"note":"Ren\\u00e9e"}'
    args = {"z": "1", "amount": "10.5", "count": "1000.0", "note": "Renée"}
    rollout = run_rollout(tokenizer, tool_turns(args, raw, first_sampled=False))
    groups = groups_of(rollout)
    prepared, _ = prepare_groups_for_training(groups)
    result = art_tokenize(tokenizer, prepared)
    assert result.token_ids == rollout.inference_tokens
    assert_trains_the_sampled_tokens(result, rollout)
    assert call_arguments(prepared[0].trajectories[0]) == [raw]  # the context turn, untouched


def test_a_sampled_number_trains_as_sampled_where_vllm_renders_it_back_otherwise(tokenizer):
    """A number-typed value: the parser hands `10.50` on as the number 10.5, and vLLM's next
    prompt renders that turn back as `10.5`. ART still trains what the model produced: its
    sampled tokens, `10.50`, never the re-rendered text (LedgerGym's parameters are strings,
    so this arises only with number-typed tools; the GPU smoke's token check would show it)."""
    rollout = run_rollout(tokenizer, tool_turns({"amount": "10.50"}, '{"amount": 10.50}'))
    prepared, _ = prepare_groups_for_training(groups_of(rollout))
    result = art_tokenize(tokenizer, prepared)
    for offset, sample in zip(result.choice_offsets, rollout.samples, strict=True):
        assert result.token_ids[offset : offset + len(sample)] == sample
    pairs = zip(result.token_ids, result.assistant_mask, strict=True)
    masked = [token for token, bit in pairs if bit]
    assert masked == [token for sample in rollout.samples for token in sample]
    trained = tokenizer.decode(result.token_ids)
    assert trained.count("<parameter=amount>\n10.50\n") == 2
    assert "<parameter=amount>\n10.5\n" not in trained
    vllm_last_prompt = tokenizer.decode(rollout.prompts[-1])
    assert "<parameter=amount>\n10.5\n" in vllm_last_prompt  # what vLLM itself sent back
