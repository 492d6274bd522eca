"""`train.py --check`: the resolved plan of an ART run and what it will cost, without a GPU.

Nothing here imports torch or ART. What a run does (warm start, probe, sampling, curriculum,
validation) comes from the run file and its data plan; what it costs from training.art.budget,
fed with auditor-like episodes of each curriculum level (tokens and turns, counted with a
Qwen3.5-vocabulary tokenizer: training.art.episode_tokens) and with rates that are ASSUMED until
a GPU smoke of the run measured them (training.art.smoke_rates); once the run has logged steps,
the median of its measured `time/loop_step_s` replaces the step time. Dollars at
`--usd-per-hour`, checked against `--budget-usd`; the wall clock against the last curriculum
phase.
"""

from __future__ import annotations

import json

from training.art import run_state
from training.art.budget import ASSUMED, PESSIMISM, RunCost, run_cost
from training.art.episode_tokens import LevelSizes, auditor_sizes, counter_name
from training.art.memory import device_gib, memory_line
from training.art.shared_cold_start import cold_start_key, find_shared
from training.art.smoke_rates import smoke_timing
from training.data_order import DataPlan
from training.runs import RunConfig

SIZE_SAMPLE = 8  # auditor episodes per curriculum level for tokens and turns
DEFAULT_USD_PER_HOUR = 4.3
DEFAULT_BUDGET_USD = 300.0


def level_sizes(run: RunConfig, data: DataPlan) -> dict[str, LevelSizes]:
    """Auditor-like episodes of each curriculum phase's first scenarios, measured."""
    seeds = {phase.difficulty: phase.seeds[:SIZE_SAMPLE] for phase in data.phases}
    return {size.level: size for size in auditor_sizes(data.split, seeds)}


def phase_steps(data: DataPlan) -> list[tuple[str, int, int]]:
    return [(p.difficulty, p.first_step + 1, p.end_step) for p in data.phases if p.steps]


def validation_steps(run: RunConfig) -> list[int]:
    every, last = run.validation.every_steps, run.grpo.max_steps
    steps = list(range(0, last + 1, every))
    return steps if steps[-1] == last else [*steps, last]


def trains_cold_start(run: RunConfig) -> bool:
    """Whether this invocation pays for the SFT phase (not done here, not shared by another)."""
    if run.cold_start is None:
        return False
    state = run_state.read_sft_state(run_state.model_dir(run))
    return not (state is not None and state.done) and find_shared(run) is None


def estimate(
    run: RunConfig,
    data: DataPlan,
    sizes: dict[str, LevelSizes] | None = None,
    *,
    slower: float = 1.0,
) -> RunCost:
    """`slower`: price the run on a GPU that many times slower than the rates (assumed only)."""
    sizes = sizes if sizes is not None else level_sizes(run, data)
    measured = run_state.measured_step_seconds(run_state.read_history(run_state.model_dir(run)))
    smoke = None if measured else smoke_timing(run)
    rates = smoke.rates(run.grpo.max_seq_length) if smoke is not None else ASSUMED
    if slower != 1.0 and rates.assumed and not measured:
        rates = rates.slower(slower)
    return run_cost(
        run,
        phase_steps(data),
        sizes,
        rates=rates,
        trains_cold_start=trains_cold_start(run),
        validations=len(validation_steps(run)),
        measured_step_s=measured[0] if measured else None,
    )


