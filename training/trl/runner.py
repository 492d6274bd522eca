"""The CPU training path: tiny model, SFT warm start, TRL GRPO with LedgerEnv, eval before/after.

    python -m training.trl.runner --run cpu-smoke [--steps N] [--out DIR]

A random model never emits a tool call, so a short supervised warm start on reference
investigations (cut to fit the tiny model's context, `training.trl.data`) comes first; then
GRPOTrainer drives `LedgerTrlEnv` through `environment_factory` with the LedgerGym reward and
trains a LoRA adapter. The warm-started model and the trained adapter are both evaluated on a
few `val` scenarios through the eval path (`eval.run.evaluate`). Writes
metrics.jsonl, train.log (every metric dict; the console shows a bar per phase and short lines,
`training.trl.progress`), reward_curve.png, adapter/, summary.json, the eval runs eval-before/
and eval-after/ and their report (report/index.html, `python -m eval.report`) into
`outputs/<run>/`, which `training.trl.outputs` claims first (a changed run file needs --force).
"""

from __future__ import annotations

import functools
import os
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

from agent.rollout import RolloutConfig
from agent.tiny_model import resolve_base_model
from env.cli import Parser, run_command
from env.generation.generator import generate
from env.scenario import Scenario
from training.data_order import curriculum_seeds
from training.runs import RunConfig, RunConfigError, TrlSection, load_run_config
from training.trl.data import (
    SftExample,
    corpus_lines,
    fitted_reference,
    grpo_rows,
    initial_prompt,
)
from training.trl.episode_env import LedgerTrlEnv, tool_format_reward, trl_tool_schemas
from training.trl.outputs import RunChanged, claim_outputs, effective_run
from training.trl.progress import (
    LOG_FILE,
    PhaseProgress,
    attach,
    grpo_line,
    quiet_libraries,
    say,
    sft_line,
)
from training.trl.report import (
    EVAL_AFTER,
    EVAL_BEFORE,
    EvalSummary,
    StepRecorder,
    TrlSummary,
    evaluate,
    headline,
    plot_reward_curve,
    write_run_report,
)
from training.trl.sft import warm_start

REPO = Path(__file__).resolve().parents[2]
TREND_WINDOW = 5  # steps averaged at each end of the reward curve for the summary


def cache_dir() -> Path:
    root = os.environ.get("LEDGERGYM_CACHE")
    return (Path(root) if root else REPO / ".cache") / "tiny-models"


def _scenarios(split: str, difficulties: Sequence[str], limit: int) -> list[Scenario]:
    return [generate(split, seed) for seed in curriculum_seeds(split, difficulties, limit)]


class _Tokens:
    """Rendered lengths under the tiny tokenizer, with the tool schemas TRL shows the model."""

    def __init__(self, tokenizer: Any, tools: list[dict[str, Any]]) -> None:
        self.tokenizer = tokenizer
        self.tools = tools

    def __call__(self, messages: list[dict[str, Any]], generation_prompt: bool = False) -> int:
        from transformers.utils import logging

        level = logging.get_verbosity()
        logging.set_verbosity_error()  # measuring a too-long reference is the point, not a bug
        try:
            ids = self.tokenizer.apply_chat_template(
                messages,
                tools=self.tools,
                add_generation_prompt=generation_prompt,
                tokenize=True,
                return_dict=False,
            )
        finally:
            logging.set_verbosity(level)
        return len(ids)


def sft_examples(
    run: RunConfig, scenarios: list[Scenario], tokens: _Tokens, max_context: int
) -> list[SftExample]:
    """Fitted references whose completion also fits GRPO's `max_completion_length`."""
    trl = _trl(run)
    examples = []
    for scenario in scenarios:
        prompt = tokens(initial_prompt(scenario, run.rollout.tool_budget), True)
        limit = min(max_context - 1, prompt + trl.max_completion_length)
        example = fitted_reference(
            scenario,
            max_tokens=limit,
            count_tokens=tokens,
            tool_budget=run.rollout.tool_budget,
            reward=run.reward,
        )
        if example is not None:
            examples.append(example)
    if not examples:
        raise RuntimeError("no reference trajectory fits the context; raise max_completion_length")
    return examples


