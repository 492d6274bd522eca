"""FakeBackendForTests: an `art.Backend` that trains nothing but keeps ART's bookkeeping.

It lets the GRPO loop (register, rollouts, backend.train, model.log, resume) run on CPU: each
train call writes a checkpoint directory where LocalBackend writes its LoRA, holding an
adapter_config.json and a valid safetensors file with a zero lora_A/lora_B pair per target module
(nothing is trained), so `model.get_step()` resumes across instances; calls are recorded with
their groups and keyword arguments, and metrics come from ART's own aggregation. Inference is
whatever OpenAI-compatible server `inference_base_url` names (tests/support/scripted_server.py).
A test double: tests only.
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import art
from art import dev
from art._backend_training import aggregate_rl_training_metrics
from art.metrics_taxonomy import TRAIN_GRADIENT_STEPS_KEY
from art.preprocessing.tokenize import TokenizedResult, tokenize_trajectory_groups
from art.types import LocalTrainResult, TrainSFTConfig
from transformers import PreTrainedTokenizerBase

from tests.train.adapter_fixtures import write_lora_adapter
from training.runs import ALL_LINEAR

# Keyword arguments of LocalBackend.train in openpipe-art 0.5.18 (local/backend.py:638-679);
# test_backend_double checks this list against the installed signature.
LOCAL_BACKEND_TRAIN_KWARGS = frozenset(
    {
        "learning_rate",
        "loss_fn",
        "loss_fn_config",
        "normalize_advantages",
        "adam_params",
        "kl_penalty_coef",
        "kl_penalty_reference_step",
        "kl_ref_adapter_path",
        "epsilon",
        "epsilon_high",
        "advantage_balance",
        "scale_rewards",
        "importance_sampling_level",
        "max_negative_advantage_importance_sampling_weight",
        "mask_prob_ratio",
        "kimi_k2_tau",
        "precalculate_logprobs",
        "allow_training_without_logprobs",
        "plot_tensors",
        "truncated_importance_sampling",
        "scale_learning_rate_by_reward_std_dev",
        "logprob_calculation_chunk_size",
        "packed_sequence_length",
        "num_trajectories_learning_rate_multiplier_power",
        "save_checkpoint",
        "verbose",
    }
)


@dataclass(frozen=True)
class RecordedTrainCall:
    """One `train` call: the step it produced, what it was given, and ART's tokenisation."""

    step: int
    groups: list[art.TrajectoryGroup]
    kwargs: dict[str, Any]
    tokenized: list[TokenizedResult] | None


@dataclass(frozen=True)
class RecordedSFTCall:
    step: int
    trajectories: list[art.Trajectory]
    config: TrainSFTConfig


