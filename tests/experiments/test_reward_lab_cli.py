"""`python -m experiments.reward_lab` end to end: the tiny scale in-process (a few seconds),
`--quick` as CI runs it (slow-marked), determinism of a training run, and a bad argument."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from env.generation.generator import generate
from env.generation.splits import split_seeds
from experiments.reward_lab.__main__ import main
from experiments.reward_lab.episodes import RewardSpec
from experiments.reward_lab.moves import catalogue
from experiments.reward_lab.reinforce import TrainConfig, train

REPO = Path(__file__).resolve().parents[2]
TABLES = ("## 1. Hack search", "## 2. λ sweep", "## 3. Advantage estimators", "## 4. Cold start")


def test_tiny_scale_runs_every_part(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--scale", "tiny", "--out", str(tmp_path)]) == 0
    printed = capsys.readouterr().out
    report = (tmp_path / "report.md").read_text(encoding="utf-8")
    for title in TABLES:
        assert title in report and title in printed
    summary = json.loads((tmp_path / "summary.json").read_text(encoding="utf-8"))
    assert summary["scale"] == "tiny" and len(summary["runs"]) >= 10
    assert (tmp_path / "lab.png").read_bytes()[:4] == b"\x89PNG"
    assert not list(tmp_path.glob("*.partial*"))
    recipe = (tmp_path / "recipe" / "report.md").read_text(encoding="utf-8")  # the recipe smoke
    assert "## 3. Tool cost" in recipe and "recipe/summary.json" in printed


def test_a_run_is_deterministic() -> None:
    moves = catalogue()
    pool = [generate("train", s) for s in split_seeds("train", 4)]
    config = TrainConfig(RewardSpec("shaped", 0.01), "rloo", steps=2, scenarios_per_step=2)
    first, second = train(config, moves, pool), train(config, moves, pool)
    assert np.array_equal(first.policy.theta, second.policy.theta)
    assert first.steps == second.steps
    assert first.truth_touches == 0


def test_a_bad_seed_is_one_error_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--seed", "-1"]) == 2
    assert "--seed must be 0 or more" in capsys.readouterr().err


@pytest.mark.slow
def test_quick_mode_as_ci_runs_it(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "experiments.reward_lab", "--quick", "--out", str(tmp_path)],
        cwd=REPO, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    assert all(title in done.stdout for title in TABLES)
    assert (tmp_path / "recipe" / "summary.json").exists()
