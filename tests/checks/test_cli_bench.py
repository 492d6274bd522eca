"""`python -m checks.bench`: every figure is measured, judged against its target, and saved.

Only the shape and the verdicts are tested, never the timings themselves (this machine is
shared); the command runs in-process through `main(argv)` with `--quick`, and once as a real
subprocess. `--compare` runs one round against the baseline commit in a temporary worktree;
`--tau2` runs against a stand-in checkout written here (the real one is not available). The
rollout part needs ART, which the test session has already imported.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from checks import bench_episodes
from checks.bench import Figure, bench_rollouts, main, p99
from checks.bench_episodes import FIGURES, EpisodeFigure, figures, guard, interleaved
from env.generation.generator import generate
from env.generation.splits import split_seeds
from env.tools import TOOL_NAMES

ROOT = Path(__file__).resolve().parents[2]
LABELS = {label for label, _ in FIGURES.values()}


def test_a_figure_under_its_ceiling_passes_and_over_it_misses() -> None:
    assert Figure("reset", 0.1, "ms median", 0.2).passed is True
    assert Figure("reset", 0.3, "ms median", 0.2).passed is False
    assert Figure("generation", 250, "scenarios/s", 200, higher_is_better=True).passed is True
    assert Figure("size", 4096, "bytes").passed is None
    assert Figure("reset", 0.3, "ms median", 0.2).line().endswith("target <= 0.2  MISS")


def test_p99_is_an_observed_value() -> None:
    assert p99([float(n) for n in range(1, 101)]) == 100.0
    assert p99([3.0]) == 3.0


def test_the_episode_targets_are_issue_24s() -> None:
    targets = {label: target for label, target in FIGURES.values() if target is not None}
    assert targets == {
        "episode machinery, replay": 2.0,
        "episode machinery, first play": 4.0,
        "reset + first query": 0.1,
        "one read tool call": 0.035,
        "reward": 0.4,
        "grader (database caches missing)": 0.5,
    }


def _result(scale: float) -> dict[str, dict[str, dict[str, dict[str, float]]]]:
    """A worker result whose every figure is `scale` ms."""
    phases: dict[str, dict[str, dict[str, float]]] = {"warm": {}, "cold": {}}
    for phase, name in FIGURES:
        phases[phase][name] = {"cpu": scale, "wall": scale * 2}
    return phases  # type: ignore[return-value]


def test_ratios_are_per_round_and_their_median_is_the_figures_ratio() -> None:
    found = figures([_result(1.0), _result(1.0), _result(3.0)], [_result(2.0)] * 3)
    whole = next(f for f in found if f.label == "episode machinery, replay")
    assert whole.ratios == (0.5, 0.5, 1.5) and whole.ratio == 0.5
    assert whole.cpu_ms == 1.0 and whole.wall_ms == 2.0 and whole.passed is True
    assert whole.other_cpu_ms == 2.0 and "x0.500 (other 2) 0.50 0.50 1.50" in whole.line()


def test_the_guard_fails_only_above_its_cap(capsys: pytest.CaptureFixture[str]) -> None:
    def whole(ratio: float) -> list[EpisodeFigure]:
        return [EpisodeFigure("warm", "whole", "episode machinery, replay", 1, 1, 2, (ratio,))]

    assert guard(whole(1.29), 1.3, print) == 0
    assert guard(whole(1.31), 1.3, print) == 1
    assert "FAIL" in capsys.readouterr().out


def test_rounds_alternate_which_tree_goes_first() -> None:
    order: list[str] = []
    runs = {"a": lambda: order.append("a") or {}, "b": lambda: order.append("b") or {}}
    interleaved(runs, 4, say=lambda _: None)  # type: ignore[arg-type]
    assert order == ["a", "b", "b", "a", "a", "b", "b", "a"]


def test_the_named_baseline_is_a_commit_of_this_repository() -> None:
    commit = bench_episodes.baseline_commit()
    done = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--verify", "--quiet", f"{commit}^{{commit}}"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, commit


def test_quick_bench_measures_every_tool_and_episode_figure_and_writes_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "bench.json"
    assert main(["--quick", "--no-rollout", "--no-baseline", "--json", str(path)]) == 0
    report = json.loads(path.read_text(encoding="utf-8"))
    figures = report["figures"]
    for name in TOOL_NAMES:
        assert figures[f"tool {name}"]["target"] == 0.1
        assert figures[f"tool {name}"]["extra"]["calls"] > 0
        assert "error results" not in figures[f"tool {name}"]["extra"], name
    assert figures["generation (wall clock)"]["target"] == 200
    assert figures["database size"]["value"] > 10_000
    episode = report["episode_figures"]
    assert set(episode) == LABELS
    assert all(f["cpu_ms"] > 0 and f["ratio"] is None for f in episode.values())
    out = capsys.readouterr().out
    assert "targets missed" in out and ("PASS" in out or "MISS" in out)


def test_compare_runs_interleaved_rounds_against_the_baseline_and_cleans_up(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "compare.json"
    baseline = bench_episodes.baseline_commit()
    argv = ["--compare", baseline, "--rounds", "1", "--quick", "--json", str(path)]
    assert main(argv) in (0, 1)  # one quick round on a shared machine: the verdict may flip
    report = json.loads(path.read_text(encoding="utf-8"))
    assert set(report["figures"]) == LABELS
    assert all(len(f["ratios"]) == 1 and f["ratio"] > 0 for f in report["figures"].values())
    out = capsys.readouterr().out
    assert "round 1/1 done" in out and "guard:" in out
    worktrees = subprocess.run(
        ["git", "-C", str(ROOT), "worktree", "list"], capture_output=True, text=True
    ).stdout
    assert "ledgergym-bench-" not in worktrees


@pytest.mark.parametrize(
    "argv",
    [
        ["--compare", "no-such-revision-anywhere", "--rounds", "1"],
        ["--compare", "HEAD", "--tau2", "."],
        ["--tau2", "/nonexistent/tau2-bench"],
        ["--quick", "--json", "/no/such/folder/bench.json"],
    ],
)
def test_a_usage_mistake_is_one_line_and_status_two(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    assert capsys.readouterr().err.count("\n") == 1


_FAKE_TAU2 = {
    "data_model/message.py": (
        "class ToolCall:\n"
        "    def __init__(self, **kw): self.__dict__.update(kw)\n"
        "class AssistantMessage(ToolCall): pass\n"
    ),
    "domains/retail/environment.py": (
        "class _Env:\n"
        "    def get_response(self, call): return {'id': call.id, 'content': '{}'}\n"
        "class _Criteria:\n"
        "    actions = [type('A', (), {'name': 'find', 'arguments': {}, 'requestor': 'a'})]\n"
        "class _Task:\n"
        "    evaluation_criteria = _Criteria()\n"
        "def get_environment(): return _Env()\n"
        "def get_tasks(): return [_Task() for _ in range(12)]\n"
    ),
    "evaluator/evaluator_env.py": (
        "class EnvironmentEvaluator:\n"
        "    @classmethod\n"
        "    def calculate_reward(cls, environment_constructor, task, full_trajectory):\n"
        "        return 1.0\n"
    ),
}


def test_the_tau2_side_runs_in_a_checkout_of_its_own(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A stand-in with tau2-bench's API shape: only the plumbing is tested here."""
    for relative, text in _FAKE_TAU2.items():
        path = tmp_path / "src" / "tau2" / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    assert main(["--tau2", str(tmp_path), "--rounds", "1", "--quick"]) == 0
    assert "τ²/LedgerGym" in capsys.readouterr().out


def test_reference_rollouts_run_at_each_concurrency() -> None:
    scenarios = [generate("eval", seed) for seed in split_seeds("eval")[:2]]
    figures, imported = bench_rollouts(scenarios, episodes=4)
    assert [f.name for f in figures] == [f"run_episode at concurrency {c}" for c in (1, 8, 64)]
    assert all(f.value > 0 for f in figures) and imported >= 0


def test_the_module_runs_as_a_command() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "checks.bench", "--quick", "--no-rollout", "--no-baseline"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "tool recompute_invoice" in done.stdout and "bench took" in done.stdout
    assert "episode machinery, replay" in done.stdout
