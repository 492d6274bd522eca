"""The TRL path on two processes (torchrun, gloo on CPU): each trains its share of every batch,
the adapters stay identical, and rank 0 alone writes the step record, logs and summary; the
resume rule (a changed run file refused in one line) holds with both processes.

Run: pytest tests/train/test_trl_processes.py   (about a minute and a half on 2 idle cores)
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

pytest.importorskip("trl")
pytest.importorskip("peft")

from tests.train.trl_launch import run, torchrun, write_run
from training.trl.grpo import adapter_digest

NAME = "two-ranks"


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, subprocess.CompletedProcess]:
    folder = tmp_path_factory.mktemp("two-ranks")
    cache = tmp_path_factory.getbasetemp() / "trl-cache"
    done = run(torchrun(2, str(write_run(folder, NAME))), folder, cache, timeout=900)
    return folder, done


def test_two_processes_end_with_one_adapter_written_once(trained) -> None:
    from safetensors.torch import load_file

    folder, done = trained
    assert done.returncode == 0, done.stderr[-4000:]
    out = folder / "outputs" / NAME
    summary = json.loads((out / "summary.json").read_text())
    assert summary["processes"] == 2
    first, second = summary["rank_adapter_digests"]
    assert first == second  # both ranks hold the same LoRA weights after the last step
    assert adapter_digest(load_file(str(out / "adapter" / "adapter_model.safetensors"))) == first
    assert summary["lora_tensors_changed"] > 0  # and they trained it: it is not the initial one
    assert done.stdout.count(f"TRL run '{NAME}'") == 1  # the summary printed by rank 0 alone


def test_the_step_record_holds_each_step_once_with_both_ranks_episodes(trained) -> None:
    folder, _ = trained
    out = folder / "outputs" / NAME
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [row["step"] for row in rows] == [1, 2]
    assert [row["episodes"] for row in rows] == [4, 4]  # 2 per rank, gathered
    assert [len(row["group_tool_sequences"]) for row in rows] == [1, 1]  # one whole group
    log = [json.loads(line) for line in (out / "train.log").read_text().splitlines()]
    steps = [(row["phase"], row["step"]) for row in log if "loss" in row]
    assert len(steps) == len(set(steps)) and ("grpo", 2) in steps


def test_a_changed_run_file_is_refused_in_one_line_by_both_processes(trained) -> None:
    folder, _ = trained
    out = folder / "outputs" / NAME
    before = sorted(p.name for p in out.iterdir())
    run_file = write_run(folder, NAME, learning_rate="1e-3")
    cache = folder.parent / "trl-cache"
    done = run(torchrun(2, str(run_file)), folder, cache, timeout=600)
    assert done.returncode != 0
    change = "grpo.learning_rate (0.002 -> 0.001)"
    lines = [line for line in (done.stdout + done.stderr).splitlines() if change in line]
    assert len(lines) == 1 and "--force" in lines[0], done.stderr[-3000:]
    assert sorted(p.name for p in out.iterdir()) == before
    assert sorted(p.name for p in folder.iterdir() if p.is_dir()) == ["outputs"]
