"""One process of the episode benchmark: times reference episodes' machinery, prints one JSON line.

`checks.bench_episodes` runs this file's text as `python -c <text> <sizes JSON>` with the working
directory set to the tree under test, so that tree's `env`, `rewards` and `eval` are imported
(cwd comes first on sys.path). The tree may be an older commit, so only APIs unchanged since
62cb402 are used: `generate`, `split_seeds` (from `env.generation`, or `env` before issue 29),
`reveal_truth`, `LedgerEnv`, `record_episode`, `compute_reward`, `grade_episode`, and nothing
from `checks/`. Machinery = reset + the reference
solution's tool calls + reward + grader, on both clocks (thread CPU time and wall).
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from typing import Any

READS = {"get_customer", "list_invoices", "get_invoice", "list_payments",
         "get_subscription_timeline", "get_tax_rate", "recompute_invoice"}  # fmt: skip


def _database_caches() -> list[Callable[[], None]]:
    """The grader's per-image caches (any lru_cache of its diff modules): emptied before each
    timed grade, so the grader figure is the one eval sees when they miss."""
    clears = []
    for name in ("eval.grader", "eval.database_diff"):
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        for value in vars(module).values():
            if getattr(value, "__module__", None) == name and hasattr(value, "cache_clear"):
                clears.append(value.cache_clear)
    return clears


class Clock:
    """Both clocks at once; `lap()` is the time since the previous lap, per clock."""

    def __init__(self) -> None:
        self.cpu, self.wall = time.thread_time(), time.perf_counter()

    def lap(self) -> tuple[float, float]:
        cpu, wall = time.thread_time(), time.perf_counter()
        spent = (cpu - self.cpu, wall - self.wall)
        self.cpu, self.wall = cpu, wall
        return spent


def play(plan: tuple[Any, ...], times: dict[str, list[tuple[float, float]]]) -> None:
    """One reference episode; appends each part's (cpu, wall) seconds to `times`."""
    from env.episode import record_episode
    from env.ledger_env import LedgerEnv
    from eval.grader import grade_episode
    from rewards.reward import compute_reward

    scenario, truth, calls, clears = plan
    clock = Clock()
    env = LedgerEnv(scenario)
    reset = clock.lap()
    spent = [reset]
    for n, (name, arguments) in enumerate(calls):
        env.call(name, arguments)
        call = clock.lap()
        spent.append(call)
        if name in READS:
            times["read_call"].append(call)
        if n == 0:
            times["first_query"].append((reset[0] + call[0], reset[1] + call[1]))
    record = record_episode(env)
    env.close()
    spent.append(clock.lap())
    tools = (sum(s[0] for s in spent), sum(s[1] for s in spent))
    compute_reward(truth, record)
    reward = clock.lap()
    for clear in clears:
        clear()
    clock = Clock()  # the emptying is not timed
    grade_episode(truth, record, scenario.database)
    grader = clock.lap()
    times["reset"].append(reset)
    times["tools"].append(tools)
    times["reward"].append(reward)
    times["grader"].append(grader)
    times["whole"].append((tools[0] + reward[0] + grader[0], tools[1] + reward[1] + grader[1]))


def _medians(times: dict[str, list[tuple[float, float]]]) -> dict[str, dict[str, float]]:
    """Milliseconds, median per figure and clock."""
    return {
        name: {
            "cpu": statistics.median(t[0] for t in values) * 1000,
            "wall": statistics.median(t[1] for t in values) * 1000,
        }
        for name, values in times.items()
    }


def measure(scenarios: int = 50, warm_passes: int = 3, warmup: int = 10) -> dict[str, Any]:
    """First play of `scenarios` eval references (after `warmup` train ones: imports, pools),
    then `warm_passes` replays with the grader's database caches emptied each time."""
    # the generator's room since issue 29 (env/generation/); older trees keep it in env/
    generation = "env.generation" if importlib.util.find_spec("env.generation") else "env"
    generate = importlib.import_module(f"{generation}.generator").generate
    split_seeds = importlib.import_module(f"{generation}.splits").split_seeds
    from env.scenario import reveal_truth

    def plans(split: str, count: int, clears: list[Callable[[], None]]) -> list[tuple[Any, ...]]:
        found = []
        for seed in split_seeds(split, count):
            scenario = generate(split, seed)
            truth = reveal_truth(scenario)
            calls = [(step.name, json.dumps(step.arguments)) for step in truth.reference]
            found.append((scenario, truth, calls, clears))
        return found

    warm_up, played = plans("train", warmup, []), plans("eval", scenarios, [])
    unused: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for plan in warm_up:
        play(plan, unused)
    cold: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for plan in played:
        play(plan, cold)
    clears = _database_caches()
    warm: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for _ in range(warm_passes):
        for plan in played:
            play((*plan[:3], clears), warm)
    return {
        "cold": _medians(cold),
        "warm": _medians(warm),
        "episodes": {"cold": len(played), "warm": len(played) * warm_passes},
        "python": sys.version.split()[0],
    }


if __name__ == "__main__":
    sizes = json.loads(sys.argv[1]) if len(sys.argv) > 1 else {}
    print(json.dumps(measure(**sizes)))
