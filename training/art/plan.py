"""`train.py --check`: the resolved plan of an ART run and what it will cost, without a GPU.

Nothing here imports torch or ART. Token counts come from replaying the reference solution of
a few train scenarios through LedgerEnv (characters / 4: a lower bound, since a learning policy
takes more turns). GPU time uses `ASSUMED_SECONDS_PER_ROLLOUT` until a GPU smoke of the run has
timed a small step (`python -m training.art.gpu_smoke`), and once the run has logged steps the
median of the measured `time/loop_step_s` in its history.jsonl replaces both.
"""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass

from env.generation.generator import generate
from env.ledger_env import LedgerEnv
from env.scenario import reveal_truth
from training.art import run_state
from training.data_order import DataPlan
from training.runs import RunConfig

# ASSUMPTION, not a measurement: one GRPO step of 64 rollouts (about 10 turns each) on
# Qwen3.5-4B with one H100/H200-class GPU, vLLM inference plus the LoRA update, ~3 minutes.
ASSUMED_SECONDS_PER_ROLLOUT = 3.0
ASSUMED_SECONDS_PER_VAL_ROLLOUT = 1.0  # inference only, batched
TOKEN_SAMPLE = 12  # train scenarios replayed for the token estimate
CHARS_PER_TOKEN = 4


@dataclass(frozen=True)
class SmokeTiming:
    """One small step timed by the GPU smoke: a group of rollouts, then one train step."""

    rollout_s: float
    train_s: float
    rollouts: int
    max_turns: int
    at: str

    @property
    def seconds_per_rollout(self) -> float:
        return (self.rollout_s + self.train_s) / self.rollouts


def smoke_timing(run: RunConfig) -> SmokeTiming | None:
    """The last GPU smoke of this run (default --path), when it timed both phases on the same
    base model and precision; None otherwise."""
    record = run_state.read_smoke_record(run_state.smoke_dir(run))
    if not record or (record.get("base_model"), record.get("load_in_4bit")) != (
        run.base_model,
        run.model.load_in_4bit,
    ):
        return None
    try:
        timing = SmokeTiming(
            rollout_s=float(record["rollout_s"]),
            train_s=float(record["train_s"]),
            rollouts=int(record["rollouts"]),
            max_turns=int(record.get("max_turns", 0)),
            at=str(record.get("at", "?")),
        )
    except (KeyError, TypeError, ValueError):  # a smoke that stopped before the train step
        return None
    return timing if timing.rollouts > 0 else None


@dataclass(frozen=True)
class Budget:
    train_rollouts: int
    val_rollouts: int
    validations: int
    tokens_per_rollout: int
    step_seconds: float
    step_seconds_measured: int  # steps the figure comes from; 0: the smoke or the assumption
    hours: float
    smoke: SmokeTiming | None = None  # the figure's source when no step was measured


