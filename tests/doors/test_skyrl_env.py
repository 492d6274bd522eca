"""The SkyRL door (`doors.skyrl_env`): text in, text out, the rollout's tools, reward and grader.

Episodes are made the SkyRL way (`skyrl_gym.make("billsleuth", env_config=..., extras=...)`) and
played by LedgerGym's program policies whose calls are written as text, as a model writes them.
Skipped where the `[skyrl]` extra is not installed.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("skyrl_gym", reason="needs the [skyrl] extra: pip install -e '.[skyrl]'")

import skyrl_gym

from agent.program_policy import ProgramPolicy, reference_policy
from agent.rollout import RolloutConfig, run_episode
from doors import skyrl_env
from doors.skyrl_env import ENV_CLASS, BillSleuthTextEnv, prompt, register, rows
from doors.text_calls import call_text, read_calls
from env.generation.generator import generate
from env.ledger_env import LedgerEnv, system_prompt
from env.scenario import Scenario, ToolCall, reveal_truth
from rewards.reward import RewardConfig, Variant
from tests.doors.players import eval_scenarios, rollout_reward, uncredited_policy

VARIANTS: tuple[Variant, ...] = ("shaped", "binary")


def make(scenario: Scenario, variant: Variant = "shaped", max_turns: int = 40) -> Any:
    register()
    extras = {"split": scenario.split, "seed": scenario.seed, "max_turns": max_turns}
    return skyrl_gym.make(ENV_CLASS, env_config={"reward": variant}, extras=extras)


def xml_text(name: str, arguments: str) -> str:
    """A call in Qwen3.5's own form (vLLM's qwen3_coder parser reads it)."""
    values = {
        key: value if isinstance(value, str) else json.dumps(value)
        for key, value in json.loads(arguments).items()
    }
    params = "".join(f"<parameter={key}>\n{value}\n</parameter>\n" for key, value in values.items())
    return f"<tool_call>\n<function={name}>\n{params}</function>\n</tool_call>"


def play(env: Any, policy: ProgramPolicy, scenario: Scenario, form: Any = call_text) -> Any:
    """`policy` through the environment, each reply its calls written as text; the last step."""
    messages, _ = env.init(prompt(scenario))
    messages = list(messages)
    while True:
        reply = asyncio.run(policy.respond(messages, [], scenario)).choice.message
        calls = reply.tool_calls or []
        text = "\n".join(form(c.function.name, c.function.arguments) for c in calls)
        out = env.step(text or str(reply.content))
        messages += [{"role": "assistant", "content": text}, *out["observations"]]
        if out["done"]:
            return out


def first_calls(count: int) -> ProgramPolicy:
    def program(scenario: Scenario) -> Generator[ToolCall, str, None]:
        for step in reveal_truth(scenario).reference[:count]:  # noqa: UP028 (a tuple cannot .send)
            yield step

    return ProgramPolicy(f"first-{count}", program)


def test_every_eval_scenario_scores_in_the_environment_what_the_rollout_gives():
    for scenario in eval_scenarios():
        for policy in (reference_policy(), uncredited_policy()):
            for variant in VARIANTS:
                env = make(scenario, variant)
                last = play(env, policy, scenario)
                expected = rollout_reward(policy, scenario, variant)
                where = f"{scenario.scenario_id} {policy.name} {variant}"
                assert last["reward"] == expected.total, where
                metrics = env.get_metrics()
                assert {k: metrics[f"reward/{k}"] for k in expected.terms} == expected.terms, where
                assert last["metadata"]["end_reason"] == "submitted", where


def test_qwen35s_own_call_form_scores_the_same_as_the_json_form():
    for scenario in eval_scenarios(12):
        rewards = [
            play(make(scenario), policy, scenario, form)["reward"]
            for policy in (reference_policy(), uncredited_policy())
            for form in (call_text, xml_text)
        ]
        assert rewards[0] == rewards[1] and rewards[2] == rewards[3], scenario.scenario_id


def test_a_reply_whose_call_cannot_be_read_ends_the_episode_as_a_text_reply():
    [scenario] = eval_scenarios(1)
    env = make(scenario)
    env.init(prompt(scenario))
    for call in reveal_truth(scenario).reference[:2]:
        assert not env.step(call_text(call.name, json.dumps(call.arguments)))["done"]
    last = env.step('<tool_call>\n{"name": "get_invoice", "arguments": {"invoice_id": ')
    assert last["done"] and last["metadata"]["end_reason"] == "text_reply"
    assert last["observations"] == []
    assert last["reward"] == rollout_reward(first_calls(2), scenario, "shaped").total


def test_the_turn_cap_ends_the_episode_as_the_rollouts_turn_budget():
    [scenario] = eval_scenarios(1)
    env = make(scenario, max_turns=3)
    last = play(env, reference_policy(), scenario)
    config = RolloutConfig(max_turns=3, reward=RewardConfig())
    expected = asyncio.run(run_episode(reference_policy(), scenario, config))
    assert expected.stats.end_reason == "turn_budget"
    assert last["metadata"]["end_reason"] == "turn_budget" and env.turns == 3
    assert last["reward"] == expected.reward.total
    assert env.get_metrics()["tool_calls"] == 3.0


def test_tool_results_come_back_as_the_rollouts_text_and_errors_as_results():
    [scenario] = eval_scenarios(1)
    env = make(scenario)
    env.init(prompt(scenario))
    out = env.step(
        call_text("get_customer", json.dumps({"customer_id": scenario.customer_id}))
        + call_text("get_customer", json.dumps({"customer": "x"}))
    )
    twin = LedgerEnv(scenario)
    good = twin.call("get_customer", json.dumps({"customer_id": scenario.customer_id}))
    bad = twin.call("get_customer", json.dumps({"customer": "x"}))
    twin.close()
    assert out["observations"] == [
        {"role": "tool", "content": good},
        {"role": "tool", "content": bad},
    ]
    assert not out["done"] and out["reward"] == 0.0 and env.get_metrics() == {}


def test_init_shows_the_nine_tools_and_refuses_another_scenarios_prompt():
    scenario, other = eval_scenarios(2)
    env = make(scenario)
    messages, _ = env.init(prompt(scenario))
    system = messages[0]["content"]
    for tool in LedgerEnv.tool_specs():
        assert json.dumps(tool, ensure_ascii=False) in system
    assert messages[1] == {"role": "user", "content": scenario.complaint}
    with pytest.raises(ValueError, match="complaint"):
        make(scenario).init(prompt(other))


def test_no_public_attribute_holds_the_scenario_or_the_episode():
    [scenario] = eval_scenarios(1)
    env = make(scenario)
    public = {name: value for name, value in vars(env).items() if not name.startswith("_")}
    # BaseTextEnv's bookkeeping, and the registry spec skyrl_gym.make attaches
    assert set(public) == {"turns", "max_turns", "tool_groups", "tool_to_toolgroup", "spec"}
    assert public["tool_groups"] == [] and public["tool_to_toolgroup"] == {}
    extras = {"split": "eval", "seed": scenario.seed, "max_turns": 40}  # the row, as given
    assert public["spec"].kwargs == {"env_config": {"reward": "shaped"}, "extras": extras}


def test_read_calls_takes_both_forms_and_nothing_else():
    tools = LedgerEnv.tool_specs()
    submit = json.dumps({"root_cause": "no_error", "affected_invoices": [], "summary": "s"})
    assert read_calls(call_text("submit_findings", submit), tools)[0].arguments == submit
    [xml] = read_calls(xml_text("submit_findings", submit), tools)
    assert json.loads(xml.arguments) == json.loads(submit)  # the array read as JSON
    assert read_calls("I think the invoice is wrong.", tools) == []
    assert read_calls("<tool_call>\n{not json}\n</tool_call>", tools) == []
    both = call_text("get_invoice", '{"invoice_id": "in_1"}') + "<tool_call>\n{"
    assert read_calls(both, tools) == []  # an unclosed second call: the reply is text


def test_the_dataset_rows_carry_the_prompt_init_shows_and_the_episodes_settings(tmp_path: Path):
    [row] = rows("eval", 1, 12, "binary")
    scenario = generate(row["split"], row["seed"])
    extras = {k: v for k, v in row.items() if k not in ("prompt", "env_class")}  # as SkyRL does
    env = BillSleuthTextEnv({"reward": "shaped", "tool_budget": 30}, extras)
    assert env.init(row["prompt"])[0] == row["prompt"] and row["env_class"] == ENV_CLASS
    assert row["prompt"][1]["content"] == scenario.complaint
    assert system_prompt(12) in row["prompt"][0]["content"]  # the row's budget, not the config's
    last = play(env, reference_policy(), scenario)
    config = RolloutConfig(tool_budget=12, reward=RewardConfig(variant="binary"))
    expected = asyncio.run(run_episode(reference_policy(), scenario, config)).reward
    assert last["reward"] == expected.total
    with pytest.raises(ValueError, match="reward variant"):
        BillSleuthTextEnv({}, {**extras, "reward_variant": "shapped"})
    assert skyrl_env.main(["--split", "eval", "--limit", "2", "--out", str(tmp_path)]) == 0
    from datasets import Dataset

    written = Dataset.from_parquet(str(tmp_path / "eval.parquet"))
    assert written["seed"] == [100000, 100001] and written["env_class"] == [ENV_CLASS] * 2


def test_the_dataset_command_refuses_an_open_split_without_a_limit(capsys):
    assert skyrl_env.main(["--split", "train", "--out", "unused"]) == 2
    assert "--limit" in capsys.readouterr().err
