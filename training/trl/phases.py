"""The phases of a TRL run, in order: data and model, the SFT warm start and its evaluation,
GRPO, the adapter's evaluation and the summary. `Phases` holds what they share (the run, the
output folder, this process's rank, the timings, `RunProgress`); `training.trl.runner` calls
them. Under several processes every rank trains and rank 0 alone evaluates and writes.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent.rollout import RolloutConfig
from agent.tiny_model import resolve_base_model
from env.generation.generator import generate
from env.scenario import Scenario
from training.data_order import curriculum_seeds
from training.runs import RunConfig, TrlSection
from training.trl import ranks
from training.trl.checkpoints import RunProgress
from training.trl.data import SftExample, corpus_lines, fitted_reference, initial_prompt
from training.trl.episode_env import trl_tool_schemas
from training.trl.grpo import GrpoResult, grpo
from training.trl.progress import LOG_FILE, PhaseProgress, quiet_libraries, say, sft_line
from training.trl.report import (
    EVAL_AFTER,
    EVAL_BEFORE,
    EvalSummary,
    evaluate,
    finished_evaluation,
    plot_reward_curve,
    read_evaluation,
    write_run_report,
)
from training.trl.sft import WARM_START, warm_start
from training.trl.summary import SUMMARY_FILE, TrlSummary, build_summary


def _scenarios(split: str, difficulties: Sequence[str], limit: int) -> list[Scenario]:
    return [generate(split, seed) for seed in curriculum_seeds(split, difficulties, limit)]


class Tokens:
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
    run: RunConfig, scenarios: list[Scenario], tokens: Tokens, max_context: int
) -> list[SftExample]:
    """Fitted references whose completion also fits GRPO's `max_completion_length`."""
    trl = trl_section(run)
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


@dataclass
class RunData:
    train: list[Scenario]
    val: list[Scenario]
    tokenizer: Any
    model_dir: str | Path
    examples: list[SftExample]


