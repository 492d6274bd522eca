"""Episode machinery in fresh worker processes: figures beside their targets, and A/B ratios.

Each figure is a median over reference episodes on eval, measured by `checks/bench_worker.py` in
a process of its own. Targets are judged on thread CPU time, what the machinery itself costs;
wall time, which on a shared machine is also the other jobs' business, is printed beside it.
Two trees (this checkout and a commit in a temporary `git worktree`) are compared in interleaved
rounds of fresh processes, the order alternating each round: a figure's ratio is the median of
per-round ratios, never one absolute number against another. `--tau2 PATH` times τ²-bench's
retail machinery the same way (`checks/bench_tau2_worker.py`). Run through `python -m
checks.bench` (`--compare REV`, `--tau2 PATH`).
"""

from __future__ import annotations

import json
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from env.cli import UsageError

ROOT = Path(__file__).resolve().parents[1]
WORKER = Path(__file__).with_name("bench_worker.py")
TAU2_WORKER = Path(__file__).with_name("bench_tau2_worker.py")
BASELINE = Path(__file__).with_name("bench_baseline.txt")
WORKER_TIMEOUT_S = 600
Result = dict[str, Any]

# (phase, figure) -> (label, target in ms or None); issue 24's targets, per reference episode
FIGURES: dict[tuple[str, str], tuple[str, float | None]] = {
    ("warm", "whole"): ("episode machinery, replay", 2.0),
    ("cold", "whole"): ("episode machinery, first play", 4.0),
    ("warm", "first_query"): ("reset + first query", 0.1),
    ("warm", "reset"): ("reset (LedgerEnv construction)", None),
    ("warm", "read_call"): ("one read tool call", 0.035),
    ("cold", "read_call"): ("one read tool call, first play", None),
    ("warm", "tools"): ("reset + tool calls, per episode", None),
    ("warm", "reward"): ("reward", 0.4),
    ("warm", "grader"): ("grader (database caches missing)", 0.5),
    ("cold", "reward"): ("reward, first play", None),
    ("cold", "grader"): ("grader, first play", None),
}
GUARDED = ("warm", "whole")  # the figure `--compare` fails on


@dataclass(frozen=True)
class EpisodeSizes:
    scenarios: int = 50  # eval references, each played once cold, then `warm_passes` times
    warm_passes: int = 3
    warmup: int = 10  # train references first: imports, pools and shared strings warm

    @classmethod
    def quick(cls) -> EpisodeSizes:
        return cls(scenarios=6, warm_passes=1, warmup=2)


@dataclass(frozen=True)
class EpisodeFigure:
    phase: str
    name: str
    label: str
    cpu_ms: float  # median over rounds of each process's median
    wall_ms: float
    target_ms: float | None
    ratios: tuple[float, ...] = ()  # this tree / the other, per round (CPU time)
    other_cpu_ms: float | None = None  # the other tree's median over rounds

    @property
    def passed(self) -> bool | None:
        return None if self.target_ms is None else self.cpu_ms <= self.target_ms

    @property
    def ratio(self) -> float | None:
        return statistics.median(self.ratios) if self.ratios else None

    def line(self) -> str:
        value = f"{self.cpu_ms:.4g} ms cpu ({self.wall_ms:.4g} wall)"
        verdict = "" if self.target_ms is None else f"<= {self.target_ms:g}  "
        verdict += {True: "PASS", False: "MISS", None: ""}[self.passed]
        ratio = "" if self.ratio is None else f"x{self.ratio:.3f} "
        if self.other_cpu_ms is not None:
            ratio += f"(other {self.other_cpu_ms:.4g}) "
        ratio += " ".join(f"{r:.2f}" for r in self.ratios)
        return f"{self.label:<34} {value:<32} {verdict:<14} {ratio}"


def run_worker(
    tree: Path, sizes: EpisodeSizes, *, source: Path = WORKER, python: str = sys.executable
) -> Result:
    """One fresh process in `tree` (its modules imported first); the worker's JSON result."""
    done = subprocess.run(
        [python, "-c", source.read_text(encoding="utf-8"), json.dumps(asdict(sizes))],
        cwd=tree,
        capture_output=True,
        text=True,
        timeout=WORKER_TIMEOUT_S,
    )
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise UsageError(f"the benchmark worker failed in {tree}: {last}")
    return json.loads(lines[-1])  # type: ignore[no-any-return]


def _git(*args: str) -> str:
    done = subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True)
    if done.returncode != 0:
        raise UsageError(f"git {args[0]}: {done.stderr.strip() or 'failed'}")
    return done.stdout.strip()


def baseline_commit() -> str:
    """The commit named in checks/bench_baseline.txt (its first line that is not a comment)."""
    lines = BASELINE.read_text(encoding="utf-8").splitlines()
    return next(line.split()[0] for line in lines if line.strip() and not line.startswith("#"))


