"""The τ²-bench side of `python -m checks.bench --tau2 PATH`: retail machinery per episode, as JSON.

Run as `python -c <this file's text> <sizes JSON>` with the working directory set to a
tau2-bench checkout (its `src/` is put first on sys.path). An episode's machinery, as in
`checks/bench_worker.py`: reset (`get_environment()`, which loads the retail database), the
task's gold actions as assistant tool calls (`Environment.get_response`), and the reward
(`EnvironmentEvaluator.calculate_reward`, which replays the gold actions in a second
environment and compares database hashes). No model, no user simulator. Written against
tau2-bench's public API; not run in this repository's CI (it needs a checkout).
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from typing import Any

sys.path.insert(0, "src")


def play(task: Any, times: dict[str, list[tuple[float, float]]]) -> None:
    from tau2.data_model.message import AssistantMessage, ToolCall
    from tau2.domains.retail.environment import get_environment
    from tau2.evaluator.evaluator_env import EnvironmentEvaluator

    cpu, wall = time.thread_time(), time.perf_counter()
    env = get_environment()
    trajectory: list[Any] = []
    for n, action in enumerate(task.evaluation_criteria.actions):
        call = ToolCall(
            id=f"call-{n}", name=action.name, arguments=action.arguments,
            requestor=action.requestor,
        )  # fmt: skip
        trajectory.append(AssistantMessage(role="assistant", content=None, tool_calls=[call]))
        trajectory.append(env.get_response(call))
    EnvironmentEvaluator.calculate_reward(
        environment_constructor=get_environment, task=task, full_trajectory=trajectory
    )
    times["whole"].append((time.thread_time() - cpu, time.perf_counter() - wall))


def measure(scenarios: int = 50, warm_passes: int = 3, warmup: int = 10) -> dict[str, Any]:
    from tau2.domains.retail.environment import get_tasks

    tasks = [t for t in get_tasks() if t.evaluation_criteria and t.evaluation_criteria.actions]
    unused: dict[str, list[tuple[float, float]]] = {"whole": []}
    for task in tasks[-warmup:]:
        play(task, unused)
    played = tasks[:scenarios]
    cold: dict[str, list[tuple[float, float]]] = {"whole": []}
    for task in played:
        play(task, cold)
    warm: dict[str, list[tuple[float, float]]] = {"whole": []}
    for _ in range(warm_passes):
        for task in played:
            play(task, warm)

    def medians(times: dict[str, list[tuple[float, float]]]) -> dict[str, dict[str, float]]:
        return {
            name: {"cpu": statistics.median(t[0] for t in v) * 1000,
                   "wall": statistics.median(t[1] for t in v) * 1000}
            for name, v in times.items()
        }  # fmt: skip

    return {
        "cold": medians(cold),
        "warm": medians(warm),
        "episodes": {"cold": len(played), "warm": len(played) * warm_passes},
    }


if __name__ == "__main__":
    sizes = json.loads(sys.argv[1]) if len(sys.argv) > 1 else {}
    print(json.dumps(measure(**sizes)))
