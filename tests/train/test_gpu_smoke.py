"""training.art.gpu_smoke on CPU: the command's edges and every check that needs no GPU.

The GPU side (training/art/gpu_smoke_device.py) cannot run here; what it feeds these functions is
built from the toy rollout and ART's own tokenisation instead.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.train.test_token_alignment import art_tokenize, groups_of
from tests.train.toy_rollout import run_rollout, three_turn_script, vllm_prompt_ids
from tests.train.toy_tokenizer import build_toy_tokenizer
from training.art.backends import internal_config
from training.art.fixes import prepare_groups_for_training
from training.art.gpu_smoke import SMOKE_GROUP_SIZE, SMOKE_MAX_TURNS, smoke_run
from training.art.gpu_smoke_checks import (
    Check,
    SmokeReport,
    Turn,
    compare_tokens,
    parse_gpu_memory,
    render_report,
    sampled_token_ids,
    template_check,
    turn_prompts,
)
from training.runs import RunConfigError, load_run_config

REPO = Path(__file__).resolve().parents[2]
QWEN_LIKE = "{% if enable_thinking %}...{% endif %}{% if preserve_thinking %}...{% endif %}"


def gpu_smoke(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "training.art.gpu_smoke", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture(scope="module")
def tokenizer():
    return build_toy_tokenizer()


@pytest.fixture(scope="module")
def rollout(tokenizer):
    return run_rollout(tokenizer, three_turn_script())


def test_help_documents_every_check():
    done = gpu_smoke("--help")
    assert done.returncode == 0
    checks = ("kernels", "gdn", "template", "register", "rollout", "tokens", "train")
    long_run = ("long-row", "equal-rewards", "resume", "validation", "pruning", "concurrency")
    for name in (*checks, "precision", "checkpoint", *long_run):
        assert f"  {name}" in done.stdout
    assert "peak GPU memory" in done.stdout and "re-run skips `gdn`" in done.stdout


def test_on_a_cpu_machine_it_exits_2_with_one_line():
    done = gpu_smoke("--run", "binary-01")
    assert done.returncode == 2
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert done.stderr.startswith("error: the GPU smoke cannot run here")
    assert "Traceback" not in done.stderr + done.stdout


@pytest.mark.parametrize("run", ["no-such-run", "cpu-smoke"])
def test_a_run_it_cannot_smoke_is_one_line(run):
    done = gpu_smoke("--run", run)
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_the_smoke_trains_a_short_renamed_copy_of_the_run(tmp_path):
    run = load_run_config("binary-01")
    smoke = smoke_run(run, "Qwen/Qwen3.5-27B", tmp_path)
    assert smoke.name == "binary-01-smoke" and smoke.backend.path == str(tmp_path)
    assert smoke.base_model == "Qwen/Qwen3.5-27B" and smoke.lora == run.lora
    assert (smoke.grpo.group_size, smoke.grpo.groups_per_step) == (SMOKE_GROUP_SIZE, 1)
    assert smoke.rollout.max_turns == SMOKE_MAX_TURNS and smoke.loss == run.loss
    assert smoke_run(run, None, tmp_path).base_model == run.base_model
    with pytest.raises(RunConfigError, match="serverless"):
        smoke_run(
            run.model_copy(
                update={"backend": smoke.backend.model_copy(update={"kind": "serverless"})}
            ),
            None,
            tmp_path,
        )


def test_the_template_check_reports_what_art_forces_and_fails_on_a_difference():
    lone = template_check(QWEN_LIKE, {"enable_thinking": False})
    assert lone.mentions == ("enable_thinking", "preserve_thinking")
    assert lone.training == {"enable_thinking": False, "preserve_thinking": True}
    assert lone.differing == ["preserve_thinking"] and lone.as_check().status == "fail"
    ours = internal_config(load_run_config("binary-01"), QWEN_LIKE)["chat_template_kwargs"]
    assert ours == {"enable_thinking": False, "preserve_thinking": False}
    assert template_check(QWEN_LIKE, ours).as_check().status == "pass"
    plain = template_check("{{ messages }}", None)
    assert plain.mentions == () and plain.training == {} and plain.as_check().status == "pass"


def test_turn_prompts_rebuild_the_requests_the_rollout_sent(tokenizer, rollout):
    turns = turn_prompts(rollout.trajectory(1.0).messages_and_choices)
    assert len(turns) == len(rollout.prompts) == 3
    for (messages, _), prompt in zip(turns, rollout.prompts, strict=True):
        assert vllm_prompt_ids(tokenizer, messages) == prompt


def test_the_token_comparison_passes_on_arts_packing_of_the_repaired_trajectory(tokenizer, rollout):
    prepared, _ = prepare_groups_for_training(groups_of(rollout))
    packed = art_tokenize(tokenizer, prepared)
    turns = [Turn(p, s) for p, s in zip(rollout.prompts, rollout.samples, strict=True)]
    comparison = compare_tokens(turns, packed.token_ids, packed.choice_offsets, tokenizer.decode)
    assert comparison.mismatch is None and comparison.as_check().status == "pass"


def test_the_token_comparison_finds_arts_duplicated_tool_calls_without_the_repair(
    tokenizer, rollout
):
    packed = art_tokenize(tokenizer, groups_of(rollout))  # ART 0.5.18 as is: tool calls twice
    turns = [Turn(p, s) for p, s in zip(rollout.prompts, rollout.samples, strict=True)]
    comparison = compare_tokens(turns, packed.token_ids, packed.choice_offsets, tokenizer.decode)
    assert comparison.mismatch is not None and comparison.mismatch.startswith("turn 2")
    assert comparison.as_check().status == "fail"


def test_the_token_comparison_names_where_and_what_differs():
    turns = [Turn([1, 2, 3], [4, 5]), Turn([1, 2, 3, 4, 5, 6], [7])]
    art_ids = [1, 2, 3, 4, 5, 6, 7]
    assert compare_tokens(turns, art_ids, [3, 6]).mismatch is None
    prompt = compare_tokens(turns, [1, 2, 9, 4, 5, 6, 7], [3, 6], decode=str)
    assert (
        prompt.mismatch
        == "turn 1: first difference at token 2 (prompt): vLLM '[3, 4, 5]' vs ART '[9, 4, 5]'"
    )
    sample = compare_tokens(turns, [1, 2, 3, 4, 5, 6, 8], [3, 6])
    assert sample.mismatch == "turn 2: first difference at token 6 (sampled tokens)"
    assert "ART's sample starts at 4" in str(compare_tokens(turns, art_ids, [4, 6]).mismatch)
    assert "ART packed 1 trainable turns" in str(compare_tokens(turns, art_ids, [3]).mismatch)
    short = compare_tokens(turns, [1, 2, 3, 4, 5, 6], [3, 6])
    assert short.mismatch == "turn 2: first difference at token 6 (sampled tokens)"


def test_sampled_ids_come_from_vllm_token_id_strings():
    assert sampled_token_ids(["token_id:12", "token_id:0"]) == [12, 0]
    with pytest.raises(ValueError, match="not 'token_id:N'"):
        sampled_token_ids(["hello"])


def test_gpu_memory_is_summed_over_gpus_from_nvidia_smi():
    assert parse_gpu_memory("81234\n512\n") == 81746
    with pytest.raises(ValueError, match="nvidia-smi"):
        parse_gpu_memory("[N/A]\n")


def test_the_report_lists_checks_and_figures_and_names_failures():
    report = SmokeReport()
    report.add("register", "pass", "Qwen/Qwen3.5-4B served as x@0")
    report.checks.append(Check("tokens", "fail", "turn 2: first difference at token 7"))
    report.figures["train step (backend.train)"] = "41.0 s"
    text = render_report(report, "GPU smoke")
    assert "PASS  register" in text and "FAIL  tokens" in text
    assert "train step (backend.train): 41.0 s" in text
    assert text.endswith("FAILED: tokens") and report.failed
