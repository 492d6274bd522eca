"""The TRL path: the environment adapter TRL sees, the fitted SFT data, the HF policy, and a short
real run (SFT warm start, GRPO through `environment_factory`, eval before/after) end to end.

Run: pytest tests/train/test_trl_runner.py      (about a minute on 2 cores, most of it the run)
"""

from __future__ import annotations

import inspect
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("trl")
pytest.importorskip("peft")

from agent.tiny_model import build_tiny_model
from env.generation.generator import generate
from env.generation.splits import split_seeds
from env.ledger_env import LedgerEnv
from env.scenario import Scenario, ToolCall, Truth, reveal_truth
from env.tools import TOOL_NAMES, BillingTools
from rewards.reward import RewardConfig
from training.data_order import curriculum_seeds
from training.runs import load_run_config
from training.trl.data import corpus_lines, fitted_reference, replay
from training.trl.episode_env import LedgerTrlEnv, tool_format_reward, trl_tool_schemas

SEED = curriculum_seeds("train", ["L1"], 1)[0]


def row(scenario: Scenario) -> dict[str, Any]:
    prompt = [
        {"role": "system", "content": "policy"},
        {"role": "user", "content": scenario.complaint},
    ]
    return {"prompt": prompt, "split": scenario.split, "seed": scenario.seed}


def play(env: LedgerTrlEnv, scenario: Scenario) -> list[str]:
    return [getattr(env, c.name)(**c.arguments) for c in reveal_truth(scenario).reference]


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    scenarios = [generate("train", seed) for seed in split_seeds("train", 3)]
    corpus = list(corpus_lines(scenarios, tool_budget=12))
    return build_tiny_model(corpus=corpus, cache_dir=tmp_path_factory.mktemp("tiny"))