@contextmanager
def checked_out(rev: str) -> Iterator[Path]:
    """`rev` in a temporary detached `git worktree`, removed afterwards."""
    commit = _git("rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}")
    folder = Path(tempfile.mkdtemp(prefix="ledgergym-bench-"))
    tree = folder / "tree"
    _git("worktree", "add", "--detach", "--quiet", str(tree), commit)
    try:
        yield tree
    finally:
        _git("worktree", "remove", "--force", str(tree))
        shutil.rmtree(folder, ignore_errors=True)


def interleaved(
    runs: dict[str, Callable[[], Result]], rounds: int, say: Callable[[str], None] = print
) -> dict[str, list[Result]]:
    """Each run once per round, the order reversed every other round so drift cancels."""
    results: dict[str, list[Result]] = {name: [] for name in runs}
    names = list(runs)
    for n in range(rounds):
        for name in names if n % 2 == 0 else names[::-1]:
            results[name].append(runs[name]())
        say(f"round {n + 1}/{rounds} done")
    return results


def figures(mine: Sequence[Result], other: Sequence[Result] | None = None) -> list[EpisodeFigure]:
    """This tree's figures (medians over rounds), with per-round ratios to `other`."""
    found = []
    for (phase, name), (label, target) in FIGURES.items():
        cpu = [r[phase][name]["cpu"] for r in mine]
        wall = [r[phase][name]["wall"] for r in mine]
        ratios: tuple[float, ...] = ()
        theirs = None
        if other is not None:
            ratios = tuple(a / r[phase][name]["cpu"] for a, r in zip(cpu, other, strict=True))
            theirs = statistics.median(r[phase][name]["cpu"] for r in other)
        middle = statistics.median(cpu), statistics.median(wall)
        found.append(EpisodeFigure(phase, name, label, *middle, target, ratios, theirs))
    return found


def show(found: Sequence[EpisodeFigure], say: Callable[[str], None] = print) -> None:
    for figure in found:
        say(figure.line())
    misses = [f.label for f in found if f.passed is False]
    say(f"{len(misses)} of {sum(f.target_ms is not None for f in found)} episode targets missed")


def compare(
    rev: str, rounds: int, sizes: EpisodeSizes, say: Callable[[str], None] = print
) -> list[EpisodeFigure]:
    """This checkout against `rev`, interleaved; ratios are this tree's time over rev's."""
    with checked_out(rev) as tree:
        say(f"comparing {ROOT} with {rev} ({tree}), {rounds} rounds of fresh processes")
        results = interleaved(
            {"this": lambda: run_worker(ROOT, sizes), "other": lambda: run_worker(tree, sizes)},
            rounds,
            say,
        )
    found = figures(results["this"], results["other"])
    say(f"figure{'':<28} this tree{'':<23} target        ratio to {rev[:12]} (median; per round)")
    show(found, say)
    return found


def guard(found: Sequence[EpisodeFigure], max_ratio: float, say: Callable[[str], None]) -> int:
    """Exit status of `--compare`: 1 when the replay machinery's median ratio is above the cap."""
    whole = next(f for f in found if (f.phase, f.name) == GUARDED)
    ratio = whole.ratio if whole.ratio is not None else 0.0
    verdict = "FAIL" if ratio > max_ratio else "ok"
    say(f"guard: {whole.label} x{ratio:.3f} (cap x{max_ratio:g}): {verdict}")
    return 1 if ratio > max_ratio else 0


def side_by_side(
    tau2: Path, rounds: int, sizes: EpisodeSizes, say: Callable[[str], None] = print
) -> float:
    """LedgerGym against τ²-bench retail, interleaved: median of per-round ratios of the replay
    machinery per episode (τ² / LedgerGym). `tau2` is a tau2-bench checkout; its own `.venv`
    interpreter is used when it has one."""
    if not (tau2 / "src" / "tau2").is_dir():
        raise UsageError(f"--tau2: {tau2} is not a tau2-bench checkout (no src/tau2)")
    python = tau2 / ".venv" / "bin" / "python"
    results = interleaved(
        {
            "ledgergym": lambda: run_worker(ROOT, sizes),
            "tau2": lambda: run_worker(
                tau2,
                sizes,
                source=TAU2_WORKER,
                python=str(python) if python.exists() else sys.executable,
            ),
        },
        rounds,
        say,
    )
    ours = [r["warm"]["whole"]["cpu"] for r in results["ledgergym"]]
    theirs = [r["warm"]["whole"]["cpu"] for r in results["tau2"]]
    ratios = [t / o for t, o in zip(theirs, ours, strict=True)]
    say(
        f"machinery per episode, replay: LedgerGym {statistics.median(ours):.3g} ms, "
        f"τ²-bench retail {statistics.median(theirs):.3g} ms (cpu); τ²/LedgerGym "
        f"x{statistics.median(ratios):.1f} (per round: {' '.join(f'{r:.1f}' for r in ratios)})"
    )
    return statistics.median(ratios)
