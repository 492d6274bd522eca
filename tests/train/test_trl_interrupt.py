"""Ctrl-C on the TRL path: one line saying what was kept and how to continue, no traceback; the
same command then continues from the saved step, in the SFT warm start and in GRPO.

A real SIGINT to a real `python train.py` subprocess once a checkpoint is on disk.
Run: pytest tests/train/test_trl_interrupt.py   (about two minutes on 2 idle cores)
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest

pytest.importorskip("trl")
pytest.importorskip("peft")

from tests.train.trl_launch import child_env, run, train_py, write_run

NAME = "stopped"
SFT_STEPS, GRPO_STEPS = 12, 3


def interrupted(command: list[str], cwd: Path, cache: Path, saved: Path) -> tuple[int, str]:
    """Starts `command`; once `saved` holds a whole trainer state, sends it SIGINT (Ctrl-C).
    Returns its exit status and what it wrote on stderr."""
    child = subprocess.Popen(
        command,
        cwd=cwd,
        env=child_env(cache),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 600
    while not _whole(saved / "trainer_state.json"):
        if child.poll() is not None or time.monotonic() > deadline:
            child.kill()
            pytest.fail(f"no {saved} in time: {child.communicate()[1][-3000:]}")
        time.sleep(0.2)
    child.send_signal(signal.SIGINT)
    _, stderr = child.communicate(timeout=300)
    return child.returncode, stderr


def _whole(path: Path) -> bool:
    try:
        return "global_step" in json.loads(path.read_text())
    except (OSError, ValueError):
        return False


def test_ctrl_c_keeps_the_checkpoint_and_the_same_command_continues_from_it(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    cache = tmp_path_factory.getbasetemp() / "trl-cache"
    steps = {"sft_steps": SFT_STEPS, "sft_save_steps": 3, "grpo_steps": GRPO_STEPS}
    run_file = write_run(tmp_path, NAME, grpo_save_steps=1, **steps)
    out = tmp_path / "outputs" / NAME
    command = train_py("--run", str(run_file))

    first = _stop(command, tmp_path, cache, out / "sft" / "checkpoint-3")
    assert first.startswith("interrupted during the SFT warm start at step "), first
    sft_kept = _kept_step(first, "sft")
    assert f"rerun `python train.py --run {run_file}` to continue" in first

    second = _stop(command, tmp_path, cache, out / "grpo" / "checkpoint-1")
    assert second.startswith("interrupted during GRPO at step "), second
    assert "kept the SFT warm start (outputs/stopped/warm_start), the checkpoint " in second
    grpo_kept = _kept_step(second, "grpo")
    log = [json.loads(line) for line in (out / "train.log").read_text().splitlines()]
    marks = [i for i, row in enumerate(log) if row.get("continued")]
    assert [log[i]["step"] for i in marks] == [sft_kept]  # SFT went on from the kept step...
    after = [row["step"] for row in log[marks[0] + 1 :] if row["phase"] == "sft" and "loss" in row]
    assert after and min(after) > sft_kept and max(after) == SFT_STEPS  # ...to its end

    third = run(command, tmp_path, cache, timeout=900)
    assert third.returncode == 0, third.stderr[-3000:]
    assert f"continuing from step {grpo_kept}/{GRPO_STEPS}" in third.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["continued_from"] == {"grpo": grpo_kept}  # the warm start was reused whole
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [row["step"] for row in rows] == list(range(1, GRPO_STEPS + 1))


def _stop(command: list[str], cwd: Path, cache: Path, saved: Path) -> str:
    """The one line a Ctrl-C leaves (checked: status 130, no traceback)."""
    status, stderr = interrupted(command, cwd, cache, saved)
    assert status == 130, stderr[-3000:]
    assert "Traceback" not in stderr and "KeyboardInterrupt" not in stderr, stderr[-3000:]
    return [line for line in stderr.splitlines() if line.strip()][-1]


def _kept_step(line: str, phase: str) -> int:
    match = re.search(rf"{phase}/checkpoint-(\d+) \(step (\d+)\)", line)
    assert match is not None and match.group(1) == match.group(2), line
    return int(match.group(2))