def reference_tokens(run: RunConfig, seeds: list[int]) -> int:
    """Mean context of a reference investigation: prompt, tool schemas, calls and outputs."""
    sizes = []
    for seed in seeds:
        scenario = generate(run.data.split, seed)
        env = LedgerEnv(scenario, tool_budget=run.rollout.tool_budget)
        chars = len(json.dumps(env.initial_messages())) + len(json.dumps(env.tool_specs()))
        for call in reveal_truth(scenario).reference:
            arguments = json.dumps(call.arguments)
            chars += len(call.name) + len(arguments) + len(env.call(call.name, arguments))
        env.close()
        sizes.append(chars // CHARS_PER_TOKEN)
    return int(statistics.fmean(sizes)) if sizes else 0


def validation_steps(run: RunConfig) -> list[int]:
    every, last = run.validation.every_steps, run.grpo.max_steps
    steps = list(range(0, last + 1, every))
    return steps if steps[-1] == last else [*steps, last]


def estimate(run: RunConfig, data: DataPlan) -> Budget:
    grpo, val = run.grpo, run.validation
    per_step = grpo.group_size * grpo.groups_per_step
    validations = len(validation_steps(run))
    val_rollouts = validations * val.limit * val.k
    seeds = [
        seed
        for phase in data.phases
        for seed in phase.seeds[: TOKEN_SAMPLE // len(data.phases) + 1]
    ]
    measured = run_state.measured_step_seconds(run_state.read_history(run_state.model_dir(run)))
    smoke = None if measured else smoke_timing(run)
    step_seconds, count = measured if measured else (per_step * ASSUMED_SECONDS_PER_ROLLOUT, 0)
    if smoke is not None:
        step_seconds = per_step * smoke.seconds_per_rollout
    seconds = grpo.max_steps * step_seconds + val_rollouts * ASSUMED_SECONDS_PER_VAL_ROLLOUT
    return Budget(
        train_rollouts=grpo.max_steps * per_step,
        val_rollouts=val_rollouts,
        validations=validations,
        tokens_per_rollout=reference_tokens(run, seeds[:TOKEN_SAMPLE]),
        step_seconds=step_seconds,
        step_seconds_measured=count,
        hours=seconds / 3600,
        smoke=smoke,
    )


def render_plan(run: RunConfig, data: DataPlan) -> str:
    """The lines `--check` prints: what will run, on what data, for how long."""
    grpo, val, lora = run.grpo, run.validation, run.lora
    budget = estimate(run, data)
    directory = run_state.model_dir(run)
    modules = ", ".join(lora.target_modules)
    loss = run.loss
    lines = [
        f"run         {run.name}: {run.description}",
        f"model       {run.base_model} + LoRA r={lora.rank} alpha={lora.alpha} on {modules}",
        *_machine_lines(run),
        f"backend     {run.backend.kind}; checkpoints in {directory / 'checkpoints'}",
        f"reward      {run.reward.variant}, tool cost lambda {run.reward.tool_call_cost:g}/call",
        f"loss        {loss.loss_fn}, lr {grpo.learning_rate:g}, scale_rewards="
        f"{loss.scale_rewards}, importance sampling {loss.importance_sampling_level}, "
        f"KL {loss.kl_penalty_coef:g}",
        *_data_lines(run, data),
        f"steps       {grpo.max_steps} x {grpo.groups_per_step} groups x {grpo.group_size} "
        f"rollouts = {grpo.groups_per_step * grpo.group_size} rollouts/step",
        f"validation  {val.limit} {val.split} scenarios x k={val.k} at GRPO steps "
        f"{_steps_text(validation_steps(run))} ({budget.validations} passes)",
        *_cold_start_lines(run),
        *_budget_lines(run, budget),
        _resume_line(run, data),
    ]
    return "\n".join(lines)


def _data_lines(run: RunConfig, data: DataPlan) -> list[str]:
    drawn = ", ".join(f"{level} {count}" for level, count in data.drawn.items())
    lines = [f"data        {run.data.split}: {sum(data.drawn.values())} scenarios drawn ({drawn})"]
    if data.filter is not None:
        f = data.filter
        lines.append(
            f"filter      {f.path}: kept {f.kept} with 0 < rate < 1; dropped {f.always_solved} "
            f"always solved, {f.never_solved} never solved, {f.unmeasured} unmeasured"
        )
    for phase in data.phases:
        slots = phase.steps * data.groups_per_step
        passes = slots / len(phase.seeds)
        lines.append(
            f"curriculum  {phase.difficulty}: GRPO steps {phase.first_step + 1}-{phase.end_step}, "
            f"{slots} groups from {len(phase.seeds)} scenarios ({passes:.2f} passes)"
        )
    return lines


def _machine_lines(run: RunConfig) -> list[str]:
    """Base precision, the Gated-DeltaNet kernel path here, and what W&B will do."""
    from training.art.backends import gdn_kernel_path, wandb_line

    setting = f"[model] load_in_4bit = {str(run.model.load_in_4bit).lower()}"
    if run.model.load_in_4bit:
        precision = f"4-bit base weights ({setting}; vLLM samples bf16: two different models)"
    else:
        precision = f"bf16 base weights ({setting}), as ART's vLLM samples"
    path, why = gdn_kernel_path(run.base_model)
    return [
        f"precision   {precision}",
        f"kernels     Gated-DeltaNet path here: {path} ({why})",
        f"wandb       {wandb_line(run)}",
    ]


def _cold_start_lines(run: RunConfig) -> list[str]:
    cold = run.cold_start
    if cold is None:
        return []
    return [
        f"cold start  teacher {cold.teacher} on {cold.scenarios} train scenarios x {cold.samples}, "
        f"successes only, SFT {cold.epochs} epoch(s) at lr {cold.learning_rate:g}, then GRPO"
    ]


def _budget_lines(run: RunConfig, budget: Budget) -> list[str]:
    trained_tokens = budget.train_rollouts * budget.tokens_per_rollout
    smoke = budget.smoke
    if budget.step_seconds_measured:
        source = f"measured: median of {budget.step_seconds_measured} logged steps"
    elif smoke is not None:
        source = (
            f"GPU smoke of {smoke.at}: {smoke.rollout_s:.0f} s for {smoke.rollouts} rollouts of "
            f"at most {smoke.max_turns} turns + {smoke.train_s:.0f} s train step = "
            f"{smoke.seconds_per_rollout:.1f} s per rollout; rough, until history.jsonl has steps"
        )
    else:
        source = (
            f"ASSUMED {ASSUMED_SECONDS_PER_ROLLOUT:g} s per rollout on one H100/H200-class GPU; "
            "the measured time/loop_step_s in history.jsonl replaces it after the first steps"
        )
    lines = [
        f"budget      {budget.train_rollouts:,} train + {budget.val_rollouts:,} validation "
        "rollouts",
        f"            ~{budget.tokens_per_rollout:,} tokens per trajectory (reference replay, "
        f"a lower bound) -> ~{trained_tokens / 1e6:,.0f}M trained tokens",
        f"            ~{budget.step_seconds:.0f} s/step ({source})",
        f"            ~{budget.hours:.1f} GPU hours in all",
    ]
    limit = run.grpo.wall_clock_hours
    if budget.hours > limit:
        reachable = int(limit * 3600 / budget.step_seconds) if budget.step_seconds else 0
        lines.append(
            f"            wall-clock limit {limit:g} h: the run stops near GRPO step "
            f"{min(reachable, run.grpo.max_steps)}; rerun to continue"
        )
    return lines


def _resume_line(run: RunConfig, data: DataPlan) -> str:
    directory = run_state.model_dir(run)
    steps = run_state.checkpoint_steps(directory)
    if not steps:
        return "resume      no checkpoints yet: starts at step 0"
    ledger = directory / run_state.RUN_FILE
    same = False
    if ledger.is_file():
        saved = json.loads(ledger.read_text(encoding="utf-8"))
        same = (
            saved.get("fingerprint") == run.fingerprint()
            and saved.get("data_fingerprint") == data.fingerprint()
        )
    verdict = "config unchanged" if same else "config CHANGED since: needs --force"
    return f"resume      checkpoint {steps[-1]:04d} found: continues from it ({verdict})"


def _steps_text(steps: list[int]) -> str:
    if len(steps) <= 6:
        return ", ".join(map(str, steps))
    return f"{steps[0]}, {steps[1]}, ..., {steps[-1]}"
