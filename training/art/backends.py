"""Where GRPO runs: `[backend] kind` -> an ART backend, the trainable model, and train keywords.

- "local": `LocalBackend(path=...)` on this machine's GPU (Unsloth trains, ART's vLLM serves);
  needs the `[train]` extra, uv and CUDA. Not Megatron: ART 0.5.18 imports it while building
  the model config, and `training.art.guard` stands in for that import. Multi-GPU runs would use
  ART's `MegatronBackend` (not wired: see docs/gpu.md).
- "serverless": `ServerlessBackend` (W&B Training) on hosted GPUs; needs WANDB_API_KEY.
- "tinker": `art.tinker.TinkerBackend` (ART tokenises here, Tinker trains); needs
  TINKER_API_KEY and `pip install 'openpipe-art[tinker]==0.5.18'`.
`missing_requirements` names what is missing in one line; it never imports ART, and torch only
for its last check (CUDA).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
from collections.abc import MutableMapping
from typing import TYPE_CHECKING, Any, Literal, cast

from agent.api_policies import is_qwen35
from training.art.chat_template import template_kwargs
from training.art.run_state import art_path
from training.runs import RunConfig, vllm_max_lora_rank

if TYPE_CHECKING:
    import art

TRAIN_EXTRA = "pip install -e '.[train]' -c constraints/gpu-py311.txt"
TINKER_EXTRA = "pip install 'openpipe-art[tinker]==0.5.18'"
# vLLM's parser for Qwen3.5's XML tool calls; ART's default ("hermes") does not parse them
QWEN35_TOOL_PARSER = "qwen3_coder"
# Qwen3.5's Gated-DeltaNet layers run fast only when both import; else transformers falls back
# to pure torch (flash-linear-attention provides `fla`, causal-conv1d `causal_conv1d`)
GDN_KERNEL_MODULES = ("fla", "causal_conv1d")
GDN_FAMILIES = ("qwen3.5", "qwen3.next")  # base models whose layers include Gated DeltaNet
KernelPath = Literal["fast", "slow", "unknown", "n/a"]


class BackendUnavailable(RuntimeError):
    """This machine cannot run the run's backend; the message says what to install or set."""


def missing_requirements(run: RunConfig) -> str | None:
    """One line naming what is missing (packages, GPU, API key), or None when all is there."""
    kind = run.backend.kind
    if kind == "serverless":
        if not os.environ.get("WANDB_API_KEY"):
            return "backend 'serverless' (W&B Training) needs WANDB_API_KEY in the environment"
        return None
    if kind == "tinker":
        if not os.environ.get("TINKER_API_KEY"):
            return "backend 'tinker' needs TINKER_API_KEY in the environment"
        missing = _missing_modules("tinker", "tinker_cookbook", "fastapi", "torch")
        return f"backend 'tinker' needs {TINKER_EXTRA} (missing: {missing})" if missing else None
    missing = _missing_modules("torch", "unsloth", "peft", "wandb")
    if missing:
        return (
            f"backend 'local' trains on a CUDA GPU and needs the [train] extra: {TRAIN_EXTRA} "
            f"(missing here: {missing}); docs/gpu.md has the exact setup"
        )
    if not (shutil.which("uv") or os.environ.get("ART_VLLM_RUNTIME_BIN")):
        return (
            "ART builds its vLLM runtime with uv on first use: install uv (>= 0.6.15) or set "
            "ART_VLLM_RUNTIME_BIN to a prebuilt art-vllm-runtime-server; see docs/gpu.md"
        )
    import torch  # only now: importing it takes seconds and --check must not

    if not torch.cuda.is_available():
        return "backend 'local' needs a CUDA GPU and torch sees none; see docs/gpu.md"
    return None


def _missing_modules(*names: str) -> str:
    return ", ".join(name for name in names if not _importable(name))


def _importable(name: str) -> bool:
    """Without importing it; a dotted name whose parent package is absent is missing too."""
    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:
        return False


def gdn_family(base_model: str) -> str | None:
    """The family (`qwen3.5`, `qwen3.next`) when the base model has Gated-DeltaNet layers."""
    name = base_model.lower().replace("_", ".").replace("-", ".")
    return next((family for family in GDN_FAMILIES if family in name), None)


def gdn_kernel_path(base_model: str) -> tuple[KernelPath, str]:
    """Which Gated-DeltaNet path training will take, from what imports here (no import done).

    "fast": both kernels import (transformers also wants CUDA: the GPU smoke confirms it);
    "slow": one is missing, so transformers runs its pure-torch fallback; "unknown": no
    transformers here to run the model at all; "n/a": the base model has no such layers.
    """
    if gdn_family(base_model) is None:
        return "n/a", f"{base_model} has no Gated-DeltaNet layers"
    missing = [module for module in GDN_KERNEL_MODULES if not _importable(module)]
    if not missing:
        return "fast", "fla and causal_conv1d import here"
    if not _importable("transformers"):
        return "unknown", "transformers is not installed here (the [train] extra)"
    return "slow", f"{' and '.join(missing)} not importable: pure-torch fallback; see docs/gpu.md"


def keep_wandb_off(run: RunConfig, environ: MutableMapping[str, str] = os.environ) -> str | None:
    """With `[backend] wandb = false`, WANDB_API_KEY leaves this process's environment.

    ART's LocalBackend.register starts a W&B run whenever WANDB_API_KEY is set, whatever the
    model's report_metrics say (art/local/backend.py, register). Returns the line to print.
    """
    if run.backend.wandb or run.backend.kind != "local" or "WANDB_API_KEY" not in environ:
        return None
    del environ["WANDB_API_KEY"]
    return "WANDB_API_KEY unset for this run: [backend] wandb = false (ART would report to W&B)"