def test_trl_exposes_exactly_the_nine_tools_and_the_ledgergym_reward(
    model_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from datasets import Dataset
    from transformers import AutoTokenizer
    from transformers.utils import get_json_schema
    from trl import GRPOConfig, GRPOTrainer

    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    scenario = generate("train", SEED)
    args = GRPOConfig(
        output_dir=str(model_dir.parent / "probe"),
        per_device_train_batch_size=2,
        num_generations=2,
        use_cpu=True,
        bf16=False,
        activation_checkpointing=False,
        report_to="none",
    )
    trainer = GRPOTrainer(
        model=str(model_dir),
        args=args,
        train_dataset=Dataset.from_list([row(scenario)]),
        processing_class=AutoTokenizer.from_pretrained(model_dir),
        environment_factory=LedgerTrlEnv,
    )
    assert sorted(tool.__name__ for tool in trainer.tools) == sorted(TOOL_NAMES)
    assert trainer.reward_func_names == ["LedgerTrlEnv"]
    assert [get_json_schema(tool) for tool in trainer.tools] == trl_tool_schemas()


def test_tool_methods_keep_the_contract_signatures_and_docstrings() -> None:
    for name in TOOL_NAMES:
        ours, contract = getattr(LedgerTrlEnv, name), getattr(BillingTools, name)
        assert ours.__doc__ == contract.__doc__
        mine = inspect.signature(ours).parameters
        theirs = inspect.signature(contract).parameters
        assert list(mine) == list(theirs)
        assert [p.default for p in mine.values()] == [p.default for p in theirs.values()]
    affected = inspect.signature(LedgerTrlEnv.submit_findings).parameters["affected_invoices"]
    assert affected.annotation == list[dict[str, str]]  # get_json_schema cannot read pydantic


def test_submit_findings_schema_describes_the_affected_invoice_objects() -> None:
    submit = next(s for s in trl_tool_schemas() if s["function"]["name"] == "submit_findings")
    params = submit["function"]["parameters"]
    assert params["required"] == ["root_cause", "affected_invoices", "summary"]
    assert "no_error" in params["properties"]["root_cause"]["enum"]
    assert params["properties"]["affected_invoices"]["items"]["type"] == "object"


def _reachable(obj: object, depth: int, seen: set[int]) -> list[object]:
    if depth == 0 or id(obj) in seen:
        return []
    seen.add(id(obj))
    found = [obj]
    for name in dir(obj):
        if name.startswith("_"):
            continue
        try:
            value = getattr(obj, name)
        except Exception:  # a property that refuses to answer leaks nothing
            continue
        if inspect.ismethod(value) and value.__self__ is obj:
            continue
        found += _reachable(value, depth - 1, seen)
    return found


def test_no_public_member_reaches_the_truth_or_the_database() -> None:
    scenario = generate("train", SEED)
    env = LedgerTrlEnv()
    env.reset(**row(scenario))
    play(env, scenario)
    public = [name for name in dir(env) if not name.startswith("_")]
    assert sorted(public) == sorted([*TOOL_NAMES, "get_reward", "reset"])
    assert all(name.startswith("_") for name in vars(env))
    forbidden = (Truth, Scenario, LedgerEnv, BillingTools, sqlite3.Connection)
    assert not any(isinstance(obj, forbidden) for obj in _reachable(env, 3, set()))


def test_the_reference_solution_scores_full_reward_through_the_tool_methods() -> None:
    scenario = generate("train", SEED)
    env = LedgerTrlEnv(RewardConfig())
    env.reset(**row(scenario))
    results = play(env, scenario)
    assert all(isinstance(text, str) and "error" not in json.loads(text) for text in results)
    assert env.get_reward() == 1.0


def test_an_unsubmitted_over_credit_still_pays_the_false_reversal_penalty() -> None:
    scenario = generate("train", SEED)
    env = LedgerTrlEnv(RewardConfig())
    env.reset(**row(scenario))
    invoices = json.loads(env.list_invoices(customer_id=scenario.customer_id))["invoices"]
    overcharged = reveal_truth(scenario).overcharges
    unaffected = next(  # a zero-amount trial invoice cannot take a credit note
        i["invoice_id"]
        for i in invoices
        if i["invoice_id"] not in overcharged and i["total"] != "0.00"
    )
    env.draft_credit_note(invoice_id=unaffected, amount="0.01", reason="goodwill")
    assert env.get_reward() == -1.0


def test_reset_gives_a_pooled_instance_a_fresh_episode() -> None:
    first, second = generate("train", SEED), generate("train", SEED + 1)
    env = LedgerTrlEnv()
    env.reset(**row(first))
    play(env, first)
    assert env.get_reward() == 1.0
    env.reset(**row(first))  # same scenario again: no credit note, no findings left over
    invoice = reveal_truth(first).reference[-1].arguments["affected_invoices"]
    if invoice:
        detail = json.loads(env.get_invoice(invoice_id=invoice[0]["invoice_id"]))
        assert detail["amount_credited"] == "0.00" and detail["credit_notes"] == []
    assert env.get_reward() == 0.0
    env.reset(**row(second))
    customer = json.loads(env.get_customer(customer_id=second.customer_id))
    assert customer["customer_id"] == second.customer_id


def test_reset_refuses_a_row_whose_prompt_belongs_to_another_scenario() -> None:
    scenario = generate("train", SEED)
    wrong = row(scenario) | {"seed": SEED + 1}
    with pytest.raises(ValueError, match="complaint"):
        LedgerTrlEnv().reset(**wrong)


def test_bad_arguments_reach_the_environment_as_an_error_result() -> None:
    scenario = generate("train", SEED)
    env = LedgerTrlEnv()
    env.reset(**row(scenario))
    result = json.loads(env.get_customer(customer=scenario.customer_id))
    assert "Accepted: {customer_id}" in result["error"]


def test_tool_format_reward_credits_stopping_and_well_formed_calls() -> None:
    call = {"type": "function", "function": {"name": "get_customer", "arguments": {}}}
    bogus = {"type": "function", "function": {"name": "delete_everything", "arguments": {}}}
    broken = {"role": "assistant", "content": '<tool_call>\n{"name": "get_cus'}
    completions = [
        [{"role": "assistant", "tool_calls": [call]}, {"role": "tool", "content": "{}"}],
        [{"role": "assistant", "tool_calls": [bogus]}, {"role": "assistant", "content": "hi"}],
        [broken, {"role": "assistant", "tool_calls": [call]}],
        [{"role": "assistant", "content": "I cannot help."}],
    ]
    eos = 7
    ids = [[1, eos, 2], [3, eos], [4, 5], [eos]]  # the third episode was cut at the length limit
    scores = tool_format_reward(0.2, eos)(completions, ids)
    assert scores == pytest.approx([0.1, 0.1 + 0.025, 0.075, 0.1])


def test_fitted_reference_drops_read_calls_but_keeps_the_credit_and_the_submission() -> None:
    scenario = generate("train", SEED)
    reference = reveal_truth(scenario).reference
    full, score = replay(scenario, reference, 30, RewardConfig())
    assert score == 1.0

    def chars(messages: list[dict[str, Any]]) -> int:
        return sum(len(str(m.get("content"))) + len(str(m.get("tool_calls"))) for m in messages)

    # fitted_reference drops the prose summary first (`_terse`): measure the cut from there
    terse = [
        ToolCall(c.name, {**c.arguments, "summary": ""}) if c.name == "submit_findings" else c
        for c in reference
    ]
    full, _ = replay(scenario, terse, 30, RewardConfig())
    example = fitted_reference(
        scenario,
        max_tokens=chars(full) - 400,
        count_tokens=chars,
        tool_budget=30,
        reward=RewardConfig(),
    )
    assert example is not None and example.tokens <= chars(full) - 400
    names = [m["tool_calls"][0]["function"]["name"] for m in example.messages if "tool_calls" in m]
    assert names[-1] == "submit_findings" and len(names) < len(reference)
    credits = [c.name for c in reference].count("draft_credit_note")
    assert names.count("draft_credit_note") == credits
    assert example.reward == max(example.reward, 0.0) and example.calls_total == len(reference)


def test_warm_start_loss_equals_a_plain_forward_over_assistant_tokens(model_dir: Path) -> None:
    import torch
    import torch.nn.functional as F
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import SFTConfig, SFTTrainer

    from training.trl.phases import Tokens
    from training.trl.sft import _assistant_scored

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    tokens = Tokens(tokenizer, trl_tool_schemas())
    examples = [
        fitted_reference(
            generate("train", seed),
            max_tokens=3900,
            count_tokens=tokens,
            tool_budget=12,
            reward=RewardConfig(),
        )
        for seed in split_seeds("train", 3)
    ]
    tools = json.dumps(trl_tool_schemas())
    rows = [{"messages": ex.messages, "tools": tools} for ex in examples if ex is not None]
    args = SFTConfig(
        output_dir=str(model_dir.parent / "sft-probe"),
        per_device_train_batch_size=3,
        max_length=None,
        assistant_only_loss=True,
        use_cpu=True,
        bf16=False,
        activation_checkpointing=False,
        report_to="none",
    )
    model = AutoModelForCausalLM.from_pretrained(model_dir)
    trainer = _assistant_scored(SFTTrainer)(
        model=model, args=args, train_dataset=Dataset.from_list(rows), processing_class=tokenizer
    )
    batch = next(iter(trainer.get_train_dataloader()))
    shared = trainer.compute_loss(model, dict(batch))
    logits = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits
    labels = batch["labels"][:, 1:]
    scored = labels != -100
    plain = F.cross_entropy(logits[:, :-1][scored], labels[scored])
    assert scored.sum() > 0
    assert torch.allclose(shared, plain, atol=1e-5)


def test_hf_policy_drives_an_episode_through_the_eval_path(model_dir: Path, tmp_path: Path) -> None:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from agent.hf_policy import HfPolicy
    from agent.rollout import RolloutConfig
    from training.trl.report import evaluate

    model = AutoModelForCausalLM.from_pretrained(model_dir).eval()
    policy = HfPolicy(
        model,
        AutoTokenizer.from_pretrained(model_dir),
        max_new_tokens=8,
        render_tools=trl_tool_schemas(),
    )
    result = evaluate(policy, [generate("val", 200_000)], RolloutConfig(max_turns=2), tmp_path)
    assert result.scenarios == 1 and result.success_rate == 0.0
    assert result.episodes[0]["turns"] >= 1


def test_a_short_real_run_writes_metrics_curve_adapter_and_summary(tmp_path: Path) -> None:
    from training.trl.runner import run_trl

    base = load_run_config("cpu-smoke")
    assert base.trl is not None
    run = base.model_copy(
        update={
            "rollout": base.rollout.model_copy(update={"max_tokens": 48, "max_turns": 2}),
            "trl": base.trl.model_copy(
                update={
                    "format_reward": 0.2,  # a 3-step warm start rarely earns LedgerGym reward
                    "max_completion_length": 256,
                    "max_tool_calling_iterations": 2,
                    "sft_batch_size": 2,
                }
            ),
        }
    )
    summary = run_trl(
        run,
        out_dir=tmp_path / "out",
        steps=3,
        # a warm start part-way to the format: turns that end, and some that do not, give the
        # format reward a spread (3 steps left every turn clipped; on world v5's data 10 and 16
        # steps left every turn alike, so no group had a gradient: LoRA unchanged)
        sft_steps=6,
        eval_scenarios=1,
        train_scenarios=8,  # enough groups that one differs in reward (a gradient to apply)
        model_cache=tmp_path / "cache",
    )
    out = tmp_path / "out"
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [1, 2, 3]
    assert {"reward_mean", "reward_std", "terms", "zero_variance_group_share"} <= rows[0].keys()
    assert {"tool_calls_mean", "loss", "step_time_s"} <= rows[0].keys()
    # every episode's tool-call sequence, grouped (training.tool_sequences; the report's diversity)
    assert sum(map(len, rows[0]["group_tool_sequences"])) == rows[0]["episodes"]
    assert "root_cause" in rows[0]["terms"]
    assert (out / "reward_curve.png").stat().st_size > 0
    assert (out / "adapter" / "adapter_model.safetensors").is_file()
    assert (out / "adapter" / "adapter_config.json").is_file()
    assert json.loads((out / "summary.json").read_text())["grpo_steps"] == 3
    assert summary.lora_tensors_changed > 0 and summary.lora_b_max_abs_delta > 0
    assert "loss_type=dapo" in summary.render()


def test_the_trl_path_never_imports_art() -> None:
    import subprocess
    import sys

    code = "import sys, training.trl.runner; assert 'art' not in sys.modules, 'art imported'"
    repo = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=repo, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
