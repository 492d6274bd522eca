"""The SFT warm start of the CPU path: full-weight SFT of the tiny model on fitted references.

TRL's SFTTrainer with assistant-only loss, and a `compute_loss` made for this data on CPU:
every example opens with the same long prompt, so a batch runs it once (see
`_assistant_scored`); the loss equals TRL's (tests/train/test_trl_runner.py checks it).
Used by `training.trl.runner`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from training.runs import RunConfigError, TrlSection
from training.trl import ranks
from training.trl.checkpoints import (
    KEEP,
    Checkpoint,
    RunProgress,
    Saved,
    drop_unfinished,
    last_checkpoint,
    publish,
    staging,
)
from training.trl.data import SftExample
from training.trl.episode_env import trl_tool_schemas
from training.trl.progress import PhaseProgress, attach

WARM_START = "warm_start"


def warm_start(
    trl: TrlSection,
    model_dir: str | Path,
    tokenizer: Any,
    examples: list[SftExample],
    out: Path,
    *,
    seed: int = 0,
    display: PhaseProgress | None = None,
    run: RunProgress | None = None,
) -> Path:
    """Full-weight SFT of the tiny model on the fitted references (assistant tokens only);
    `display` replaces transformers' printed log dicts by a bar and short lines.

    Continues from the newest `sft/checkpoint-N` where an earlier run was stopped; a finished
    warm start (`warm_start/`) is reused as it is. Under several processes each takes its
    share of every batch and the loss is SFTTrainer's own (the shared-prefix loss below calls
    the decoder past DDP's wrapper, which would skip the gradient all-reduce).
    """
    warm = out / WARM_START
    if (warm / "config.json").is_file():
        return warm
    from datasets import Dataset
    from transformers import AutoModelForCausalLM
    from trl import SFTConfig, SFTTrainer

    world = ranks.from_environment()
    tools = json.dumps(trl_tool_schemas())  # a string column keeps Arrow out of the schema
    rows = [{"messages": ex.messages, "tools": tools} for ex in examples]
    args = SFTConfig(
        output_dir=str(out / "sft"),
        max_steps=trl.sft_steps,
        per_device_train_batch_size=per_device(trl.sft_batch_size, world.world, "sft_batch_size"),
        learning_rate=trl.sft_learning_rate,
        lr_scheduler_type="cosine",
        warmup_steps=max(1, trl.sft_steps // 20),
        max_length=None,  # examples are fitted to the context already; never cut the submit
        assistant_only_loss=True,
        use_cpu=trl.device == "cpu",
        bf16=trl.bf16,
        activation_checkpointing=False,  # TRL defaults it on; slow on CPU
        save_strategy="steps",
        save_steps=trl.sft_save_steps,
        save_total_limit=KEEP,
        ddp_find_unused_parameters=False,  # every weight takes part in every step
        report_to="none",
        disable_tqdm=True,
        logging_steps=max(1, trl.sft_steps // 5),
        seed=seed,
    )
    model = AutoModelForCausalLM.from_pretrained(model_dir)
    trainer_class = SFTTrainer if world.several else _assistant_scored(SFTTrainer)
    trainer = trainer_class(
        model=model, args=args, train_dataset=Dataset.from_list(rows), processing_class=tokenizer
    )
    if display is not None:
        attach(trainer, display)
    if run is not None:
        trainer.add_callback(Saved(run, out / "sft"))
    if trl.sft_steps > 0:
        resume = resume_point(out / "sft", run)
        trainer.train(resume_from_checkpoint=str(resume.path) if resume else None)
    trainer.save_model(str(staging(warm)))  # every rank: sharded trainers gather to rank 0
    if world.main:
        tokenizer.save_pretrained(str(staging(warm)))
        publish(warm)
    ranks.barrier()
    return warm


def per_device(batch: int, world: int, key: str) -> int:
    """A run file's batch is per optimizer step; each of `world` processes takes a share."""
    if batch % world:
        raise RunConfigError(
            f"[trl] {key} = {batch} does not split over {world} processes: make it a multiple"
        )
    return batch // world


def resume_point(phase_dir: Path, run: RunProgress | None) -> Checkpoint | None:
    """The checkpoint every rank continues from (rank 0 decides, sets aside cut ones)."""

    def decide() -> Checkpoint | None:
        kept = last_checkpoint(phase_dir)
        drop_unfinished(phase_dir, kept)
        return kept

    kept = ranks.from_main(decide)
    if run is not None:
        run.checkpoint = kept
        if kept is not None:
            run.continued[phase_dir.name] = kept.step
    return kept


def _assistant_scored(base: type) -> type:
    """SFTTrainer whose loss runs the shared prompt once per batch and scores only replies.

    Two CPU savings, same loss (mean NLL over assistant tokens): every example opens with the
    same ~2,600-token system prompt and tool schemas, so the batch runs that prefix once and
    the rest of each example on a copy of its KV cache (gradients flow back through it); and
    only assistant positions are projected onto the vocabulary, where TRL 1.16's fused LM head
    scores every position without Triton (trl/trainer/utils.py:1640-1650).
    """
    import torch
    import torch.nn.functional as F

    class AssistantScoredSFTTrainer(base):  # type: ignore[misc, valid-type]
        def compute_loss(
            self,
            model: Any,
            inputs: dict[str, Any],
            return_outputs: bool = False,
            num_items_in_batch: Any = None,
        ) -> Any:
            ids, mask, labels = inputs["input_ids"], inputs["attention_mask"], inputs["labels"]
            shared = _shared_prefix(ids, mask, labels)
            decoder = model.get_decoder()
            cache = None
            if shared > 0:
                cache = decoder(input_ids=ids[:1, :shared], use_cache=True).cache
                cache.batch_repeat_interleave(ids.size(0))
            hidden = decoder(
                input_ids=ids[:, shared:],
                attention_mask=mask,
                cache=cache,
                use_cache=cache is not None,
            ).last_hidden_state[:, :-1]
            targets = labels[:, shared + 1 :]
            keep = targets != -100
            logits = model.get_output_embeddings()(hidden[keep]).float()
            count = keep.sum() if num_items_in_batch is None else num_items_in_batch
            total = F.cross_entropy(logits, targets[keep], reduction="sum")
            loss = total / torch.as_tensor(count).clamp(min=1)
            hits = (logits.argmax(-1) == targets[keep]).float()
            self._metrics["train"]["mean_token_accuracy"].append(
                hits.mean().item() if len(hits) else 0
            )
            return (loss, None) if return_outputs else loss

    return AssistantScoredSFTTrainer


def _shared_prefix(ids: Any, mask: Any, labels: Any) -> int:
    """Leading columns equal in every row, unpadded, and ending before the first scored token."""
    same = (ids == ids[:1]).all(0) & mask.bool().all(0)
    common = int(same.long().cumprod(0).sum())
    scored = (labels != -100).any(0).nonzero()
    first = int(scored[0]) if len(scored) else ids.size(1)
    return max(0, min(common, first - 1, ids.size(1) - 1))