class FakeBackendForTests(art.Backend):
    """Test double for LocalBackend; pass a tokenizer to run ART's tokenisation in `train`.

    With a tokenizer, `train` fails where the real backend would fail before touching a GPU
    (a tool call ART cannot render, for example), and records the token sequences.
    """

    def __init__(
        self,
        *,
        path: str | Path,
        inference_base_url: str,
        inference_api_key: str = "fake-key",
        tokenizer: PreTrainedTokenizerBase | None = None,
    ) -> None:
        self._path = Path(path)
        self._path.mkdir(parents=True, exist_ok=True)
        self._inference_base_url = inference_base_url
        self._inference_api_key = inference_api_key
        self._tokenizer = tokenizer
        self.train_calls: list[RecordedTrainCall] = []
        self.sft_calls: list[RecordedSFTCall] = []
        self.server_configs: list[dev.OpenAIServerConfig | None] = []
        self.closed = False

    def _model_inference_name(self, model: art.Model, step: int | None = None) -> str:
        # LocalBackend serves each LoRA checkpoint as "name@step" (local/backend.py:332-369).
        return f"{model.name}@{self._step_on_disk(model) if step is None else step}"

    async def close(self) -> None:
        self.closed = True

    async def register(self, model: art.Model) -> None:
        model.base_path = str(self._path)
        model_dir = self._model_dir(model)
        model_dir.mkdir(parents=True, exist_ok=True)
        (model_dir / "model.json").write_text(json.dumps(model.model_dump(), default=str))

    async def _get_step(self, model: art.TrainableModel) -> int:
        return self._step_on_disk(model)

    async def _delete_checkpoint_files(
        self, model: art.TrainableModel, steps_to_keep: list[int]
    ) -> None:
        for step, directory in self._checkpoints(model).items():
            if step not in steps_to_keep:
                shutil.rmtree(directory)

    async def _prepare_backend_for_training(
        self, model: art.TrainableModel, config: dev.OpenAIServerConfig | None = None
    ) -> tuple[str, str]:
        # The real service saves the untrained LoRA as step 0 before serving it.
        self.server_configs.append(config)
        if not self._checkpoints(model):
            _write_adapter(self._checkpoint_dir(model, 0), model)
        return self._inference_base_url, self._inference_api_key

    async def train(  # type: ignore[override]
        self,
        model: art.TrainableModel,
        trajectory_groups: Iterable[art.TrajectoryGroup],
        **kwargs: Any,
    ) -> LocalTrainResult:
        unknown = set(kwargs) - LOCAL_BACKEND_TRAIN_KWARGS
        if unknown:
            raise TypeError(f"LocalBackend.train() got unexpected keyword arguments {unknown}")
        started = time.monotonic()
        groups = list(trajectory_groups)
        tokenized = self._tokenize(model, groups, kwargs)
        step = self._save_checkpoint(model)
        sample = {
            "loss/train": 0.0,
            "loss/grad_norm": 0.0,
            "loss/learning_rate": float(kwargs.get("learning_rate", 5e-6)),
            TRAIN_GRADIENT_STEPS_KEY: 1.0 if _has_advantage(groups, tokenized) else 0.0,
        }
        if tokenized is not None:
            sample["data/step_trainer_tokens"] = float(
                sum(sum(result.assistant_mask) for result in tokenized)
            )
        metrics = aggregate_rl_training_metrics(
            training_metrics=[sample], trajectory_groups=groups, trainer_started=started
        )
        self.train_calls.append(RecordedTrainCall(step, groups, dict(kwargs), tokenized))
        checkpoint = self._checkpoint_dir(model, step)
        keep_path = kwargs.get("save_checkpoint", True)
        return LocalTrainResult(
            step=step, metrics=metrics, checkpoint_path=str(checkpoint) if keep_path else None
        )

    async def _train_sft(
        self,
        model: art.TrainableModel,
        trajectories: Iterable[art.Trajectory],
        config: TrainSFTConfig,
        dev_config: dev.TrainSFTConfig,
        verbose: bool = False,
    ) -> AsyncIterator[dict[str, float]]:
        trajectory_list = list(trajectories)
        yield {"loss/train": 0.0, "data/step_num_trajectories": float(len(trajectory_list))}
        step = self._save_checkpoint(model)
        self.sft_calls.append(RecordedSFTCall(step, trajectory_list, config))

    def _tokenize(
        self, model: art.TrainableModel, groups: list[art.TrajectoryGroup], kwargs: dict[str, Any]
    ) -> list[TokenizedResult] | None:
        if self._tokenizer is None:
            return None
        config = model._internal_config or dev.InternalModelConfig()
        return list(
            tokenize_trajectory_groups(
                self._tokenizer,
                groups,
                allow_training_without_logprobs=kwargs.get(
                    "allow_training_without_logprobs", False
                ),
                scale_rewards=kwargs.get("scale_rewards", True)
                and kwargs.get("normalize_advantages", True),
                shuffle_group_trajectories=False,
                chat_template_kwargs=config.get("chat_template_kwargs"),
                chat_template_tool_schema_format=config.get(
                    "chat_template_tool_schema_format", "default"
                ),
            )
        )

    def _save_checkpoint(self, model: art.Model) -> int:
        step = self._step_on_disk(model) + 1
        _write_adapter(self._checkpoint_dir(model, step), model)
        return step

    def _model_dir(self, model: art.Model) -> Path:
        return self._path / model.project / "models" / model.name

    def _checkpoint_dir(self, model: art.Model, step: int) -> Path:
        return self._model_dir(model) / "checkpoints" / f"{step:04d}"

    def _checkpoints(self, model: art.Model) -> dict[int, Path]:
        root = self._model_dir(model) / "checkpoints"
        if not root.is_dir():
            return {}
        return {int(p.name): p for p in root.iterdir() if p.is_dir() and p.name.isdigit()}

    def _step_on_disk(self, model: art.Model) -> int:
        return max(self._checkpoints(model), default=0)


def _write_adapter(checkpoint: Path, model: art.Model) -> None:
    """The files LocalBackend's save leaves in checkpoints/NNNN, with zeros for weights."""
    checkpoint.mkdir(parents=True)
    config = getattr(model, "_internal_config", None) or {}
    peft = config.get("peft_args", {})
    targets = peft.get("target_modules") or ALL_LINEAR
    base = getattr(model, "base_model", "")
    write_lora_adapter(checkpoint, targets, rank=peft.get("r", 8), base_model=base)


def _has_advantage(
    groups: list[art.TrajectoryGroup], tokenized: list[TokenizedResult] | None
) -> bool:
    """Whether the real backend would take a gradient step (it skips when nothing is packed)."""
    if tokenized is not None:
        return bool(tokenized)
    return any(len({trajectory.reward for trajectory in group}) > 1 for group in groups)