def grpo(
    run: RunConfig, warm: Path, tokenizer: Any, train: list[Scenario], steps: int, out: Path
) -> tuple[Any, StepRecorder, float, int]:
    """GRPO with LoRA through `environment_factory`; returns the trainer and LoRA change."""
    from datasets import Dataset
    from peft import LoraConfig
    from trl import GRPOConfig, GRPOTrainer

    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    trl = _trl(run)
    recorder = StepRecorder(out / "metrics.jsonl")
    factory = functools.partial(
        LedgerTrlEnv, run.reward, tool_budget=run.rollout.tool_budget, sink=recorder
    )
    batch = run.grpo.groups_per_step * trl.num_generations
    args = GRPOConfig(
        output_dir=str(out / "grpo"),
        max_steps=steps,
        per_device_train_batch_size=batch,
        steps_per_generation=1,  # on-policy: one optimizer step per generation batch
        num_generations=trl.num_generations,
        max_completion_length=trl.max_completion_length,
        max_tool_calling_iterations=trl.max_tool_calling_iterations,
        temperature=run.rollout.temperature,
        learning_rate=run.grpo.learning_rate,
        loss_type=trl.loss_type,
        scale_rewards=trl.scale_rewards,
        beta=0.0,
        use_cpu=True,
        bf16=False,
        activation_checkpointing=False,
        save_strategy="no",
        logging_steps=1,
        report_to="none",
        disable_tqdm=True,
        seed=run.seed,
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
        args=args,
        train_dataset=Dataset.from_list(grpo_rows(train, run.rollout.tool_budget)),
        processing_class=tokenizer,
        peft_config=lora,
        # TRL's protocol types reset(**kwargs); ours names the row fields it needs
        environment_factory=cast(Any, factory),
        callbacks=[recorder],
    )
    label = f"GRPO on {len(train)} train scenarios, {batch} episodes a step"
    attach(trainer, PhaseProgress("grpo", label, out / LOG_FILE, grpo_line(recorder.rows)))
    model = cast(Any, trainer.model)
    before = {n: p.detach().clone() for n, p in model.named_parameters() if "lora_B" in n}
    trainer.train()
    after = dict(model.named_parameters())
    deltas = [float((after[name].detach() - old).abs().max()) for name, old in before.items()]
    changed = sum(delta > 0 for delta in deltas)
    return trainer, recorder, max(deltas, default=0.0), changed


def _trl(run: RunConfig) -> TrlSection:
    if run.trl is None:
        raise ValueError(f"run {run.name!r} has no [trl] section")
    return run.trl


def _policy(model: Any, tokenizer: Any, run: RunConfig, name: str) -> Any:
    from agent.hf_policy import HfPolicy

    return HfPolicy(
        model,
        tokenizer,
        name=name,
        max_new_tokens=run.rollout.max_tokens,
        temperature=run.rollout.temperature,
        render_tools=trl_tool_schemas(),
    )


def run_trl(
    run: RunConfig,
    *,
    out_dir: Path,
    steps: int | None = None,
    sft_steps: int | None = None,
    eval_scenarios: int | None = None,
    train_scenarios: int | None = None,
    model_cache: Path | None = None,
) -> TrlSummary:
    """Run the whole CPU path for `run` and write its files into `out_dir`.

    The keyword overrides exist for short versions of the same run (tests, a quick look);
    `steps` defaults to `[trl] grpo_steps`.
    """
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, set_seed

    trl = _trl(run)
    if sft_steps is not None or eval_scenarios is not None:
        trl = trl.model_copy(
            update={
                "sft_steps": trl.sft_steps if sft_steps is None else sft_steps,
                "eval_scenarios": trl.eval_scenarios if eval_scenarios is None else eval_scenarios,
            }
        )
        run = run.model_copy(update={"trl": trl})
    steps = trl.grpo_steps if steps is None else steps
    started = time.perf_counter()
    timings: dict[str, float] = {}
    torch.set_num_threads(trl.torch_threads)
    set_seed(run.seed)
    out_dir.mkdir(parents=True, exist_ok=True)
    log = out_dir / LOG_FILE
    log.write_text("", encoding="utf-8")  # this run's metric dicts, one JSON object a line
    quiet_libraries()

    def lap(name: str, since: float) -> float:
        now = time.perf_counter()
        timings[name] = round(now - since, 1)
        return now

    curriculum = list(run.data.curriculum)
    train = _scenarios(run.data.split, curriculum, train_scenarios or run.data.limit)
    val = _scenarios(run.validation.split, curriculum, trl.eval_scenarios)
    corpus = list(corpus_lines(train, run.rollout.tool_budget))
    model_dir = resolve_base_model(
        run.base_model, corpus=corpus, cache_dir=model_cache or cache_dir()
    )
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    base = AutoModelForCausalLM.from_pretrained(model_dir)
    tokens = _Tokens(tokenizer, trl_tool_schemas())
    examples = sft_examples(run, train, tokens, base.config.max_position_embeddings)
    mark = lap("data_and_model", started)
    say(
        f"{run.name}: {len(train)} train and {len(val)} {run.validation.split} scenarios, "
        f"{len(examples)} reference trajectories fitted for the warm start; log: {log}"
    )

    label = f"SFT warm start on {len(examples)} reference trajectories"
    progress = PhaseProgress("sft", label, log, sft_line)
    warm = warm_start(
        trl, model_dir, tokenizer, examples, out_dir, seed=run.seed, progress=progress
    )
    mark = lap("sft", mark)

    rollout = RolloutConfig(
        tool_budget=run.rollout.tool_budget, max_turns=run.rollout.max_turns, reward=run.reward
    )
    warm_model = AutoModelForCausalLM.from_pretrained(warm).eval()
    split = run.validation.split
    before = evaluate(
        _policy(warm_model, tokenizer, run, "warm-start"),
        val,
        rollout,
        out_dir / EVAL_BEFORE,
        label=f"evaluating the warm-started model on {split}",
    )
    mark = lap("eval_before", mark)

    trainer, recorder, lora_delta, lora_changed = grpo(run, warm, tokenizer, train, steps, out_dir)
    mark = lap("grpo", mark)
    trainer.model.save_pretrained(str(out_dir / "adapter"))

    trained = trainer.model.eval()
    after = evaluate(
        _policy(trained, tokenizer, run, "grpo"),
        val,
        rollout,
        out_dir / EVAL_AFTER,
        label=f"evaluating the GRPO-trained model on {split}",
    )
    lap("eval_after", mark)

    summary = _summary(run, out_dir, examples, steps, before, after, recorder, timings)
    summary.lora_b_max_abs_delta = lora_delta
    summary.lora_tensors_changed = lora_changed
    summary.wall_s = round(time.perf_counter() - started, 1)
    plot_reward_curve(recorder.rows, out_dir / "reward_curve.png", f"{run.name}: GRPO reward")
    summary.write(out_dir / "summary.json")
    write_run_report(out_dir)  # python -m eval.report on eval-before/ eval-after/ metrics.jsonl
    return summary


