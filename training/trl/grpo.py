"""The GRPO phase of the TRL path: LoRA through `environment_factory`, on one or more processes.

Device, precision and generation (the trainer's own `generate`, or vLLM in server or colocate
mode) come from the run's `[trl]` section; the launcher (torchrun, accelerate launch) decides
how many processes share each batch. A checkpoint every `[trl] grpo_save_steps` steps
(`grpo/checkpoint-N`) is where a rerun continues. The adapter is written once (rank 0), and
each rank's LoRA digest is gathered so the summary shows the ranks ended in step.
Used by `training.trl.runner`.
"""

from __future__ import annotations

import functools
import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from env.scenario import Scenario
from training.runs import RunConfig, TrlSection
from training.trl import ranks
from training.trl.checkpoints import KEEP, RunProgress, Saved, publish, staging
from training.trl.data import grpo_rows
from training.trl.episode_env import LedgerTrlEnv, tool_format_reward
from training.trl.progress import LOG_FILE, PhaseProgress, attach, grpo_line
from training.trl.report import StepRecorder
from training.trl.sft import per_device, resume_point

ADAPTER = "adapter"
ADAPTER_FILE = "adapter_model.safetensors"
# accelerate's plain data-parallel kinds: every rank holds the whole adapter
WHOLE_COPY_KINDS = ("NO", "MULTI_CPU", "MULTI_GPU")


@dataclass
class GrpoResult:
    trainer: Any
    recorder: StepRecorder
    adapter: Path
    lora_b_max_abs_delta: float  # rank 0's figures, from the adapter as saved
    lora_tensors_changed: int
    rank_digests: list[str] | None


def grpo_config(run: RunConfig, trl: TrlSection, steps: int, out: Path) -> Any:
    from trl import GRPOConfig

    world = ranks.from_environment().world
    batch = run.grpo.groups_per_step * trl.num_generations  # episodes per optimizer step
    return GRPOConfig(
        output_dir=str(out / "grpo"),
        max_steps=steps,
        per_device_train_batch_size=per_device(batch, world, "num_generations x groups_per_step"),
        steps_per_generation=1,  # on-policy: one optimizer step per generation batch
        num_generations=trl.num_generations,
        max_completion_length=trl.max_completion_length,
        max_tool_calling_iterations=trl.max_tool_calling_iterations,
        temperature=run.rollout.temperature,
        learning_rate=run.grpo.learning_rate,
        loss_type=trl.loss_type,
        scale_rewards=trl.scale_rewards,
        beta=0.0,
        use_cpu=trl.device == "cpu",
        bf16=trl.bf16,
        use_vllm=trl.use_vllm,
        vllm_mode=trl.vllm_mode,
        vllm_server_base_url=trl.vllm_server_base_url,
        activation_checkpointing=False,
        save_strategy="steps",
        save_steps=trl.grpo_save_steps,
        save_total_limit=KEEP,
        ddp_find_unused_parameters=False,  # every LoRA weight takes part in every step
        logging_steps=1,
        report_to="none",
        disable_tqdm=True,
        seed=run.seed,
    )


def grpo(
    run: RunConfig,
    trl: TrlSection,
    warm: Path,
    tokenizer: Any,
    train: list[Scenario],
    steps: int,
    out: Path,
    progress: RunProgress | None = None,
) -> GrpoResult:
    """GRPO with LoRA from the warm start; continues from the newest `grpo/checkpoint-N`."""
    from datasets import Dataset
    from peft import LoraConfig, get_peft_model_state_dict
    from trl import GRPOTrainer

    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    where = ranks.from_environment()
    resume = resume_point(out / "grpo", progress)
    recorder = StepRecorder(
        out / "metrics.jsonl", resume_step=resume.step if resume else 0, main=where.main
    )
    factory = functools.partial(
        LedgerTrlEnv, run.reward, tool_budget=run.rollout.tool_budget, sink=recorder
    )
    lora = LoraConfig(
        r=run.lora.rank,
        lora_alpha=run.lora.alpha,
        lora_dropout=run.lora.dropout,
        target_modules=list(run.lora.target_modules),
        task_type="CAUSAL_LM",
    )
    shaping: list[Any] | None = None
    if trl.format_reward > 0:
        shaping = [tool_format_reward(trl.format_reward, tokenizer.eos_token_id)]
    trainer = GRPOTrainer(
        model=str(warm),
        reward_funcs=shaping,
        args=grpo_config(run, trl, steps, out),
        train_dataset=Dataset.from_list(grpo_rows(train, run.rollout.tool_budget)),
        processing_class=tokenizer,
        peft_config=lora,
        # TRL's protocol types reset(**kwargs); ours names the row fields it needs
        environment_factory=cast(Any, factory),
        callbacks=[recorder],
    )
    episodes = run.grpo.groups_per_step * trl.num_generations
    label = f"GRPO on {len(train)} train scenarios, {episodes} episodes a step"
    line = grpo_line(recorder.rows)
    attach(trainer, PhaseProgress("grpo", label, out / LOG_FILE, line, main=where.main))
    if progress is not None:
        trainer.add_callback(Saved(progress, out / "grpo"))
    model = cast(Any, trainer.model)
    initial = {k: v.detach().clone() for k, v in get_peft_model_state_dict(model).items()}
    trainer.train(resume_from_checkpoint=str(resume.path) if resume else None)
    digests = None
    if trainer.accelerator.distributed_type.name in WHOLE_COPY_KINDS:
        digests = ranks.gather(adapter_digest(get_peft_model_state_dict(model)))
    adapter = out / ADAPTER
    trainer.save_model(str(staging(adapter)))  # every rank: sharded trainers gather to rank 0
    delta, changed = 0.0, 0
    if where.main:
        publish(adapter)
        delta, changed = lora_b_change(initial, adapter / ADAPTER_FILE)
    ranks.barrier()
    return GrpoResult(trainer, recorder, adapter, delta, changed, digests)


def adapter_digest(tensors: dict[str, Any]) -> str:
    """sha256 over the LoRA tensors by name (float32 bytes): equal digests, equal adapters."""
    digest = hashlib.sha256()
    for name in sorted(tensors):
        tensor = tensors[name].detach().to("cpu").float().contiguous()
        digest.update(name.encode())
        digest.update(tensor.numpy().tobytes())
    return digest.hexdigest()


def lora_b_change(initial: dict[str, Any], saved: Path) -> tuple[float, int]:
    """Largest |change| of a lora_B tensor since LoRA was attached, and how many changed."""
    from safetensors.torch import load_file

    trained = load_file(str(saved))
    deltas = [
        float((trained[name].float() - start.float().cpu()).abs().max())
        for name, start in initial.items()
        if "lora_B" in name and name in trained
    ]
    return max(deltas, default=0.0), sum(delta > 0 for delta in deltas)
