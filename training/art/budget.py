"""What a run (and the whole experiment) costs in GPU hours and dollars, phase by phase.

The model, in the terms ART's LocalBackend works in (one GPU: vLLM samples, then sleeps while
Unsloth trains one row per trajectory):
- a GRPO step = the rollout wave (every gathered rollout at once; the wave ends with its
  longest episode: turns x seconds per turn) + the update (the trained rows, each padded to
  the step's longest row rounded up to 2,048 tokens, at the training throughput) + the swap
  between the two;
- tokens and turns per episode come from auditor-like episodes of each curriculum level
  (training.art.episode_tokens), the longest of the sample standing for a step's longest;
- validation, the probe and the final evals are inference waves; the cold start is the teacher
  on the CPU (the GPU waits) and SFT at the training throughput; each invocation starts ART.
The throughputs below are ASSUMPTIONS for an H100/H200-class GPU until measured: a GPU smoke of
the run (`python -m training.art.gpu_smoke`) replaces seconds per turn and the training
throughput with its own, and once the run has logged steps their median time replaces the step.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from training.art.episode_tokens import LevelSizes
from training.runs import RunConfig

# ASSUMED (not measured here): one turn of ~100 concurrent episodes on vLLM, a 4B model: the
# new tool output prefilled (~600 tokens, the rest prefix-cached) and ~50 tokens decoded at
# ~30-40 tokens/s per sequence under that load
SECONDS_PER_TURN = 2.5
# ASSUMED: Unsloth LoRA forward + backward with gradient checkpointing, ~3.2e10 FLOPs a token
# (6N + a 2N recompute, N = 4e9 parameters) at ~35% of an H100's 989 dense bf16 TFLOPS
TRAIN_TOKENS_PER_SECOND = 10_000.0
SWAP_SECONDS = 30.0  # ASSUMED: vLLM sleep / wake and the LoRA hand-over, each step
STARTUP_SECONDS = 600.0  # ASSUMED: Unsloth load + vLLM start per invocation (first: its build)
EVAL_STARTUP_SECONDS = 300.0  # ASSUMED: vLLM serving a base or an exported LoRA
TEACHER_SECONDS_PER_EPISODE = 0.25  # measured: the auditor on this 2-core CPU, 8 at a time
VLLM_MAX_SEQS = 256  # vLLM's default max_num_seqs: a wave holds at most this many episodes
PAD_MULTIPLE = 2048  # ART pads a step's rows to the longest, rounded up to this
SMOKE_HOURS = 0.5  # python -m training.art.gpu_smoke's own --timeout-s (1,800 s)
# the reviews' step-time estimates for this workload ran from ~3 to ~8 minutes: until a smoke
# measures the GPU, every plan is also priced at half the assumed speed, and must fit there too
PESSIMISM = 2.0


@dataclass(frozen=True)
class Rates:
    seconds_per_turn: float
    train_tokens_per_second: float
    source: str  # "ASSUMED ..." or where the measurement came from

    @property
    def assumed(self) -> bool:
        return self.source.startswith("ASSUMED")

    def slower(self, factor: float) -> Rates:
        """The same GPU `factor` times slower at both: the pessimistic side of an assumption."""
        return Rates(
            self.seconds_per_turn * factor,
            self.train_tokens_per_second / factor,
            f"{self.source}, {factor:g}x slower",
        )


ASSUMED = Rates(
    SECONDS_PER_TURN,
    TRAIN_TOKENS_PER_SECOND,
    f"ASSUMED {SECONDS_PER_TURN:g} s per turn, {TRAIN_TOKENS_PER_SECOND:,.0f} trained tokens/s "
    "(H100/H200-class)",
)


@dataclass(frozen=True)
class PhaseCost:
    level: str
    first_step: int  # 1-based GRPO step numbers, inclusive
    last_step: int
    step_seconds: float
    rollout_seconds: float
    train_seconds: float
    padded_row: int  # tokens a trained row is padded to
    mean_tokens: float

    @property
    def steps(self) -> int:
        return self.last_step - self.first_step + 1


@dataclass(frozen=True)
class RunCost:
    run: str
    startup_s: float
    cold_start_s: float
    probe_s: float
    validation_s: float
    phases: tuple[PhaseCost, ...]
    rates: Rates
    validations: int
    measured_step_s: float | None = None  # from the run's own history, when it has steps

    @property
    def grpo_s(self) -> float:
        return sum(phase.steps * self.step_seconds(phase) for phase in self.phases)

    def step_seconds(self, phase: PhaseCost) -> float:
        return self.measured_step_s or phase.step_seconds

    @property
    def total_s(self) -> float:
        head = self.startup_s + self.cold_start_s + self.probe_s
        return head + self.validation_s + self.grpo_s

    @property
    def hours(self) -> float:
        return self.total_s / 3600

    def hour_at(self, step: int) -> float:
        """Hours from the start of the invocation to the end of GRPO step `step`."""
        seconds = self.startup_s + self.cold_start_s + self.probe_s
        seconds += self.validation_s * min(step / max(self.last_step, 1), 1.0)
        for phase in self.phases:
            done = min(max(step - phase.first_step + 1, 0), phase.steps)
            seconds += done * self.step_seconds(phase)
        return seconds / 3600

    @property
    def last_step(self) -> int:
        return self.phases[-1].last_step if self.phases else 0

    def step_at_hours(self, hours: float) -> int:
        """The last GRPO step that ends within `hours` of the start."""
        reached = 0
        for step in range(1, self.last_step + 1):
            if self.hour_at(step) > hours:
                break
            reached = step
        return reached


def waves(episodes: int) -> int:
    return max(1, math.ceil(episodes / VLLM_MAX_SEQS))


def inference_seconds(episodes: int, turns: float, rates: Rates) -> float:
    return waves(episodes) * turns * rates.seconds_per_turn


def padded(tokens: float, max_seq_length: int) -> int:
    return min(math.ceil(tokens / PAD_MULTIPLE) * PAD_MULTIPLE, max_seq_length)


def phase_costs(
    run: RunConfig,
    phases: Sequence[tuple[str, int, int]],
    sizes: dict[str, LevelSizes],
    rates: Rates,
) -> tuple[PhaseCost, ...]:
    """`phases`: (level, first step, last step), 1-based inclusive, from the data plan."""
    grpo = run.grpo
    trained_rows = grpo.groups_per_step * grpo.group_size
    costs = []
    for level, first, last in phases:
        size = sizes[level]
        turns = min(size.mean_turns * 1.25, run.rollout.max_turns)  # the wave's slowest episode
        rollout = turns * rates.seconds_per_turn
        row = padded(size.max_tokens, grpo.max_seq_length)
        train = trained_rows * row / rates.train_tokens_per_second
        step = rollout + train + SWAP_SECONDS
        costs.append(PhaseCost(level, first, last, step, rollout, train, row, size.mean_tokens))
    return tuple(costs)


def run_cost(
    run: RunConfig,
    phases: Sequence[tuple[str, int, int]],
    sizes: dict[str, LevelSizes],
    *,
    rates: Rates = ASSUMED,
    trains_cold_start: bool = True,
    validations: int = 0,
    measured_step_s: float | None = None,
) -> RunCost:
    mean_turns = max(size.mean_turns for size in sizes.values()) * 1.25
    mean_tokens = sum(size.mean_tokens for size in sizes.values()) / len(sizes)
    cold = 0.0
    if run.cold_start is not None and trains_cold_start:
        section = run.cold_start
        episodes = section.scenarios * section.samples
        cold = episodes * TEACHER_SECONDS_PER_EPISODE  # the GPU is held while the CPU plays
        cold += section.epochs * episodes * mean_tokens / rates.train_tokens_per_second
    probe = 0.0
    if run.probe.enabled:
        probe = inference_seconds(run.probe.scenarios * run.probe.k, mean_turns, rates)
    per_validation = inference_seconds(run.validation.limit * run.validation.k, mean_turns, rates)
    return RunCost(
        run=run.name,
        startup_s=STARTUP_SECONDS,
        cold_start_s=cold,
        probe_s=probe,
        validation_s=validations * per_validation,
        phases=phase_costs(run, phases, sizes, rates),
        rates=rates,
        validations=validations,
        measured_step_s=measured_step_s,
    )


def eval_seconds(episodes: int, sizes: dict[str, LevelSizes], rates: Rates = ASSUMED) -> float:
    """A final eval of one model: vLLM serving it, then the episodes in waves."""
    turns = max(size.mean_turns for size in sizes.values()) * 1.25
    return EVAL_STARTUP_SECONDS + inference_seconds(episodes, turns, rates)
