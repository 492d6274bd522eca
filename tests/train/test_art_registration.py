"""Registering with ART 0.5.18 needs no Megatron, and ART's transformers patch is kept or undone
by the transformers version and the call's shape (training/art/guard.py).

The registration test runs in a fresh interpreter that cannot import any `megatron` module,
imports ART for training as train.py does, and builds the run's model config the way
LocalBackend does when `model.register` starts it.
"""

from __future__ import annotations

import ast
import inspect
import json
import subprocess
import sys
from pathlib import Path

import art
import pytest

from training.art.guard import ART_HANDLERS, ART_TRANSFORMERS_SERIES, patch_fits

REPO = Path(__file__).resolve().parents[2]
ART_DIR = Path(art.__file__).parent

REGISTER_WITHOUT_MEGATRON = """
import importlib.abc, json, os, subprocess, sys, tempfile

class NoMegatron(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "megatron" or name.startswith("megatron."):
            raise ModuleNotFoundError(f"No module named {name!r} (this test has no Megatron)")
        return None

sys.meta_path.insert(0, NoMegatron())
from training.art.guard import import_art_for_training, transformers_patch_kept
import_art_for_training()
from art.dev.get_model_config import get_model_config
from art.dev.validate import validate_dedicated_config
from art.megatron.model_support import get_model_support_handler
from training.art.backends import internal_config
from training.runs import load_run_config

run = load_run_config("binary-01")
config = get_model_config(run.base_model, tempfile.mkdtemp(), internal_config(run))
validate_dedicated_config(config)
try:
    get_model_support_handler(run.base_model).to_vllm_lora_tensors
    handler_error = None
except ModuleNotFoundError as exc:
    handler_error = str(exc)
from transformers import masking_utils
child = None
if "--child" in sys.argv:  # a process ART spawns: it re-imports train.py, then art, afresh
    child = subprocess.run(
        [sys.executable, "-c", "import train, art\\n"
         "from transformers import masking_utils as m\\n"
         "print(m._preprocess_mask_arguments.__module__)"],
        capture_output=True, text=True, check=True, env=os.environ,
    ).stdout.strip()
print(json.dumps({
    "patch_kept": transformers_patch_kept(),
    "mask_function": masking_utils._preprocess_mask_arguments.__module__,
    "child_mask_function": child,
    "peft": config["peft_args"],
    "engine": config["engine_args"],
    "init": config["init_args"],
    "trainer": config["trainer_args"],
    "handler_error": handler_error,
}))
"""


def register_without_megatron(*flags: str) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", REGISTER_WITHOUT_MEGATRON, *flags],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def registered() -> dict:
    return register_without_megatron()


def on_arts_transformers() -> bool:
    import transformers

    return transformers.__version__.startswith(ART_TRANSFORMERS_SERIES + ".")


def test_the_runs_model_config_builds_without_megatron(registered):
    run_modules = [
        "q_proj", "k_proj", "v_proj", "o_proj", "in_proj_qkv", "in_proj_z", "out_proj",
        "gate_proj", "up_proj", "down_proj",
    ]  # fmt: skip
    assert registered["peft"]["target_modules"] == run_modules
    assert (registered["peft"]["r"], registered["peft"]["lora_alpha"]) == (16, 32)
    engine = registered["engine"]
    assert engine["lora_target_modules"] == run_modules
    assert (engine["max_model_len"], engine["max_lora_rank"]) == (32768, 16)
    assert engine["gpu_memory_utilization"] == 0.7
    assert registered["init"]["max_seq_length"] == 32768


def test_the_runs_max_grad_norm_reaches_arts_trainer_args_beside_arts_own(registered):
    trainer = registered["trainer"]
    assert trainer["max_grad_norm"] == 0.1  # [grpo] max_grad_norm of binary-01
    # ART's own settings stay: one row per step, its AdamW (runs/README.md, What ART optimises)
    assert trainer["gradient_accumulation_steps"] == 1 and trainer["optim"] == "paged_adamw_8bit"
    assert (trainer["adam_beta2"], trainer["weight_decay"]) == (0.99, 0.1)