def render_plan(
    run: RunConfig,
    data: DataPlan,
    *,
    usd_per_hour: float = DEFAULT_USD_PER_HOUR,
    budget_usd: float = DEFAULT_BUDGET_USD,
    sizes: dict[str, LevelSizes] | None = None,
) -> str:
    """The lines `--check` prints: what will run, on what data, how long and for how much."""
    grpo, val, lora = run.grpo, run.validation, run.lora
    sizes = sizes if sizes is not None else level_sizes(run, data)
    cost = estimate(run, data, sizes)
    slow = estimate(run, data, sizes, slower=PESSIMISM) if cost.rates.assumed else None
    directory = run_state.model_dir(run)
    modules = ", ".join(lora.target_modules)
    loss = run.loss
    lines = [
        f"run         {run.name}: {run.description}",
        f"model       {run.base_model} + LoRA r={lora.rank} alpha={lora.alpha} on {modules}",
        *_machine_lines(run),
        f"backend     {run.backend.kind}; checkpoints in {directory / 'checkpoints'}",
        f"reward      {run.reward.variant}, tool cost lambda {run.reward.tool_call_cost:g}/call",
        f"loss        {loss.loss_fn}, lr {grpo.learning_rate:g} per trajectory (ART takes one "
        f"AdamW step per trajectory, each clipped at grad norm {grpo.max_grad_norm:g}), "
        f"scale_rewards={loss.scale_rewards}, importance sampling "
        f"{loss.importance_sampling_level}, KL {loss.kl_penalty_coef:g}",
        *_cold_start_lines(run),
        *_probe_lines(run),
        *_data_lines(run, data, cost),
        f"sampling    each step gathers {grpo.groups_gathered} groups x {grpo.group_size} = "
        f"{grpo.groups_gathered * grpo.group_size} rollouts and trains the first "
        f"{grpo.groups_per_step} whose outcome has spread (oversample {grpo.oversample:g}); "
        "outcome-tied groups are dropped, so a tool cost acts only inside outcome-mixed groups",
        f"steps       {grpo.max_steps} GRPO steps, at most "
        f"{grpo.groups_per_step * grpo.group_size} trajectories trained a step",
        f"validation  {val.limit} {val.split} scenarios x k={val.k} at GRPO steps "
        f"{_steps_text(validation_steps(run))} ({cost.validations} passes)",
        *_budget_lines(run, cost, usd_per_hour, budget_usd, slow),
        *_wall_clock_lines(run, cost, slow),
        _resume_line(run, data),
    ]
    return "\n".join(lines)


def _data_lines(run: RunConfig, data: DataPlan, cost: RunCost) -> list[str]:
    drawn = ", ".join(f"{level} {count}" for level, count in data.drawn.items())
    lines = [f"data        {run.data.split}: {sum(data.drawn.values())} scenarios drawn ({drawn})"]
    if data.filter is not None:
        f = data.filter
        lines.append(
            f"filter      {f.path}: kept {f.kept} with 0 < rate < 1; dropped {f.always_solved} "
            f"always solved, {f.never_solved} never solved, {f.unmeasured} unmeasured"
        )
    costs = {phase.level: phase for phase in cost.phases}
    for phase in data.phases:
        slots = phase.steps * data.scenarios_per_step
        passes = slots / len(phase.seeds)
        line = (
            f"curriculum  {phase.difficulty}: GRPO steps {phase.first_step + 1}-{phase.end_step}, "
            f"{slots} groups from {len(phase.seeds)} scenarios ({passes:.2f} passes)"
        )
        if phase.difficulty in costs:
            c = costs[phase.difficulty]
            line += (
                f"; ~{c.mean_tokens / 1000:.1f}k tokens an episode, rows padded to "
                f"{c.padded_row:,}, ~{cost.step_seconds(c):.0f} s a step"
            )
        lines.append(line)
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
    memory = memory_line(run.grpo.max_seq_length, device_gib())
    return [
        f"precision   {precision}",
        f"memory      {memory}",
        f"kernels     Gated-DeltaNet path here: {path} ({why})",
        f"wandb       {wandb_line(run)}",
    ]