def wandb_line(run: RunConfig, environ: MutableMapping[str, str] = os.environ) -> str:
    """`--check`'s word on W&B: what the run file says and what a set WANDB_API_KEY does."""
    key = "WANDB_API_KEY" in environ
    if run.backend.wandb:
        return "on ([backend] wandb = true)" + ("" if key else "; WANDB_API_KEY is not set")
    if run.backend.kind == "serverless":
        return "off for metrics; W&B Training itself needs WANDB_API_KEY"
    if key:
        return (
            "off ([backend] wandb = false); WANDB_API_KEY is set, which would make ART start a "
            "W&B run: train.py unsets it for this run"
        )
    return "off ([backend] wandb = false; ART starts a W&B run whenever WANDB_API_KEY is set)"


def make_backend(run: RunConfig) -> art.Backend:
    """The backend for `[backend] kind`; call `missing_requirements` first for a clean message."""
    import art

    kind, path = run.backend.kind, str(art_path(run))
    if kind == "serverless":
        return art.ServerlessBackend()
    if kind == "tinker":
        try:
            from art.tinker import TinkerBackend
        except ImportError as exc:
            raise BackendUnavailable(f"backend 'tinker' needs {TINKER_EXTRA} ({exc})") from None
        return cast("art.Backend", TinkerBackend(path=path))
    from art.local import LocalBackend

    return cast("art.Backend", LocalBackend(path=path))


def build_model(run: RunConfig, chat_template: str | None = None) -> art.TrainableModel:
    """`chat_template`: the base tokenizer's (training.art.chat_template.resolve_chat_template);
    it decides the chat-template settings both sides use."""
    import art

    return art.TrainableModel(
        name=run.name,
        project=run.backend.project,
        base_model=run.base_model,
        base_path=str(art_path(run)),
        report_metrics=["wandb"] if run.backend.wandb else [],  # [] keeps W&B off
        _internal_config=internal_config(run, chat_template),
    )


def internal_config(
    run: RunConfig, chat_template: str | None = None
) -> art.dev.InternalModelConfig:
    """LoRA shape, vLLM memory share and the chat-template settings training and vLLM share
    (decided by the base model's `chat_template`: training.art.chat_template)."""
    import art

    lora = run.lora
    peft: dict[str, Any] = {"r": lora.rank, "lora_alpha": lora.alpha}
    peft["target_modules"] = list(lora.target_modules)
    if lora.dropout:
        peft["lora_dropout"] = lora.dropout
    config = art.dev.InternalModelConfig(
        peft_args=cast("art.dev.PeftArgs", peft),
        # ART's default tool JSON order differs from vLLM's; the token-alignment test covers it
        chat_template_tool_schema_format="vllm_openai",
    )
    # ART drops trajectories longer than max_seq_length; vLLM must not sample them either.
    # load_in_4bit is always said: ART's default (True) would train on a 4-bit copy of the base.
    config["init_args"] = {
        "max_seq_length": run.grpo.max_seq_length,
        "load_in_4bit": run.model.load_in_4bit,
    }
    if run.backend.kind == "local":
        config["engine_args"] = {
            "gpu_memory_utilization": run.backend.gpu_memory_utilization,
            "max_model_len": run.grpo.max_seq_length,
            "max_lora_rank": vllm_max_lora_rank(lora.rank),
        }
        # one AdamW step per trajectory, each clipped at this global norm (ART's default 0.1);
        # get_model_config updates its TrainerArgs with ours, the rest stays ART's
        config["trainer_args"] = {"max_grad_norm": run.grpo.max_grad_norm}
    kwargs = template_kwargs(run.base_model, chat_template)
    if kwargs is not None:  # inference and training must render the same tokens
        config["chat_template_kwargs"] = kwargs
    if run.backend.kind == "tinker":
        from art.tinker import get_renderer_name

        config["tinker_args"] = {
            "renderer_name": get_renderer_name(run.base_model),
            "training_client_args": {"rank": lora.rank},
        }
    return config


def server_config(run: RunConfig) -> art.dev.OpenAIServerConfig | None:
    """vLLM's tool parser; the internal config has no place for it (register takes it)."""
    import art

    if run.backend.kind != "local" or not is_qwen35(run.base_model):
        return None
    return art.dev.OpenAIServerConfig(server_args={"tool_call_parser": QWEN35_TOOL_PARSER})


def train_kwargs(run: RunConfig) -> dict[str, Any]:
    """`backend.train` keywords for the run's loss; ServerlessBackend spells the loss `ppo=`."""
    loss = run.loss
    kwargs: dict[str, Any] = {
        "learning_rate": run.grpo.learning_rate,
        "scale_rewards": loss.scale_rewards,
        "importance_sampling_level": loss.importance_sampling_level,
    }
    if loss.epsilon is not None:
        kwargs["epsilon"] = loss.epsilon
    if loss.epsilon_high is not None:
        kwargs["epsilon_high"] = loss.epsilon_high
    if run.backend.kind == "serverless":
        if loss.kl_penalty_coef:
            raise BackendUnavailable("backend 'serverless' does not take kl_penalty_coef")
        return kwargs | {"ppo": loss.loss_fn == "ppo"}
    return kwargs | {"loss_fn": loss.loss_fn, "kl_penalty_coef": loss.kl_penalty_coef}
