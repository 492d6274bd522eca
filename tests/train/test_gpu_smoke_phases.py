"""training.art.gpu_smoke_phases on CPU: the phase table, deadlines, re-run skips, the long row
through ART's tokenisation and the backend double, and each long-run verdict."""

from __future__ import annotations

import asyncio

import art
import pytest

from tests.train.backend_double import FakeBackendForTests
from tests.train.test_backend_double import INFERENCE_URL, new_model
from tests.train.toy_tokenizer import build_toy_tokenizer
from training.art.gpu_smoke_phases import (
    BUDGETS,
    LONG_ROW_SHARE,
    PHASE_NAMES,
    concurrency_check,
    equal_rewards_check,
    installed_versions,
    long_episode_messages,
    long_row_check,
    phase_deadline,
    pruning_check,
    resume_check,
    skipped_on_rerun,
)

LONG_PHASES = ("long-row", "equal-rewards", "resume", "validation", "pruning", "concurrency")


def test_the_phases_run_gdn_after_kernels_and_the_long_run_after_the_checkpoint():
    assert PHASE_NAMES[:2] == ("kernels", "gdn")
    assert PHASE_NAMES[-len(LONG_PHASES) :] == LONG_PHASES
    # the first run's ceilings exceed 30 min; the expected total stays under it (docs/gpu.md)
    assert all(budget > 0 for budget in BUDGETS.values())


def test_a_phase_deadline_is_its_own_budget_or_the_smokes_whichever_is_sooner():
    assert phase_deadline("gdn", overall_deadline=10_000.0, now=100.0) == 100.0 + BUDGETS["gdn"]
    assert phase_deadline("register", overall_deadline=150.0, now=100.0) == 150.0


def test_a_rerun_skips_gdn_only_when_it_passed_under_the_same_versions():
    versions = '{"fla-core": "0.4.2", "torch": "2.10.0"}'
    passed = {"versions": versions, "checks": {"gdn": "pass", "long-row": "pass"}}
    assert skipped_on_rerun(passed, versions) == ["gdn"]
    assert skipped_on_rerun(passed, versions.replace("0.4.2", "0.4.1")) == []
    assert skipped_on_rerun({**passed, "checks": {"gdn": "fail"}}, versions) == []
    assert skipped_on_rerun(None, versions) == []
    here = installed_versions()
    assert set(here) == {"torch", "triton", "fla-core", "transformers", "openpipe-art"}
    assert all(isinstance(version, str) and version for version in here.values())


def test_the_long_episode_trains_through_arts_tokenisation_at_90_percent(tmp_path):
    """The synthetic row as the device phase builds it, trained by the double (which runs ART's
    own tokenisation and drops nothing): its packed length is ~90% of max_seq_length."""
    from openai.types.chat.chat_completion import Choice, ChoiceLogprobs
    from openai.types.chat.chat_completion_message import ChatCompletionMessage
    from openai.types.chat.chat_completion_token_logprob import ChatCompletionTokenLogprob

    tokenizer = build_toy_tokenizer()
    max_seq_length = 2048
    messages = long_episode_messages(tokenizer, max_seq_length)
    sampled = [*tokenizer.encode("billed twice", add_special_tokens=False), tokenizer.eos_token_id]
    choice = Choice(
        index=0,
        finish_reason="stop",
        message=ChatCompletionMessage(role="assistant", content="billed twice"),
        logprobs=ChoiceLogprobs(
            content=[
                ChatCompletionTokenLogprob(token=f"token_id:{i}", logprob=-1.0, top_logprobs=[])
                for i in sampled
            ]
        ),
    )
    copies = [
        art.Trajectory(messages_and_choices=[*messages, choice], reward=r) for r in (1.0, 0.0)
    ]

    async def scenario():
        model = new_model()
        backend = FakeBackendForTests(
            path=tmp_path, inference_base_url=INFERENCE_URL, tokenizer=tokenizer
        )
        await model.register(backend)
        result = await backend.train(model, [art.TrajectoryGroup(copies)])
        return result, backend.train_calls[-1].tokenized

    result, tokenized = asyncio.run(scenario())
    assert result.step == 1 and tokenized
    length = len(tokenized[0].token_ids)
    assert LONG_ROW_SHARE - 0.05 <= length / max_seq_length <= LONG_ROW_SHARE + 0.02 < 1
    assert long_row_check(length, max_seq_length, True, 3.0).status == "pass"
    assert long_row_check(length, max_seq_length, False, 3.0).status == "fail"
    assert long_row_check(max_seq_length // 2, max_seq_length, True, 3.0).status == "fail"


@pytest.mark.parametrize(
    ("check", "status"),
    [
        (equal_rewards_check(3, 4, 1, True), "pass"),
        (equal_rewards_check(3, 3, 1, True), "fail"),  # the step did not advance
        (equal_rewards_check(3, 4, 0, True), "fail"),  # the group was trained on
        (resume_check(4, 4, [7, 9], [7, 9], ["warning: state.json ..."]), "pass"),
        (resume_check(4, 3, [7, 9], [7, 9], ["w"]), "fail"),
        (resume_check(4, 4, [7, 9], [9, 7], ["w"]), "fail"),
        (resume_check(4, 4, [7, 9], [7, 9], []), "fail"),  # the cut write went unrepaired
        (pruning_check([0, 1, 2, 3, 4], [2, 4], best=2), "pass"),
        (pruning_check([0, 1, 2, 3, 4], [0, 2, 4], best=2), "fail"),
        (concurrency_check(64, 0, 90.0), "pass"),
        (concurrency_check(60, 4, 90.0), "fail"),
    ],
)
def test_each_long_run_verdict(check, status):
    assert check.status == status, check.detail


def test_the_long_row_fails_when_its_peak_says_the_entropy_patch_did_not_reach_arts_service():
    from training.art.memory import ART_HEAD_ROWS, needed_gib

    tokens, length = 29_500, 32_768
    patched = long_row_check(tokens, length, True, 30.0, peak_gib=34.0)
    unpatched = long_row_check(
        tokens, length, True, 30.0, peak_gib=needed_gib(length, ART_HEAD_ROWS)[0]
    )
    assert patched.status == "pass" and "peak 34.0 GiB (estimate 29-39 GiB)" in patched.detail
    assert unpatched.status == "fail" and "did not reach ART's model service" in unpatched.detail
    assert long_row_check(tokens, length, True, 30.0).detail.endswith("peak memory not measured")


def test_the_grad_norm_note_says_when_every_per_trajectory_step_is_clipped():
    from training.art.gpu_smoke_phases import grad_norm_note, keep_grad_norm

    measured: dict[str, float | int | str] = {}
    keep_grad_norm(measured, "train_grad_norm", {"loss/grad_norm": 0.42})
    keep_grad_norm(measured, "long_row_grad_norm", {"loss/train": 1.0})  # not reported: kept out
    assert measured == {"train_grad_norm": 0.42}
    clipped = grad_norm_note([0.42, 0.3], 0.1)
    assert "100% above it" in clipped and "consider [grpo] max_grad_norm near 0.42" in clipped
    assert "consider" not in grad_norm_note([0.05, 0.2], 0.1)
    assert grad_norm_note([], 0.1) == "loss/grad_norm not reported"
