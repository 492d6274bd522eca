"""Export a checkpoint: the PEFT adapter of ART's `checkpoints/NNNN` plus a model card.

    python train.py --run shaped-01 --export exports/shaped-01 [--step 120]

Copies the adapter files (adapter_config.json, adapter_model.safetensors, tokenizer files when
present) and writes README.md from the run: base model, data, reward, steps, the validation
table from history.jsonl, how to serve and evaluate it, known limits. Plain files: no GPU,
no torch. `base_model_name_or_path` is set to the run's base model, so PEFT and vLLM find it.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from training.art import run_state
from training.art.chat_template import names_preserve_thinking, serve_kwargs_json
from training.runs import RunConfig, vllm_max_lora_rank

CARD = "README.md"
ADAPTER_CONFIG = run_state.ADAPTER_CONFIG
WEIGHTS = run_state.ADAPTER_WEIGHTS
# besides the adapter: what a tokenizer-aware server may want from the same directory
EXTRAS = (
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "added_tokens.json",
    "chat_template.jinja",
    "vocab.json",
    "merges.txt",
)


class ExportError(RuntimeError):
    """No such checkpoint, or not a PEFT adapter: one line naming what was looked at."""


@dataclass(frozen=True)
class ExportResult:
    step: int
    source: Path
    destination: Path
    files: tuple[str, ...]


def find_checkpoint(directory: Path, step: int | None) -> tuple[int, Path]:
    steps = run_state.checkpoint_steps(directory)
    if not steps:
        raise ExportError(f"no checkpoints under {directory / 'checkpoints'}")
    if step is None:
        step = steps[-1]
    elif step not in steps:
        raise ExportError(f"no checkpoint {step:04d} in {directory / 'checkpoints'}; have {steps}")
    return step, directory / "checkpoints" / f"{step:04d}"


def export_checkpoint(run: RunConfig, destination: Path, step: int | None = None) -> ExportResult:
    """Raises ExportError for a missing checkpoint or adapter and for a destination not writable."""
    try:
        return _export(run, destination, step)
    except OSError as exc:
        where = exc.filename or destination
        raise ExportError(f"cannot export to {destination}: {where}: {exc.strerror}") from None
    except ValueError as exc:  # an adapter_config.json that is not JSON (or not UTF-8)
        raise ExportError(f"the checkpoint's {ADAPTER_CONFIG} cannot be read: {exc}") from None


def _export(run: RunConfig, destination: Path, step: int | None) -> ExportResult:
    directory = run_state.model_dir(run)
    step, source = find_checkpoint(directory, step)
    weights = [name for name in WEIGHTS if (source / name).is_file()]
    problem = run_state.adapter_problem(source, run.lora.target_modules)
    if problem:
        raise ExportError(f"{source} holds no PEFT adapter ({problem})")
    destination.mkdir(parents=True, exist_ok=True)
    copied = [name for name in (*weights, *EXTRAS) if (source / name).is_file()]
    for name in copied:
        shutil.copy2(source / name, destination / name)
    original_base = _write_adapter_config(source, destination, run.base_model)
    history = run_state.read_history(directory)
    card = model_card(
        run,
        step,
        history,
        run_state.grpo_offset(directory),
        original_base,
        checkpoint_template(source),
    )
    (destination / CARD).write_text(card, encoding="utf-8")
    files = tuple(sorted([*copied, ADAPTER_CONFIG, CARD]))
    return ExportResult(step, source, destination, files)


def _write_adapter_config(source: Path, destination: Path, base_model: str) -> str | None:
    """ART trains on Unsloth's copy of the base; servers should load the run's base model."""
    config = json.loads((source / ADAPTER_CONFIG).read_text(encoding="utf-8"))
    original = config.get("base_model_name_or_path")
    config["base_model_name_or_path"] = base_model
    (destination / ADAPTER_CONFIG).write_text(json.dumps(config, indent=2), encoding="utf-8")
    return original if original != base_model else None


def model_card(
    run: RunConfig,
    step: int,
    history: list[dict[str, Any]],
    sft_steps: int = 0,
    original_base: str | None = None,
    chat_template: str | None = None,
) -> str:
    """`chat_template`: the one saved with the checkpoint, which decides the serve settings."""
    lines = [
        "---",
        f"base_model: {run.base_model}",
        "license: apache-2.0",
        "library_name: peft",
        "tags: [ledgergym, billsleuth, grpo, lora, openpipe-art]",
        "---",
        f"# LedgerGym `{run.name}`, checkpoint {step:04d}",
        "",
        run.description or "A LoRA adapter trained with GRPO in LedgerGym.",
        "",
        "A LoRA adapter for an agent that investigates SaaS billing disputes through nine tools "
        "over a SQLite billing database (LedgerGym's BillSleuth environment), trained with GRPO "
        "in OpenPipe ART 0.5.18.",
        "",
        "## Training",
        "",
        *_training_table(run, step, sft_steps, original_base),
        "",
        "## Validation during training",
        "",
        *_validation_table(run, history),
        "",
        *_usage(run, chat_template),
        "",
        "## Known limits",
        "",
        "- Trained and validated on generated scenarios only; the `heldout` root cause "
        "(`timezone_period_boundary`) is never in the training split.",
        "- Validation above is pass^1 on the run's validation split during training; the "
        "numbers to quote come from `eval/run.py` on the `eval` split with k samples.",
        "- Thinking was off in training (`enable_thinking: false`); serve it the same way.",
        _preserve_thinking_line(chat_template),
        f"- Tool calls must be parsed with vLLM's `qwen3_coder` parser for {run.base_model}.",
    ]
    return "\n".join(lines) + "\n"


def _training_table(
    run: RunConfig, step: int, sft_steps: int, original_base: str | None
) -> list[str]:
    data, grpo, loss, lora = run.data, run.grpo, run.loss, run.lora
    cold, rollout = run.cold_start, run.rollout
    curriculum = " -> ".join(data.curriculum)
    rows = [
        (
            "base model",
            run.base_model + (f" (trained on `{original_base}`)" if original_base else ""),
        ),
        ("checkpoint", f"{step:04d}: GRPO step {max(0, step - sft_steps)} of {grpo.max_steps}"),
        (
            "cold start",
            f"SFT on `{cold.teacher}` successes ({sft_steps} checkpoint)" if cold else "none",
        ),
        (
            "data",
            f"`{data.split}`, first {data.limit} scenarios, curriculum {curriculum}",
        ),
        ("filter", f"`{data.filter}` (0 < success rate < 1)" if data.filter else "none"),
        ("reward", _reward(run)),
        (
            "GRPO",
            f"{grpo.group_size} rollouts x {grpo.groups_per_step} groups per step, "
            f"lr {grpo.learning_rate:g}",
        ),
        (
            "loss",
            f"{loss.loss_fn}, scale_rewards={loss.scale_rewards}, importance sampling "
            f"{loss.importance_sampling_level}, KL {loss.kl_penalty_coef:g}",
        ),
        (
            "LoRA",
            f"r={lora.rank}, alpha={lora.alpha}, dropout={lora.dropout:g}, "
            f"on {', '.join(lora.target_modules)}",
        ),
        (
            "rollout",
            f"tool budget {rollout.tool_budget}, max turns {rollout.max_turns}, "
            f"temperature {rollout.temperature:g}, thinking off",
        ),
        ("seed", str(run.seed)),
        ("config fingerprint", run.fingerprint()),
    ]
    return ["| | |", "|---|---|", *(f"| {name} | {value} |" for name, value in rows)]


def _reward(run: RunConfig) -> str:
    reward = run.reward
    if reward.variant == "binary":
        return "binary: 1 for eval success with a traceable evidence chain and no invented number"
    weights = reward.model_dump(exclude={"variant"})
    return "shaped: " + ", ".join(f"{name} {value:g}" for name, value in weights.items())


def _validation_table(run: RunConfig, history: list[dict[str, Any]]) -> list[str]:
    rows = sorted(
        (row for row in history if run_state.PASS1_KEY in row), key=lambda row: row.get("step", 0)
    )
    if not rows:
        return ["No validation was logged for this run (history.jsonl has no `val/pass1`)."]
    split, limit = run.validation.split, run.validation.limit
    table = [
        f"`{split}` split, {limit} scenarios, k={run.validation.k}, graded by `eval/grader.py`.",
        "",
        "| step | pass^1 | mean reward |",
        "|---|---|---|",
    ]
    for row in rows:
        reward = row.get("val/reward")
        reward_text = f"{reward:.3f}" if isinstance(reward, int | float) else "-"
        table.append(f"| {row.get('step')} | {row[run_state.PASS1_KEY]:.3f} | {reward_text} |")
    return table


def checkpoint_template(checkpoint: Path) -> str | None:
    """The chat template saved beside the adapter (chat_template.jinja or tokenizer_config)."""
    jinja = checkpoint / "chat_template.jinja"
    if jinja.is_file():
        return jinja.read_text(encoding="utf-8")
    try:
        config = json.loads((checkpoint / "tokenizer_config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    template = config.get("chat_template") if isinstance(config, dict) else None
    return template if isinstance(template, str) else None


def _preserve_thinking_line(chat_template: str | None) -> str:
    if chat_template is None:
        return (
            "- No chat template was saved with the checkpoint: if the base model's template "
            "names `preserve_thinking`, serve with `preserve_thinking: false` too, as training "
            "rendered it (true stops the template trimming past assistant text)."
        )
    if names_preserve_thinking(chat_template):
        return (
            "- The chat template names `preserve_thinking`; training rendered with "
            "`preserve_thinking: false` (true stops it trimming past assistant text), and the "
            "serve command above says the same."
        )
    return "- The chat template does not name `preserve_thinking`; nothing to set for it."


def _usage(run: RunConfig, chat_template: str | None = None) -> list[str]:
    return [
        "## Serve and evaluate",
        "",
        "```bash",
        f"vllm serve {run.base_model} --enable-lora \\",
        f"  --max-lora-rank {vllm_max_lora_rank(run.lora.rank)} "
        f"--max-model-len {run.grpo.max_seq_length} \\",
        "  --lora-modules ledgergym=<this directory> \\",
        "  --enable-auto-tool-choice --tool-call-parser qwen3_coder \\",
        f"  --default-chat-template-kwargs '{serve_kwargs_json(run.base_model, chat_template)}'",
        "python eval/run.py --base-url http://127.0.0.1:8000/v1 --model-name ledgergym \\",
        "  --split eval --k 4",
        "```",
    ]
