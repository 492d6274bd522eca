"""training.art.adapter_files: a LoRA adapter counts only when its safetensors header fits the file
and holds a lora_A/lora_B pair for every target module of the run (a cut save is refused)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.train.adapter_fixtures import lora_shapes, safetensors_bytes, write_lora_adapter
from training.art import run_state
from training.art.adapter_files import adapter_problem, read_safetensors_header
from training.runs import ALL_LINEAR, load_run_config

QWEN35_TARGETS = load_run_config("binary-01").lora.target_modules


def weights_of(checkpoint: Path) -> Path:
    return checkpoint / "adapter_model.safetensors"


def test_a_whole_adapter_with_a_pair_per_target_module_is_accepted(tmp_path):
    write_lora_adapter(tmp_path, QWEN35_TARGETS, rank=16, layers=2)
    assert adapter_problem(tmp_path, QWEN35_TARGETS) is None
    assert run_state.holds_adapter(tmp_path, QWEN35_TARGETS)
    assert len(read_safetensors_header(weights_of(tmp_path))) == 2 * 2 * len(QWEN35_TARGETS)


@pytest.mark.parametrize("cut", [1, 64, 200])
def test_a_truncated_file_is_refused(tmp_path, cut):
    weights = write_lora_adapter(tmp_path, QWEN35_TARGETS, rank=16)
    weights.write_bytes(weights.read_bytes()[:-cut])
    problem = adapter_problem(tmp_path, QWEN35_TARGETS)
    assert problem is not None and "adapter_model.safetensors" in problem
    assert not run_state.holds_adapter(tmp_path, QWEN35_TARGETS)


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b"\x00" * 64, "not JSON"),  # the old rule (any non-empty file) accepted this
        (b"\x05\x00", "shorter than its header length"),
        ((999).to_bytes(8, "little") + b"{}", "header of 999 bytes in a 10-byte file"),
        ((4).to_bytes(8, "little") + b"\xff{}x", "not JSON"),
        ((2).to_bytes(8, "little") + b"[]", "not a JSON object"),
        ((2).to_bytes(8, "little") + b"{}", "no LoRA tensors"),
    ],
    ids=["zeros", "short", "long-header", "not-utf8", "list", "no-tensors"],
)
def test_a_header_that_is_not_a_safetensors_header_is_refused(tmp_path, data, expected):
    write_lora_adapter(tmp_path, ALL_LINEAR)
    weights_of(tmp_path).write_bytes(data)
    problem = adapter_problem(tmp_path, ALL_LINEAR)
    assert problem is not None and expected in problem


def test_offsets_must_match_the_dtype_and_shape_and_leave_no_hole(tmp_path):
    write_lora_adapter(tmp_path, ["q_proj"])
    shapes = lora_shapes(["q_proj"], rank=8)
    good = safetensors_bytes(shapes)
    length = int.from_bytes(good[:8], "little")
    header = json.loads(good[8 : 8 + length])
    name = next(iter(shapes))
    header[name]["dtype"] = "BF16"  # half the bytes its range holds
    text = json.dumps(header).encode()
    weights_of(tmp_path).write_bytes(len(text).to_bytes(8, "little") + text + good[8 + length :])
    problem = adapter_problem(tmp_path, ["q_proj"])
    assert problem is not None and "for shape" in problem
    weights_of(tmp_path).write_bytes(good + b"\x00" * 8)  # bytes no tensor claims
    problem = adapter_problem(tmp_path, ["q_proj"])
    assert problem is not None and "cover" in problem


def test_every_target_module_needs_a_whole_lora_pair(tmp_path):
    write_lora_adapter(tmp_path, ["q_proj", "v_proj"])
    problem = adapter_problem(tmp_path, ["q_proj", "v_proj", "in_proj_qkv"])
    assert problem == "no LoRA tensors for target modules in_proj_qkv"
    shapes = lora_shapes(["q_proj", "v_proj"], rank=8)
    del shapes[next(name for name in shapes if ".v_proj.lora_B." in name)]
    weights_of(tmp_path).write_bytes(safetensors_bytes(shapes))
    problem = adapter_problem(tmp_path, ["q_proj", "v_proj"])
    assert problem is not None and "v_proj has no lora_B" in problem


def test_the_rank_must_be_the_adapter_configs(tmp_path):
    write_lora_adapter(tmp_path, ["q_proj"], rank=8)
    config = json.loads((tmp_path / "adapter_config.json").read_text())
    (tmp_path / "adapter_config.json").write_text(json.dumps({**config, "r": 16}))
    problem = adapter_problem(tmp_path, ["q_proj"])
    assert problem is not None and "rank 8, the adapter config says r=16" in problem


def test_without_the_runs_targets_the_adapter_configs_are_checked(tmp_path):
    write_lora_adapter(tmp_path, ["q_proj", "k_proj"])
    assert adapter_problem(tmp_path) is None
    config = json.loads((tmp_path / "adapter_config.json").read_text())
    config["target_modules"] = ["q_proj", "k_proj", "o_proj"]
    (tmp_path / "adapter_config.json").write_text(json.dumps(config))
    assert adapter_problem(tmp_path) == "no LoRA tensors for target modules o_proj"


def test_a_file_written_by_the_safetensors_package_is_read_the_same(tmp_path):
    numpy = pytest.importorskip("numpy")
    safetensors_numpy = pytest.importorskip("safetensors.numpy")
    tensors = {
        name: numpy.zeros(shape, dtype=numpy.float16)
        for name, shape in lora_shapes(QWEN35_TARGETS, rank=16, layers=2).items()
    }
    write_lora_adapter(tmp_path, QWEN35_TARGETS, rank=16)
    safetensors_numpy.save_file(tensors, str(weights_of(tmp_path)), metadata={"format": "pt"})
    header = read_safetensors_header(weights_of(tmp_path))
    assert {name: entry["shape"] for name, entry in header.items()} == {
        name: list(array.shape) for name, array in tensors.items()
    }
    assert adapter_problem(tmp_path, QWEN35_TARGETS) is None
    data = weights_of(tmp_path).read_bytes()
    weights_of(tmp_path).write_bytes(data[: len(data) // 2])  # a save cut in the middle
    assert "cut short" in (adapter_problem(tmp_path, QWEN35_TARGETS) or "")


@pytest.mark.filterwarnings("ignore::UserWarning", "ignore::FutureWarning")
def test_an_adapter_saved_by_peft_is_accepted_and_refused_once_cut(tmp_path):
    torch = pytest.importorskip("torch")
    peft = pytest.importorskip("peft")
    transformers = pytest.importorskip("transformers")
    config = transformers.Qwen3Config(
        vocab_size=64,
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        head_dim=8,
    )
    torch.manual_seed(0)
    base = transformers.Qwen3ForCausalLM(config)
    lora = peft.LoraConfig(r=4, lora_alpha=8, target_modules=list(ALL_LINEAR))
    peft.get_peft_model(base, lora).save_pretrained(tmp_path)
    assert adapter_problem(tmp_path, ALL_LINEAR) is None
    header = read_safetensors_header(weights_of(tmp_path))
    assert len(header) == 2 * len(ALL_LINEAR) * config.num_hidden_layers  # 2 per module per layer
    data = weights_of(tmp_path).read_bytes()
    weights_of(tmp_path).write_bytes(data[:-100])
    assert not run_state.holds_adapter(tmp_path, ALL_LINEAR)


def test_a_checkpoint_with_a_cut_adapter_is_set_aside_naming_the_problem(tmp_path):
    for step in (0, 1):
        write_lora_adapter(tmp_path / "checkpoints" / f"{step:04d}", QWEN35_TARGETS, rank=16)
    weights = weights_of(tmp_path / "checkpoints" / "0001")
    weights.write_bytes(weights.read_bytes()[:-10])
    warnings = run_state.set_aside_incomplete_checkpoints(tmp_path, QWEN35_TARGETS)
    assert run_state.checkpoint_steps(tmp_path) == [0]
    assert len(warnings) == 1
    assert warnings[0].startswith("warning: checkpoint 0001 holds a broken adapter: ")
    assert "moved to 0001.incomplete" in warnings[0]
