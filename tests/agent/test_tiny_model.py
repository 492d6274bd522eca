"""The offline tiny model: chat template, TRL tool-call parsing, deterministic cached builds, and
(slow) two GRPO steps with `environment_factory` + LoRA on CPU after a short SFT warm start.

Run: pytest tests/agent/test_tiny_model.py            (all, about 30 s on 2 cores)
     pytest tests/agent/test_tiny_model.py -m "not slow"
"""

from __future__ import annotations

import json
import os
import random
from pathlib import Path

import pytest

pytest.importorskip("transformers")
pytest.importorskip("tokenizers")
pytest.importorskip("trl")

from transformers import AutoModelForCausalLM, AutoTokenizer
from trl.chat_template_utils import (
    is_chat_template_prefix_preserving,
    is_chat_template_stop_token_trained,
    parse_response,
    supports_tool_calling,
)

from agent.tiny_model import END_OF_TURN, PAD_TOKEN, build_tiny_model, resolve_base_model


class AdderEnv:
    """Toy environment: one tool; the reward says whether the right sum was looked up."""

    def __init__(self) -> None:
        self.target = 0
        self.calls: list[tuple[int, int]] = []

    def reset(self, a: int, b: int, **row: object) -> None:
        # TRL passes the whole dataset row (prompt included) as keyword arguments.
        self.target = a + b
        self.calls = []

    def add(self, a: int, b: int) -> str:
        """Add two integers and return their sum.

        Args:
            a: The first addend.
            b: The second addend.

        Returns:
            The sum, as decimal text.
        """
        self.calls.append((a, b))
        return str(a + b)

    def get_reward(self) -> float:
        if any(a + b == self.target for a, b in self.calls):
            return 1.0
        return 0.2 if self.calls else 0.0  # partial credit keeps group rewards from all tying


def conversation(a: int, b: int) -> list[dict]:
    call = {"type": "function", "function": {"name": "add", "arguments": {"a": a, "b": b}}}
    return [
        {"role": "user", "content": f"What is {a} + {b}?"},
        {"role": "assistant", "content": "", "tool_calls": [call]},
        {"role": "tool", "name": "add", "content": str(a + b)},
        {"role": "assistant", "content": f"The answer is {a + b}."},
    ]


