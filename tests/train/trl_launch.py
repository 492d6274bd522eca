"""Short TRL runs as a user starts them: a run file, then `train.py` in a real subprocess (alone,
or under torchrun). Shared by the multi-process and the interrupt tests."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

# cpu-smoke cut to seconds: 8 train scenarios, a few SFT steps, 2 GRPO steps of one group of 4
# (a format reward of 0.2 gives the group a spread, so LoRA moves), 1 val scenario of 2 turns
RUN_FILE = """\
name = "{name}"
trainer = "trl"
base_model = "local:tiny-qwen3"
seed = 0

[reward]
variant = "shaped"

[lora]
rank = 8
alpha = 16
target_modules = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]

[data]
split = "train"
limit = 8
curriculum = ["L1"]

[grpo]
groups_per_step = 1
learning_rate = {learning_rate}

[validation]
split = "val"
limit = 1

[rollout]
tool_budget = 12
max_turns = 2
max_tokens = 48

[trl]
sft_steps = {sft_steps}
sft_batch_size = 2
sft_learning_rate = 1e-2
sft_save_steps = {sft_save_steps}
grpo_steps = {grpo_steps}
grpo_save_steps = {grpo_save_steps}
num_generations = 4
max_completion_length = {max_completion_length}
max_tool_calling_iterations = 2
eval_scenarios = 1
torch_threads = 2
format_reward = 0.2
"""


def write_run(folder: Path, name: str, **values: object) -> Path:
    settings: dict[str, object] = {
        "learning_rate": "2e-3",
        "sft_steps": 6,
        "sft_save_steps": 50,
        "grpo_steps": 2,
        "grpo_save_steps": 5,
        "max_completion_length": 256,
    }
    settings.update(values)
    path = folder / f"{name}.toml"
    path.write_text(RUN_FILE.format(name=name, **settings), encoding="utf-8")
    return path


def child_env(cache: Path) -> dict[str, str]:
    env = dict(os.environ, PYTHONPATH=str(REPO), LEDGERGYM_CACHE=str(cache))
    env.pop("WORLD_SIZE", None)
    return env


def train_py(*args: str) -> list[str]:
    return [sys.executable, str(REPO / "train.py"), *args]


def torchrun(processes: int, *args: str) -> list[str]:
    """`torchrun --standalone --nproc_per_node N train.py ARGS` (the run named positionally:
    torchrun takes `--run` for its own `--run-path`)."""
    launcher = [sys.executable, "-m", "torch.distributed.run", "--standalone"]
    return [*launcher, "--nproc_per_node", str(processes), str(REPO / "train.py"), *args]


def run(command: list[str], cwd: Path, cache: Path, timeout: int) -> subprocess.CompletedProcess:
    return subprocess.run(
        command, cwd=cwd, env=child_env(cache), capture_output=True, text=True, timeout=timeout
    )
