"""A small ART run and a scripted model for driving `training.art.loop.train` on CPU.

The scripted model answers with each scenario's reference investigation, except in the
"varied" scenarios, where every other episode gives up at its first turn: those groups get
unequal rewards, every other group equal ones. It is served over HTTP on 127.0.0.1
(tests.support.scripted_server) and reached through ART's own client, as vLLM would be.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from env.generation.generator import generate
from env.scenario import Scenario, reveal_truth
from tests.support.scripted_server import ScriptedOpenAIServer, text_turn, tool_call_turn
from tests.train.backend_double import FakeBackendForTests
from training.art.validation import validation_scenarios
from training.data_order import DataPlan, plan_data
from training.probe import probe_seeds
from training.runs import RunConfig

QUIT_REPLY = "I cannot tell from here."


def small_run(path: Path, **sections: dict[str, Any]) -> RunConfig:
    """3 GRPO steps of 3 groups x 2 rollouts (no oversampling), validation every 2 steps on 2
    val scenarios, no probe: the tests of those turn them on."""
    data: dict[str, Any] = {
        "name": "loop-test",
        "trainer": "art",
        "base_model": "Qwen/Qwen3.5-4B",
        "seed": 7,
        "reward": {"variant": "shaped"},
        "data": {"split": "train", "limit": 30, "curriculum": ["L1", "L2", "L3"]},
        "grpo": {
            "group_size": 2,
            "groups_per_step": 3,
            "oversample": 1.0,
            "max_steps": 3,
            "wall_clock_hours": 1.0,
        },
        "probe": {"enabled": False},
        "validation": {"every_steps": 2, "split": "val", "limit": 2},
        "backend": {"kind": "local", "path": str(path), "project": "tests"},
    }
    for name, values in sections.items():
        data[name] = {**data.get(name, {}), **values}
    return RunConfig.model_validate(data)


class ReferenceOrQuit:
    """Responder: the scenario's reference call for this turn; in a "varied" scenario every 2nd
    episode quits at its first turn (an outcome spread); in a "padded" one every 2nd episode
    first makes one extra, harmless call (the same outcome, one more tool call)."""

    def __init__(self, scenarios: Iterable[Scenario], varied: set[str]) -> None:
        self.by_complaint = {scenario.complaint: scenario for scenario in scenarios}
        self.varied = varied
        self.padded: set[str] = set()
        self.episodes: Counter[str] = Counter()
        self._lock = threading.Lock()

    def scenario_of(self, body: dict[str, Any]) -> Scenario:
        complaint = next(m["content"] for m in body["messages"] if m["role"] == "user")
        return self.by_complaint[complaint]

    def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        scenario = self.scenario_of(body)
        turns = [m for m in body["messages"] if m["role"] == "assistant"]
        if not turns:
            with self._lock:
                self.episodes[scenario.scenario_id] += 1
                count = self.episodes[scenario.scenario_id]
            if count % 2 == 0 and scenario.scenario_id in self.varied:
                return text_turn(QUIT_REPLY)
            if count % 2 == 0 and scenario.scenario_id in self.padded:
                return tool_call_turn(*PADDING_CALL)
        padded = bool(turns) and _is_padding(turns[0])
        call = reveal_truth(scenario).reference[len(turns) - padded]
        return tool_call_turn(call.name, call.arguments)


# an extra read the reference never makes: an error result, so no number it prints is cited
PADDING_CALL = ("get_tax_rate", {"jurisdiction": "XX-PADDING", "date": "2000-01-01"})


def _is_padding(turn: dict[str, Any]) -> bool:
    calls = turn.get("tool_calls") or []
    return bool(calls) and "XX-PADDING" in calls[0]["function"]["arguments"]


class FailOnceServer(ScriptedOpenAIServer):
    """Answers the first turn of one scenario's first episode with a 403 (a failed rollout: a
    refusal is not retried; a 400 would be, as a request the conversation provoked)."""

    def __init__(self, responder: ReferenceOrQuit, fail_scenario: str) -> None:
        super().__init__(responder)
        self.script = responder
        self.fail_scenario = fail_scenario
        self.failed = 0
        self._fail_lock = threading.Lock()

    def handle_chat(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        fresh = not any(m["role"] == "assistant" for m in body["messages"])
        if fresh and self.script.scenario_of(body).scenario_id == self.fail_scenario:
            with self._fail_lock:
                fail, self.failed = self.failed == 0, 1
            if fail:
                error = {"message": "scripted refusal", "type": "permission_error"}
                return 403, {"error": error}
        return super().handle_chat(body)


def known_scenarios(run: RunConfig, data: DataPlan, steps: int) -> list[Scenario]:
    """Every scenario the loop will ask about: the steps', the probe's and validation's."""
    train = {seed for step in range(steps) for seed in data.batch(step)}
    if run.probe.enabled:
        train |= set(probe_seeds(data, run.probe.scenarios, data.split))
    return [generate(run.data.split, seed) for seed in sorted(train)] + validation_scenarios(run)


def varied_scenarios(run: RunConfig, data: DataPlan, steps: int) -> set[str]:
    """The first scenario of every batch gets unequal rewards; the others equal ones."""
    return {f"{run.data.split}-{data.batch(step)[0]}" for step in range(steps)}


def scripted_model(run: RunConfig, steps: int) -> tuple[DataPlan, ReferenceOrQuit]:
    data = plan_data(run)
    for step in range(steps):
        assert len(set(data.batch(step))) == data.scenarios_per_step  # distinct scenarios
    responder = ReferenceOrQuit(
        known_scenarios(run, data, steps), varied_scenarios(run, data, steps)
    )
    return data, responder


def fake_backend(run: RunConfig, server: ScriptedOpenAIServer) -> FakeBackendForTests:
    return FakeBackendForTests(path=run.backend.path, inference_base_url=server.base_url)