def synthetic_corpus(size: int = 300, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    words = ["invoice", "refund", "credit", "customer", "plan", "upgrade", "charge", "dispute"]
    prose = [" ".join(rng.choices(words, k=10)) + f" {rng.randint(1, 999)}.00" for _ in range(size)]
    turns = [json.dumps(conversation(rng.randint(0, 99), rng.randint(0, 99))) for _ in range(size)]
    return prose + turns


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_model(corpus=synthetic_corpus(), cache_dir=tmp_path_factory.mktemp("cache"))


@pytest.fixture(scope="module")
def tokenizer(model_dir: Path):
    return AutoTokenizer.from_pretrained(model_dir)


@pytest.fixture(scope="module")
def add_tool():
    return AdderEnv().add


def test_template_renders_a_three_turn_tool_conversation(tokenizer, add_tool) -> None:
    messages = [{"role": "system", "content": "You add numbers."}, *conversation(3, 4)]
    text = tokenizer.apply_chat_template(messages, tools=[add_tool], tokenize=False)
    assert text.startswith("<|im_start|>system\nYou add numbers.\n\n# Tools\n")
    assert '"name": "add", "description": "Add two integers and return their sum."' in text
    assert text.endswith(
        "<|im_start|>user\nWhat is 3 + 4?<|im_end|>\n"
        "<|im_start|>assistant\n<tool_call>\n"
        '{"name": "add", "arguments": {"a": 3, "b": 4}}\n</tool_call><|im_end|>\n'
        "<|im_start|>tool\n<tool_response>\n7\n</tool_response><|im_end|>\n"
        "<|im_start|>assistant\nThe answer is 7.<|im_end|>\n"
    )


def test_template_is_prefix_preserving_at_every_cut(tokenizer, add_tool) -> None:
    messages = [{"role": "system", "content": "You add numbers."}, *conversation(12, 30)]

    def ids(cut: int, generation_prompt: bool) -> list[int]:
        return tokenizer.apply_chat_template(
            messages[:cut],
            tools=[add_tool],
            add_generation_prompt=generation_prompt,
            tokenize=True,
            return_dict=False,
        )

    full = ids(len(messages), False)
    for cut in range(1, len(messages)):
        assert full[: len(ids(cut, False))] == ids(cut, False)
        if messages[cut]["role"] == "assistant":  # the prompt TRL generates from
            assert full[: len(ids(cut, True))] == ids(cut, True)


def test_trl_accepts_the_template_for_multi_turn_training(tokenizer) -> None:
    assert supports_tool_calling(tokenizer)
    assert is_chat_template_prefix_preserving(tokenizer)
    assert is_chat_template_stop_token_trained(tokenizer)  # <|im_end|> is inside the SFT loss mask


def test_tool_calls_round_trip_through_trls_parser(tokenizer, add_tool) -> None:
    calls = [
        {"type": "function", "function": {"name": "add", "arguments": {"a": 3, "b": 4}}},
        {"type": "function", "function": {"name": "add", "arguments": {"a": 10, "b": -2}}},
    ]
    reply = {"role": "assistant", "content": "Adding both.", "tool_calls": calls}
    prompt = [{"role": "user", "content": "Add 3 and 4, then 10 and -2."}]
    prompt_ids = tokenizer.apply_chat_template(
        prompt, tools=[add_tool], add_generation_prompt=True, tokenize=True, return_dict=False
    )
    full_ids = tokenizer.apply_chat_template(
        [*prompt, reply], tools=[add_tool], tokenize=True, return_dict=False
    )
    end = full_ids.index(tokenizer.eos_token_id, len(prompt_ids))
    generated = full_ids[len(prompt_ids) : end + 1]
    parsed = parse_response(tokenizer, generated, prefix=prompt_ids, tools=[add_tool])
    assert parsed == reply


def test_a_broken_tool_call_falls_back_to_plain_content(tokenizer) -> None:
    generated = tokenizer('<tool_call>\n{"name": "add", "argu<|im_end|>')["input_ids"]
    parsed = parse_response(tokenizer, generated, prefix=[], tools=None)
    assert "tool_calls" not in parsed
    assert parsed["content"].startswith("<tool_call>")


def test_saved_tokenizer_ends_turns_with_eos_and_pads_with_its_own_token(
    tokenizer, model_dir: Path
) -> None:
    model = AutoModelForCausalLM.from_pretrained(model_dir)
    assert tokenizer.eos_token == END_OF_TURN
    assert tokenizer.pad_token == PAD_TOKEN
    assert tokenizer.response_template["start_anchor"] == "<|im_start|>assistant\n"
    assert model.config.eos_token_id == tokenizer.eos_token_id
    assert model.generation_config.eos_token_id == tokenizer.eos_token_id
    assert model.config.vocab_size == len(tokenizer)
    assert tokenizer.convert_tokens_to_ids("<tool_call>") != tokenizer.unk_token_id


def test_build_is_deterministic_and_cached(tmp_path: Path) -> None:
    corpus = synthetic_corpus(size=120, seed=7)
    first = build_tiny_model(corpus=corpus, cache_dir=tmp_path / "a")
    second = build_tiny_model(corpus=corpus, cache_dir=tmp_path / "b")
    assert first.name == second.name
    files = sorted(path.name for path in first.iterdir())
    assert {"model.safetensors", "tokenizer.json", "chat_template.jinja"} <= set(files)
    assert files == sorted(path.name for path in second.iterdir())
    for name in files:
        assert (first / name).read_bytes() == (second / name).read_bytes(), name

    stamp = (first / "model.safetensors").stat().st_mtime_ns
    assert build_tiny_model(corpus=iter(corpus), cache_dir=tmp_path / "a") == first
    assert (first / "model.safetensors").stat().st_mtime_ns == stamp
    assert build_tiny_model(corpus=corpus[1:], cache_dir=tmp_path / "a") != first


def test_resolve_base_model_builds_local_models_and_passes_hub_ids_through(
    tmp_path: Path,
) -> None:
    assert resolve_base_model("Qwen/Qwen3.5-0.8B") == "Qwen/Qwen3.5-0.8B"
    corpus = synthetic_corpus(size=50)
    built = resolve_base_model("local:tiny-qwen3", corpus=corpus, cache_dir=tmp_path)
    assert built == build_tiny_model(corpus=corpus, cache_dir=tmp_path)
    with pytest.raises(ValueError, match="corpus"):
        resolve_base_model("local:tiny-qwen3")
    with pytest.raises(ValueError, match="Unknown tiny model"):
        resolve_base_model("local:huge", corpus=corpus, cache_dir=tmp_path)


def warm_start(model_dir: Path, tokenizer, out_dir: Path, add_tool) -> Path:
    """Supervised steps on reference conversations, so the random model emits tool calls at all."""
    from datasets import Dataset
    from transformers.utils import get_json_schema
    from trl import SFTConfig, SFTTrainer

    rng = random.Random(0)
    tools = json.dumps([get_json_schema(add_tool)])  # a string column keeps Arrow out of the schema
    rows = [
        {"messages": conversation(rng.randint(0, 99), rng.randint(0, 99)), "tools": tools}
        for _ in range(200)
    ]
    args = SFTConfig(
        output_dir=str(out_dir / "sft"),
        max_steps=100,
        per_device_train_batch_size=8,
        learning_rate=3e-3,
        lr_scheduler_type="constant",
        assistant_only_loss=True,
        use_cpu=True,
        bf16=False,
        activation_checkpointing=False,  # TRL defaults it on; slow on CPU
        save_strategy="no",
        report_to="none",
        disable_tqdm=True,
        seed=0,
    )
    model = AutoModelForCausalLM.from_pretrained(model_dir)
    trainer = SFTTrainer(
        model=model, args=args, train_dataset=Dataset.from_list(rows), processing_class=tokenizer
    )
    trainer.train()
    trainer.save_model(str(out_dir / "warm"))
    return out_dir / "warm"


@pytest.fixture
def one_torch_thread():
    """Tiny matrices gain nothing from threads; on a busy 2-core box spinning threads stall."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.mark.slow
@pytest.mark.usefixtures("one_torch_thread")
def test_two_grpo_steps_with_an_environment_train_the_lora_adapter(
    model_dir: Path, tokenizer, add_tool, tmp_path: Path
) -> None:
    pytest.importorskip("peft")
    import torch
    from datasets import Dataset
    from peft import LoraConfig
    from trl import GRPOConfig, GRPOTrainer

    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    warm = warm_start(model_dir, tokenizer, tmp_path, add_tool)
    seen_environments: list[object] = []

    def answered(completions: list[list[dict]], environments: list[AdderEnv], **_: object):
        seen_environments.extend(environments)
        pairs = zip(completions, environments, strict=True)
        return [float(str(env.target) in turns[-1]["content"]) for turns, env in pairs]

    rng = random.Random(1)
    rows = []
    for _ in range(8):
        a, b = rng.randint(0, 99), rng.randint(0, 99)
        rows.append(
            {"prompt": [{"role": "user", "content": f"What is {a} + {b}?"}], "a": a, "b": b}
        )
    args = GRPOConfig(
        output_dir=str(tmp_path / "grpo"),
        max_steps=2,
        per_device_train_batch_size=4,
        num_generations=4,
        max_completion_length=64,
        max_tool_calling_iterations=2,
        learning_rate=1e-3,
        use_cpu=True,
        bf16=False,
        activation_checkpointing=False,  # TRL defaults it on; slow on CPU
        save_strategy="steps",
        save_steps=2,
        logging_steps=1,
        report_to="none",
        disable_tqdm=True,
        seed=0,
    )
    lora = LoraConfig(
        r=8,
        lora_alpha=16,
        target_modules=["q_proj", "k_proj", "v_proj", "o_proj"],
        task_type="CAUSAL_LM",
    )
    trainer = GRPOTrainer(
        model=str(warm),
        reward_funcs=[answered],
        args=args,
        train_dataset=Dataset.from_list(rows),
        processing_class=tokenizer,
        peft_config=lora,
        environment_factory=AdderEnv,
    )
    before = {n: p.detach().clone() for n, p in trainer.model.named_parameters() if "lora_" in n}
    trainer.train()

    after = dict(trainer.model.named_parameters())
    assert before and any(not torch.equal(before[n], after[n].detach()) for n in before)
    logs = [entry for entry in trainer.state.log_history if "tools/call_frequency" in entry]
    assert len(logs) == 2 and any(entry["tools/call_frequency"] > 0 for entry in logs)
    assert all("rewards/AdderEnv/mean" in entry for entry in logs)
    assert seen_environments and all(isinstance(env, AdderEnv) for env in seen_environments)
    assert (tmp_path / "grpo" / "checkpoint-2" / "adapter_model.safetensors").is_file()
