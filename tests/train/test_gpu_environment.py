"""What the GPU path decides before it starts: base precision, kernel path, W&B, the budget from
a GPU smoke, and the LoRA rank vLLM is given (in training and in an export). CPU only."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.train.adapter_fixtures import write_lora_adapter
from training.art import run_state
from training.art.backends import gdn_kernel_path, internal_config, keep_wandb_off, wandb_line
from training.art.budget import ASSUMED
from training.art.export import ExportError, export_checkpoint, model_card
from training.art.plan import estimate, level_sizes, render_plan
from training.art.run_state import RunChanged
from training.data_order import plan_data
from training.runs import VLLM_MAX_LORA_RANKS, RunConfig, load_run_config, vllm_max_lora_rank

REPO = Path(__file__).resolve().parents[2]


def with_sections(run: RunConfig, **sections: dict[str, object]) -> RunConfig:
    updates = {
        name: getattr(run, name).model_copy(update=values) for name, values in sections.items()
    }
    return run.model_copy(update=updates)


def test_the_base_precision_is_a_run_setting_carried_to_art_and_the_fingerprint(tmp_path):
    run = load_run_config("binary-01")
    assert run.model.load_in_4bit is False
    assert internal_config(run)["init_args"]["load_in_4bit"] is False
    quantised = with_sections(run, model={"load_in_4bit": True})
    assert internal_config(quantised)["init_args"]["load_in_4bit"] is True
    assert quantised.fingerprint() != run.fingerprint()
    write_lora_adapter(tmp_path / "checkpoints" / "0000", run.lora.target_modules, rank=16)
    run_state.record_run(tmp_path, run, "data")
    with pytest.raises(RunChanged, match=r"model\.load_in_4bit \(False -> True\)"):
        run_state.record_run(tmp_path, quantised, "data")


def test_the_kernel_path_follows_what_imports(tmp_path, monkeypatch):
    assert gdn_kernel_path("Qwen/Qwen3-4B")[0] == "n/a"
    for name in ("fla", "causal_conv1d"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    path, why = gdn_kernel_path("Qwen/Qwen3.5-4B")
    if importlib.util.find_spec("fla") is None:  # this machine: no kernels installed
        assert path == "slow" and why.startswith("fla and causal_conv1d not importable")
    for name in ("fla", "causal_conv1d"):  # two empty packages: importable, nothing more
        (tmp_path / name).mkdir()
        (tmp_path / name / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.invalidate_caches()
    assert gdn_kernel_path("Qwen/Qwen3.5-4B") == ("fast", "fla and causal_conv1d import here")
    (tmp_path / "causal_conv1d" / "__init__.py").unlink()
    (tmp_path / "causal_conv1d").rmdir()
    importlib.invalidate_caches()
    path, why = gdn_kernel_path("Qwen/Qwen3.5-4B")
    if importlib.util.find_spec("causal_conv1d") is None:
        assert path == "slow" and why.startswith("causal_conv1d not importable")


def test_a_set_wandb_key_is_unset_unless_the_run_reports_to_wandb():
    run = load_run_config("binary-01")
    environ = {"WANDB_API_KEY": "k", "HOME": "/root"}
    assert "train.py unsets it" in wandb_line(run, environ)
    note = keep_wandb_off(run, environ)
    assert note is not None and environ == {"HOME": "/root"}
    assert keep_wandb_off(run, environ) is None
    reporting = with_sections(run, backend={"wandb": True})
    environ = {"WANDB_API_KEY": "k"}
    assert keep_wandb_off(reporting, environ) is None and environ == {"WANDB_API_KEY": "k"}
    hosted = with_sections(run, backend={"kind": "serverless"})
    assert keep_wandb_off(hosted, environ) is None and "WANDB_API_KEY" in environ


def test_check_prints_the_precision_the_kernel_path_and_what_wandb_does(tmp_path):
    env = {**os.environ, "WANDB_API_KEY": "set-for-this-test"}
    done = subprocess.run(
        [sys.executable, str(REPO / "train.py"), "--run", "binary-01", "--check"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    lines = {line[:12].strip(): line[12:] for line in done.stdout.splitlines() if line[:1] != " "}
    assert lines["precision"].startswith("bf16 base weights ([model] load_in_4bit = false)")
    assert lines["kernels"].startswith("Gated-DeltaNet path here: ")
    assert lines["kernels"].split(": ")[1].split(" ")[0] in {"fast", "slow", "unknown"}
    assert "WANDB_API_KEY is set" in lines["wandb"] and "unsets it" in lines["wandb"]


def smoke_figures(run: RunConfig, **changes: object) -> dict[str, object]:
    record = {
        "run": run.name + run_state.SMOKE_SUFFIX,
        "base_model": run.base_model,
        "load_in_4bit": run.model.load_in_4bit,
        "max_turns": 6,
        "rollout_s": 40.0,
        "train_s": 20.0,
        "rollouts": 2,
        "at": "2026-06-01T10:00:00+00:00",
    }
    return {**record, **changes}


def test_the_budget_uses_the_gpu_smokes_rates_until_steps_are_logged(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    run = load_run_config("binary-01")
    data = plan_data(run)
    sizes = level_sizes(run, data)
    smoke = run_state.smoke_dir(run)
    run_state.write_smoke_record(smoke, smoke_figures(run))
    budget = estimate(run, data, sizes)
    assert budget.rates.seconds_per_turn == 40.0 / 6  # a group's wave of at most 6 turns
    assert budget.rates.train_tokens_per_second == ASSUMED.train_tokens_per_second
    plan = render_plan(run, data, sizes=sizes)
    assert "GPU smoke of 2026-06-01T10:00:00+00:00: 6.7 s per turn" in plan
    assert "2x slower" not in plan  # measured rates are not priced pessimistically
    for stale in ({"base_model": "Qwen/Qwen3.5-27B"}, {"load_in_4bit": True}, {"train_s": None}):
        run_state.write_smoke_record(smoke, smoke_figures(run, **stale))
        assert estimate(run, data, sizes).rates == ASSUMED
    run_state.write_smoke_record(smoke, smoke_figures(run))
    directory = run_state.model_dir(run)
    directory.mkdir(parents=True)
    row = {"step": 1, run_state.STEP_SECONDS_KEY: 150.0}
    (directory / run_state.HISTORY_FILE).write_text(json.dumps(row) + "\n")
    measured = estimate(run, data, sizes)
    assert measured.measured_step_s == 150.0 and measured.rates == ASSUMED


@pytest.mark.parametrize("rank", [8, 16, 24, 48, 100, 320, 500])
def test_training_and_an_export_give_vllm_the_same_accepted_lora_rank(rank):
    run = with_sections(load_run_config("binary-01"), lora={"rank": rank})
    served = internal_config(run)["engine_args"]["max_lora_rank"]
    assert served == vllm_max_lora_rank(rank) and served in VLLM_MAX_LORA_RANKS
    assert served >= rank and not any(rank <= r < served for r in VLLM_MAX_LORA_RANKS)
    card = model_card(run, 3, history=[])
    assert f"--max-lora-rank {served} --max-model-len {run.grpo.max_seq_length}" in card


def test_an_export_refuses_a_cut_adapter_and_names_the_problem(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    run = load_run_config("binary-01")
    checkpoint = run_state.model_dir(run) / "checkpoints" / "0004"
    weights = write_lora_adapter(checkpoint, run.lora.target_modules, rank=16)
    assert export_checkpoint(run, tmp_path / "whole").step == 4
    weights.write_bytes(weights.read_bytes()[:-32])
    with pytest.raises(ExportError, match=r"holds no PEFT adapter \(adapter_model.safetensors: "):
        export_checkpoint(run, tmp_path / "cut")


def test_the_budget_takes_the_long_row_and_concurrency_phases_when_the_smoke_ran_them(
    tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    run = load_run_config("binary-01")
    data = plan_data(run)
    long = {"long_row_train_s": 30.0, "concurrent_rollout_s": 128.0, "concurrent_rollouts": 64}
    run_state.write_smoke_record(run_state.smoke_dir(run), smoke_figures(run, **long))
    budget = estimate(run, data, level_sizes(run, data))
    assert budget.rates.seconds_per_turn == 128.0 / 6
    assert budget.rates.train_tokens_per_second == 2 * 0.9 * 32768 / 30.0
    assert "trained tokens/s from its long-row phase" in budget.rates.source


def test_check_says_what_memory_the_longest_row_needs_with_and_without_the_entropy_patch():
    from training.art.memory import ART_HEAD_ROWS, memory_line, needed_gib

    low, high = needed_gib(32768, ART_HEAD_ROWS)
    assert (round(low), round(high)) == (75, 85)  # the third review's 75-85 GiB, ART as shipped
    assert memory_line(32768, 80.0, ART_HEAD_ROWS).startswith("warning: this GPU has 80 GiB")
    assert memory_line(32768, 40.0, ART_HEAD_ROWS).startswith("WARNING: this GPU has 40 GiB")
    low, high = needed_gib(32768)  # one row per token: fits an 80 GB H100
    assert (round(low), round(high)) == (29, 39)
    assert memory_line(32768, 80.0).endswith("this GPU has 80 GiB")
    assert "entropy under no_grad" in memory_line(32768, None)
    assert memory_line(32768, 24.0).startswith("WARNING: this GPU has 24 GiB")
    assert memory_line(32768, None).endswith("no GPU seen here")


def test_setting_ledgergym_art_entropy_to_art_makes_check_count_arts_four_rows(monkeypatch):
    from training.art.memory import memory_line

    monkeypatch.setenv("LEDGERGYM_ART_ENTROPY", "art")
    assert memory_line(32768, 80.0).startswith("warning: this GPU has 80 GiB")
    assert "ART's head as shipped" in memory_line(32768, None)