def _cold_start_lines(run: RunConfig) -> list[str]:
    cold = run.cold_start
    if cold is None:
        return ["cold start  none: GRPO starts from the base model (the probe measures its rate)"]
    spread = "balanced by root cause and level" if cold.balanced else "in the split's mix"
    lines = [
        f"cold start  teacher {cold.teacher} (tools only) on {cold.scenarios} train scenarios x "
        f"{cold.samples} after the GRPO pool, {spread}; its graded successes only, SFT "
        f"{cold.epochs} epoch(s) at lr {cold.learning_rate:g}; then val pass^1 and the "
        "format-error rate at the SFT checkpoint (GRPO step 0)"
    ]
    if cold.shared:
        shared = find_shared(run)
        key = cold_start_key(run)
        where = (
            f"published by {shared.trained_by}: this run adopts it (no SFT here)"
            if shared is not None
            else "not trained yet: the first run with this key trains and publishes it"
        )
        lines.append(f"            shared cold start {key}: {where}")
    return lines


def _probe_lines(run: RunConfig) -> list[str]:
    probe = run.probe
    if not probe.enabled:
        return ["probe       off"]
    start = "the warm start" if run.cold_start is not None else "the base model"
    on_low = "stops" if probe.on_low == "stop" else "warns and goes on"
    return [
        f"probe       {probe.scenarios} stratified train scenarios x k={probe.k} = "
        f"{probe.scenarios * probe.k} rollouts against {start} before GRPO step 1: success per "
        f"level and cause, groups with spread, the no_error share; {on_low} below "
        f"{probe.min_success:.0%} grounded success"
    ]


def _budget_lines(
    run: RunConfig, cost: RunCost, usd_per_hour: float, budget_usd: float, slow: RunCost | None
) -> list[str]:
    rates = (
        f"measured: median of the run's logged steps, {cost.measured_step_s:.0f} s"
        if cost.measured_step_s
        else cost.rates.source
    )
    cold = ""
    if cost.cold_start_s:
        cold = f"cold start {cost.cold_start_s / 3600:.1f} h (teacher on the CPU + SFT), "
    lines = [
        f"budget      tokens from {SIZE_SAMPLE} auditor-like episodes a level, counted with "
        f"{counter_name()}",
        f"            rates: {rates}",
        f"            start-up {cost.startup_s / 3600:.1f} h, {cold}probe "
        f"{cost.probe_s / 3600:.1f} h, {cost.validations} validations "
        f"{cost.validation_s / 3600:.1f} h, GRPO {cost.grpo_s / 3600:.1f} h",
    ]
    for which, priced in (("", cost), (f"at {PESSIMISM:g}x slower ", slow)):
        if priced is None:
            continue
        dollars = priced.hours * usd_per_hour
        verdict = (
            f"within the ${budget_usd:,.0f} budget"
            if dollars <= budget_usd
            else f"WARNING: over the ${budget_usd:,.0f} budget (--budget-usd)"
        )
        lines.append(
            f"            {which}~{priced.hours:.1f} GPU hours -> ${dollars:,.0f} at "
            f"${usd_per_hour:g}/h: {verdict}"
        )
    return lines


def _wall_clock_lines(run: RunConfig, cost: RunCost, slow: RunCost | None) -> list[str]:
    limit = run.grpo.wall_clock_hours
    if not cost.phases:
        return []
    lines = []
    for which, priced in (("", cost), (f"at {PESSIMISM:g}x slower: ", slow)):
        if priced is None:
            continue
        last = priced.phases[-1]
        begins, ends = priced.hour_at(last.first_step - 1), priced.hour_at(last.last_step)
        where = (
            f"{which}the {last.level} phase (GRPO steps {last.first_step}-{last.last_step}) "
            f"starts near hour {begins:.1f}, step {last.last_step} ends near hour {ends:.1f}"
        )
        if ends <= limit:
            lines.append(f"wall clock  {limit:g} h: {where}: inside it")
            continue
        reached = priced.step_at_hours(limit)
        phase = "reached" if reached >= last.first_step else "NOT reached"
        lines.append(
            f"wall clock  WARNING: {limit:g} h: {where}; the run stops near GRPO step {reached} "
            f"({last.level} {phase}); raise [grpo] wall_clock_hours or lower max_steps"
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
