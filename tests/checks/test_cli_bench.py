"""`python -m checks.bench`: every figure is measured, judged against its target, and saved.

Only the shape and the verdicts are tested, never the timings themselves (this machine is
shared); the command runs in-process through `main(argv)` with `--quick`, and once as a real
subprocess. The rollout part needs ART, which the test session has already imported.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from checks.bench import Figure, bench_rollouts, main, p99
from env.generator import generate
from env.splits import split_seeds
from env.tools import TOOL_NAMES

ROOT = Path(__file__).resolve().parents[2]


def test_a_figure_under_its_ceiling_passes_and_over_it_misses() -> None:
    assert Figure("reset", 0.1, "ms median", 0.2).passed is True
    assert Figure("reset", 0.3, "ms median", 0.2).passed is False
    assert Figure("generation", 250, "scenarios/s", 200, higher_is_better=True).passed is True
    assert Figure("size", 4096, "bytes").passed is None
    assert Figure("reset", 0.3, "ms median", 0.2).line().endswith("target <= 0.2  MISS")


def test_p99_is_an_observed_value() -> None:
    assert p99([float(n) for n in range(1, 101)]) == 100.0
    assert p99([3.0]) == 3.0


def test_quick_bench_measures_every_tool_and_writes_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "bench.json"
    assert main(["--quick", "--no-rollout", "--json", str(path)]) == 0
    report = json.loads(path.read_text(encoding="utf-8"))
    figures = report["figures"]
    for name in TOOL_NAMES:
        assert figures[f"tool {name}"]["target"] == 0.1
        assert figures[f"tool {name}"]["extra"]["calls"] > 0
        assert "error results" not in figures[f"tool {name}"]["extra"], name
    assert figures["reset (LedgerEnv construction)"]["target"] == 0.2
    assert figures["reward per episode"]["target"] == 1.0
    assert figures["generation (wall clock)"]["target"] == 200
    assert figures["reset + first query"]["value"] > 0
    assert figures["database size"]["value"] > 10_000
    out = capsys.readouterr().out
    assert "targets missed" in out and ("PASS" in out or "MISS" in out)


def test_a_json_path_in_a_missing_folder_is_one_line_and_status_two(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--quick", "--json", str(tmp_path / "no" / "bench.json")]) == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_reference_rollouts_run_at_each_concurrency() -> None:
    scenarios = [generate("eval", seed) for seed in split_seeds("eval")[:2]]
    figures, imported = bench_rollouts(scenarios, episodes=4)
    assert [f.name for f in figures] == [f"run_episode at concurrency {c}" for c in (1, 8, 64)]
    assert all(f.value > 0 for f in figures) and imported >= 0


def test_the_module_runs_as_a_command() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "checks.bench", "--quick", "--no-rollout"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "tool recompute_invoice" in done.stdout and "bench took" in done.stdout