def _summary(
    run: RunConfig,
    out_dir: Path,
    examples: list[SftExample],
    steps: int,
    before: EvalSummary,
    after: EvalSummary,
    recorder: StepRecorder,
    timings: dict[str, float],
) -> TrlSummary:
    trl = _trl(run)
    rows = recorder.rows
    window = max(1, min(TREND_WINDOW, len(rows) // 2))
    group_stds = [std for row in rows for std in row["group_reward_std"]]
    return TrlSummary(
        run=run.name,
        out_dir=str(out_dir),
        base_model=run.base_model,
        eval_split=run.validation.split,
        sft_steps=trl.sft_steps,
        sft_examples=len(examples),
        sft_mean_calls_kept=statistics.fmean(ex.calls_kept for ex in examples),
        sft_reference_reward=statistics.fmean(ex.reward for ex in examples),
        grpo_steps=steps,
        loss_type=trl.loss_type,
        scale_rewards=trl.scale_rewards,
        lora=run.lora.model_dump(),
        before=before,
        after=after,
        reward_first_steps=statistics.fmean(r["reward_mean"] for r in rows[:window]) if rows else 0,
        reward_last_steps=statistics.fmean(r["reward_mean"] for r in rows[-window:]) if rows else 0,
        trained_first_steps=_mean_of(rows[:window], "reward"),
        trained_last_steps=_mean_of(rows[-window:], "reward"),
        trend_window=window,
        groups_with_variance=sum(std > 0 for std in group_stds),
        groups_with_variance_total=sum(
            round((1 - r["trl"].get("frac_reward_zero_std", 1.0)) * len(r["group_reward_std"]))
            for r in rows
        ),
        groups_total=len(group_stds),
        lora_b_max_abs_delta=0.0,
        lora_tensors_changed=0,
        timings_s=timings,
        wall_s=0.0,
        extra_shaping=f"tool_format x {trl.format_reward}" if trl.format_reward else None,
    )


def _mean_of(rows: list[dict[str, Any]], trl_key: str) -> float:
    values = [row["trl"][trl_key] for row in rows if trl_key in row["trl"]]
    return statistics.fmean(values) if values else 0.0


def _main(argv: Sequence[str] | None) -> int:
    parser = Parser(prog="python -m training.trl.runner", description=__doc__.splitlines()[0])
    parser.add_argument("--run", default="cpu-smoke", help="run name in runs/ or a .toml path")
    parser.add_argument("--steps", type=int, default=None, help="GRPO steps (default: the run's)")
    parser.add_argument("--out", type=Path, default=None, help="default: outputs/<run name>/")
    parser.add_argument("--force", action="store_true", help="keep another config's outputs aside")
    args = parser.parse_args(argv)
    run = load_run_config(args.run)
    if run.trainer != "trl":
        parser.error(f"run {run.name!r} has trainer {run.trainer!r}, not 'trl'")
    out = args.out or REPO / "outputs" / run.name
    note = claim_outputs(effective_run(run, args.steps), out, force=args.force)
    if note:
        print(note)
    summary = run_trl(run, out_dir=out, steps=args.steps)
    print(summary.render())
    print("\n".join(headline(summary)))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    return run_command("python -m training.trl.runner", _main, argv, (RunConfigError, RunChanged))


if __name__ == "__main__":
    sys.exit(main())