def test_a_handlers_megatron_code_says_what_is_missing(registered):
    assert "needs megatron-core and megatron-bridge" in registered["handler_error"]


@pytest.mark.skipif(on_arts_transformers(), reason="ART's own transformers series is here")
def test_on_transformers_5_24_the_patch_is_undone(registered):
    assert registered["patch_kept"] is False
    assert registered["mask_function"] == "transformers.masking_utils"


@pytest.mark.slow
@pytest.mark.skipif(on_arts_transformers(), reason="ART's own transformers series is here")
def test_a_process_art_spawns_makes_the_same_decision():
    assert register_without_megatron("--child")["child_mask_function"] == (
        "transformers.masking_utils"
    )


def _art_patch_signature() -> inspect.Signature:
    """ART's wrapper's signature, from its source (importing it would apply it)."""
    tree = ast.parse((ART_DIR / "transformers" / "patches.py").read_text())
    node = next(
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.FunctionDef) and n.name == "_patched_preprocess_mask_arguments"
    )
    arguments = node.args
    for argument in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]:
        argument.annotation = None
    bare = ast.FunctionDef(
        name="f", args=arguments, body=[ast.Pass()], decorator_list=[], returns=None,
        type_params=[],
    )  # fmt: skip
    namespace: dict = {}
    exec(compile(ast.fix_missing_locations(ast.Module([bare], [])), "patch", "exec"), namespace)
    return inspect.signature(namespace["f"])


def test_the_patch_fits_transformers_5_2_whose_names_differ_but_not_5_24():
    def on_5_2(config, inputs_embeds, attention_mask, cache_position, past_key_values,
               position_ids, layer_idx): ...  # fmt: skip

    def on_5_24(config, inputs_embeds, attention_mask, cache, position_ids, layer_idx,
                encoder_hidden_states=None): ...  # fmt: skip

    patch = _art_patch_signature()
    assert list(patch.parameters)[1] == "input_embeds"  # a different name, the same call
    assert patch_fits("5.2.0", inspect.signature(on_5_2), patch)
    assert not patch_fits("5.24.0", inspect.signature(on_5_24), patch)
    assert not patch_fits("5.24.0", inspect.signature(on_5_2), patch)  # right shape, other series
    from transformers import masking_utils

    installed = inspect.signature(masking_utils._preprocess_mask_arguments)
    assert list(installed.parameters)[:2] == ["config", "inputs_embeds"]


def test_the_stand_in_handlers_carry_arts_own_keys_and_statuses():
    """Read from ART's handler sources: class attributes through the class hierarchy."""
    classes: dict[str, tuple[list[str], dict[str, str]]] = {}
    instances: dict[str, str] = {}
    for path in sorted((ART_DIR / "megatron" / "model_support" / "handlers").glob("*.py")):
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.ClassDef):
                attrs = {
                    stmt.targets[0].id: stmt.value.value
                    for stmt in node.body
                    if isinstance(stmt, ast.Assign)
                    and isinstance(stmt.targets[0], ast.Name)
                    and isinstance(stmt.value, ast.Constant)
                }
                bases = [b.id for b in node.bases if isinstance(b, ast.Name)]
                classes[node.name] = (bases, attrs)
            elif (
                isinstance(node, ast.Assign)
                and isinstance(node.value, ast.Call)
                and isinstance(node.value.func, ast.Name)
                and node.targets[0].id.endswith("_HANDLER")  # type: ignore[attr-defined]
            ):
                instances[node.targets[0].id] = node.value.func.id  # type: ignore[attr-defined]

    def attribute(class_name: str, name: str) -> str:
        bases, attrs = classes[class_name]
        if name in attrs:
            return attrs[name]
        return next(attribute(base, name) for base in bases if base in classes)

    from_source = {
        handler: (attribute(cls, "key"), attribute(cls, "native_vllm_lora_status"))
        for handler, cls in instances.items()
    }
    assert from_source == ART_HANDLERS