class Phases:
    """The run's phases in order, with what they share: timings, the log, rank, progress."""

    def __init__(self, run: RunConfig, out: Path, where: ranks.Ranks, progress: RunProgress):
        import torch
        from transformers import set_seed

        self.run, self.trl, self.out = run, trl_section(run), out
        self.where, self.progress = where, progress
        self.started = self.mark = time.perf_counter()
        self.timings: dict[str, float] = {}
        self.log = out / LOG_FILE
        self.rollout = RolloutConfig(
            tool_budget=run.rollout.tool_budget, max_turns=run.rollout.max_turns, reward=run.reward
        )
        torch.set_num_threads(max(1, self.trl.torch_threads // where.local_world))
        set_seed(run.seed)
        if where.main:
            out.mkdir(parents=True, exist_ok=True)
            if not any((out / part).exists() for part in ("sft", WARM_START, "grpo")):
                self.log.write_text("", encoding="utf-8")  # a fresh run; a continued one appends
        quiet_libraries()

    def lap(self, name: str) -> None:
        now = time.perf_counter()
        self.timings[name] = round(now - self.mark, 1)
        self.mark = now

    def prepare(self, train_scenarios: int, model_cache: Path) -> RunData:
        from transformers import AutoConfig, AutoTokenizer

        run = self.run
        curriculum = list(run.data.curriculum)
        train = _scenarios(run.data.split, curriculum, train_scenarios)
        val = _scenarios(run.validation.split, curriculum, self.trl.eval_scenarios)
        corpus = list(corpus_lines(train, run.rollout.tool_budget))
        model_dir = ranks.main_first(
            lambda: resolve_base_model(run.base_model, corpus=corpus, cache_dir=model_cache)
        )
        tokenizer = AutoTokenizer.from_pretrained(model_dir)
        context = AutoConfig.from_pretrained(model_dir).max_position_embeddings
        examples = sft_examples(run, train, Tokens(tokenizer, trl_tool_schemas()), context)
        self.lap("data_and_model")
        if self.where.main:
            say(
                f"{run.name}: {len(train)} train and {len(val)} {run.validation.split} "
                f"scenarios, {len(examples)} reference trajectories fitted for the warm start, "
                f"{self.where.world} process(es); log: {self.log}"
            )
        return RunData(train, val, tokenizer, model_dir, examples)

    def warm_start(self, data: RunData) -> tuple[Path, EvalSummary | None]:
        """The SFT warm start, then its evaluation (rank 0; kept from an earlier run)."""
        trl, out, where, progress = self.trl, self.out, self.where, self.progress
        reused = (out / WARM_START / "config.json").is_file()
        progress.enter("the SFT warm start", trl.sft_steps, trl.sft_save_steps)
        label = f"SFT warm start on {len(data.examples)} reference trajectories"
        display = PhaseProgress("sft", label, self.log, sft_line, main=where.main)
        warm = warm_start(
            trl,
            data.model_dir,
            data.tokenizer,
            data.examples,
            out,
            seed=self.run.seed,
            display=display,
            run=progress,
        )
        progress.kept.append(f"the SFT warm start ({warm})")
        self.lap("sft")
        progress.enter("the evaluation of the warm-started model")
        before = None
        if where.main and reused and finished_evaluation(out / EVAL_BEFORE):
            before = read_evaluation(out / EVAL_BEFORE)  # this warm start's, from before
        elif where.main:
            before = self._evaluate(data, warm, None, EVAL_BEFORE, "warm-start")
        ranks.barrier()  # the other ranks wait for rank 0's evaluation
        self.lap("eval_before")
        return warm, before

    def grpo(self, data: RunData, warm: Path, steps: int) -> GrpoResult:
        self.progress.enter("GRPO", steps, self.trl.grpo_save_steps)
        run, trl, out = self.run, self.trl, self.out
        result = grpo(run, trl, warm, data.tokenizer, data.train, steps, out, self.progress)
        self.progress.kept.append(f"the GRPO-trained adapter ({result.adapter})")
        self.lap("grpo")
        return result

    def finish(
        self, data: RunData, warm: Path, before: EvalSummary | None, result: GrpoResult, steps: int
    ) -> TrlSummary:
        """Rank 0: the adapter's evaluation, the summary, the curve and the report."""
        assert before is not None
        self.progress.enter("the evaluation of the GRPO-trained model")
        after = self._evaluate(data, warm, result.adapter, EVAL_AFTER, "grpo")
        self.lap("eval_after")
        run, out, rows = self.run, self.out, result.recorder.rows
        summary = build_summary(run, out, data.examples, steps, (before, after), rows, self.timings)
        summary.lora_b_max_abs_delta = result.lora_b_max_abs_delta
        summary.lora_tensors_changed = result.lora_tensors_changed
        summary.processes = self.where.world
        summary.rank_adapter_digests = result.rank_digests
        summary.continued_from = dict(self.progress.continued)
        summary.wall_s = round(time.perf_counter() - self.started, 1)
        plot_reward_curve(rows, out / "reward_curve.png", f"{run.name}: GRPO reward")
        write_run_report(out)  # python -m eval.report on eval-before/ eval-after/ metrics.jsonl
        summary.write(out / SUMMARY_FILE)  # last: its presence means the run is finished
        return summary

    def _evaluate(
        self, data: RunData, warm: Path, adapter: Path | None, folder: str, name: str
    ) -> EvalSummary:
        model = _eval_model(warm, adapter, self.trl, self.where.local_rank)
        policy = _policy(model, data.tokenizer, self.run, name)
        what = "warm-started" if adapter is None else "GRPO-trained"
        label = f"evaluating the {what} model on {self.run.validation.split}"
        return evaluate(policy, data.val, self.rollout, self.out / folder, label=label)


def _eval_model(warm: Path, adapter: Path | None, trl: TrlSection, local_rank: int) -> Any:
    """The model to evaluate, loaded from what the phase wrote (also right after a sharded
    trainer, whose ranks each hold only a part): the warm start, with the adapter if given."""
    import torch
    from transformers import AutoModelForCausalLM

    dtype = torch.bfloat16 if trl.bf16 else torch.float32
    model = AutoModelForCausalLM.from_pretrained(warm, dtype=dtype)
    if adapter is not None:
        from peft import PeftModel

        model = PeftModel.from_pretrained(model, adapter)
    if trl.device == "gpu":
        model = model.to(f"cuda:{local_rank}")
    return model.eval()


def trl_section(run: RunConfig) -> TrlSection:
    if run.trl is None:
        raise ValueError(f"run {run.name!r} has no [trl] section")
    return run.trl
