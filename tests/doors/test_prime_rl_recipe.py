"""The verifiers door as prime-rl and the Environments Hub take it: an installed package named by
the environment id (`billsleuth`), and a prime-rl recipe (configs/prime-rl/billsleuth.toml).

The recipe's environment section is resolved by verifiers' own loader (what prime-rl calls); the
whole recipe by prime-rl's own schema (`prime_rl.configs.rl.RLConfig`, the slim
`prime-rl-configs` package, no torch or vLLM), where that package is installed: it is not on
PyPI (github.com/PrimeIntellect-ai/prime-rl, packages/prime-rl-configs). The package test builds
the project's wheel in a copy of the tree and imports the environment from the wheel alone.
Skipped where the `[verifiers]` extra is not installed.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip(
    "verifiers.v1", reason="needs the [verifiers] extra: pip install -e '.[verifiers]'"
)

from verifiers.v1.utils.loaders import load_environment, resolve_env_config

from doors.verifiers_env import BillSleuthEnvConfig, BillSleuthTaskset
from env.ledger_env import system_prompt

ROOT = Path(__file__).resolve().parents[2]
RECIPE = ROOT / "configs" / "prime-rl" / "billsleuth.toml"
ENV_ID = "billsleuth"


def source_env(recipe: dict[str, Any]) -> dict[str, Any]:
    [source] = recipe["orchestrator"]["train"]["source"]
    return source["env"]


def test_the_recipes_environment_is_the_door_with_the_runs_settings():
    config = resolve_env_config(source_env(tomllib.loads(RECIPE.read_text())))
    assert isinstance(config, BillSleuthEnvConfig)
    taskset = config.taskset
    assert (taskset.id, taskset.split, taskset.tool_budget) == (ENV_ID, "train", 30)
    assert taskset.task.reward == "shaped"
    agent = config.agent
    assert agent.harness is not None and agent.harness.id == "null"  # tools only, no shell
    assert agent.runtime.type == "subprocess" and agent.max_turns == 40
    environment = load_environment(config)
    first = next(iter(environment.taskset))
    assert isinstance(environment.taskset, BillSleuthTaskset)
    assert first.data.id == "train-1000000" and first.data.system_prompt == system_prompt(30)


def test_a_misspelt_environment_key_is_refused_by_verifiers():
    env = source_env(tomllib.loads(RECIPE.read_text()))
    env["taskset"]["tool_budgt"] = env["taskset"].pop("tool_budget")
    with pytest.raises(ValueError, match="tool_budgt"):
        resolve_env_config(env)


def test_the_recipe_validates_against_prime_rls_own_schema(tmp_path: Path):
    pytest.importorskip(
        "prime_rl.configs.rl",
        reason="prime-rl's config schema (prime-rl-configs) is not installed; not on PyPI",
    )
    from prime_rl.configs.rl import RLConfig
    from pydantic_config import cli

    config = cli(RLConfig, args=["@", str(RECIPE)])
    [source] = config.orchestrator.train.source
    assert type(source.env).__name__ == "BillSleuthEnvConfig"  # narrowed by the id
    assert source.env.taskset.id == ENV_ID and source.group_size == 8
    assert config.orchestrator.batch_size == 64 and config.model.name == "Qwen/Qwen3.5-4B"
    lora = config.trainer.model.lora
    assert lora is not None and lora.rank == 16 and "in_proj_qkv" in lora.target_modules
    typo = tmp_path / "typo.toml"
    typo.write_text(RECIPE.read_text().replace("group_size = 8", "group_sise = 8"))
    with pytest.raises(Exception, match="group-sise"):  # the flag spelling of the key
        cli(RLConfig, args=["@", str(typo)])


def test_the_installed_project_exposes_the_environment_by_its_id(tmp_path: Path):
    """`pip install .[verifiers]` as the Hub installs an environment: the wheel holds the package
    named by the id, and verifiers' loader finds the door's Taskset and Env in it alone."""
    tree = tmp_path / "tree"
    skip = ("__pycache__", ".git", ".venv", "outputs", ".cache", "build", "*.egg-info")
    shutil.copytree(ROOT, tree, ignore=shutil.ignore_patterns(*skip))  # pip builds in the tree
    wheels = tmp_path / "wheels"
    pip = [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation"]
    built = subprocess.run([*pip, "-w", str(wheels), str(tree)], capture_output=True, text=True)
    assert built.returncode == 0, built.stderr[-2000:]
    [wheel] = wheels.glob("ledgergym-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        metadata = next(n for n in names if n.endswith(".dist-info/METADATA"))
        requires = archive.read(metadata).decode()
        archive.extractall(tmp_path / "site")
    assert "billsleuth/__init__.py" in names and "doors/verifiers_env.py" in names
    assert 'Requires-Dist: verifiers==0.4.0; extra == "verifiers"' in requires
    probe = (
        "import json, billsleuth\n"
        "from verifiers.v1.utils.loaders import environment_class, taskset_class\n"
        f"print(json.dumps([billsleuth.__file__, taskset_class({ENV_ID!r}).__name__,"
        f" environment_class({ENV_ID!r}).__name__]))\n"
    )
    env = {"PYTHONPATH": str(tmp_path / "site"), "PATH": "/usr/bin:/bin"}
    found = subprocess.run(
        [sys.executable, "-c", probe], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert found.returncode == 0, found.stderr[-2000:]
    where, taskset, environment = json.loads(found.stdout)
    assert Path(where).is_relative_to(tmp_path / "site")  # from the wheel, not the source tree
    assert (taskset, environment) == ("BillSleuthTaskset", "BillSleuthEnv")
