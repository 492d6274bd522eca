"""The recipe experiment's plan and runner (issue 37): the arms of each decision, the starts, the
scales, and one pass over seeds x arms that keeps every run's figures.

Four comparisons, each arm run once per seed (an arm two comparisons share runs once):
1. cold start vs none at a low base rate (binary reward; ART's optimiser, 8 x 8, GRPO);
2. group size and dynamic sampling from a start near 5% grounded success;
3. a tool cost λ with and without the outcome-tied filter, under ART's per-trajectory clipped
   AdamW and under one plain step per batch (Dr. GRPO advantages, as the λ run file);
4. std division (GRPO against Dr. GRPO advantages) on the shaped reward, both optimisers.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from env.scenario import Scenario
from experiments.reward_lab.episodes import RewardSpec
from experiments.reward_lab.evaluate import EvalStats, evaluate
from experiments.reward_lab.experiments import scenarios
from experiments.reward_lab.moves import Move, catalogue
from experiments.reward_lab.recipe_loop import Arm, ArmRun, train_arm
from experiments.reward_lab.softmax_policy import SoftmaxPolicy
from experiments.reward_lab.teachers import ColdStart, cold_start

BINARY = RewardSpec("binary")
TOOL_COST = RewardSpec("binary", 0.005)  # runs/binary-lambda-01.toml's λ
HIGH_COST = RewardSpec("binary", 0.02)  # the lab's earlier estimator table's λ
SHAPED = RewardSpec("shaped")
WEAK_SCALE = 0.5  # the weak start: the auditor cold start's parameters x 0.5 (temperature 2)


@dataclass(frozen=True)
class RecipeScale:
    name: str
    seeds: int
    steps: int
    train_pool: int
    val: int
    eval_k: int
    demos: int  # train scenarios the auditor plays for each seed's cold start
    shrink: int = 1  # divides every arm's group counts (the test suite's tiny run)
    lr_art: float = 0.003  # the pilot's choice (README, "The training recipe")
    lr_batch: float = 1.0  # the lab's default (experiments.Scale.lr)


SCALES = {
    "full": RecipeScale("full", 5, 20, 400, 100, 2, 64),
    "quick": RecipeScale("quick", 1, 2, 48, 12, 1, 12, shrink=2),
    "tiny": RecipeScale("tiny", 1, 1, 12, 4, 1, 6, shrink=4),
}


@dataclass(frozen=True)
class Decision:
    key: str
    title: str
    arms: tuple[Arm, ...]
    before: bool = False  # the table shows the start's val rates too


T1 = "1. Cold start vs none at a low base rate (binary, ART optimiser, 8 × 8, GRPO)"
T2 = "2. Group size and dynamic sampling from the weak start (binary, ART optimiser, GRPO)"
T3 = "3. Tool cost λ and the outcome-tied filter (binary, Dr. GRPO, auditor cold start)"
T4 = "4. Std division on the shaped reward (λ = 0, auditor cold start)"
DECISIONS = (
    Decision("cold_start", T1, (
        Arm("RL alone (untrained policy)", BINARY),
        Arm("weak cold start (auditor × 0.5)", BINARY, init="weak"),
        Arm("auditor cold start", BINARY, init="auditor"),
    ), before=True),
    Decision("groups", T2, (
        Arm("8 groups × 8", BINARY, init="weak"),
        Arm("4 groups × 16", BINARY, groups=4, group_size=16, init="weak"),
        Arm("8 × 8, gather 12, keep 8 with spread", BINARY, gather=12, init="weak"),
        Arm("4 × 16, gather 6, keep 4 with spread", BINARY, groups=4, group_size=16, gather=6,
            init="weak"),
    ), before=True),
    Decision("tool_cost", T3, (
        Arm("ART per-trajectory AdamW, no filter", TOOL_COST, "dr_grpo", init="auditor"),
        Arm("ART per-trajectory AdamW, filter", TOOL_COST, "dr_grpo", drop_tied=True,
            init="auditor"),
        Arm("ART per-trajectory AdamW without the clip, no filter", TOOL_COST, "dr_grpo",
            init="auditor", max_grad_norm=math.inf),
        Arm("one step per batch, no filter", TOOL_COST, "dr_grpo", "batch", init="auditor"),
        Arm("one step per batch, filter", TOOL_COST, "dr_grpo", "batch", drop_tied=True,
            init="auditor"),
        Arm("λ = 0.02: ART per-trajectory AdamW, no filter", HIGH_COST, "dr_grpo", init="auditor"),
        Arm("λ = 0.02: ART per-trajectory AdamW, filter", HIGH_COST, "dr_grpo", drop_tied=True,
            init="auditor"),
    )),
    Decision("std", T4, (
        Arm("ART, GRPO (scale_rewards = true)", SHAPED, "grpo", init="auditor"),
        Arm("ART, Dr. GRPO (scale_rewards = false)", SHAPED, "dr_grpo", init="auditor"),
        Arm("batch, GRPO (scale_rewards = true)", SHAPED, "grpo", "batch", init="auditor"),
        Arm("batch, Dr. GRPO (scale_rewards = false)", SHAPED, "dr_grpo", "batch",
            init="auditor"),
    )),
)  # fmt: skip


def identity(arm: Arm) -> Arm:
    """Two arms with the same settings are one run, whatever the comparison calls them."""
    return replace(arm, name="")


def shrunk(arm: Arm, shrink: int) -> Arm:
    groups = max(1, math.ceil(arm.groups / shrink))
    gather = math.ceil(arm.gather / shrink) if arm.gather else 0
    return replace(arm, groups=groups, gather=max(gather, groups + 1) if gather else 0)


@dataclass
class RecipeResults:
    scale: RecipeScale
    seeds: tuple[int, ...]
    runs: dict[tuple[Arm, int], dict[str, float]] = field(default_factory=dict)
    cold: dict[int, ColdStart] = field(default_factory=dict)
    seconds: float = 0.0
    episodes: int = 0
    loads: list[float] = field(default_factory=list)  # 1-minute load average after each run

    def values(self, arm: Arm, metric: str) -> list[float]:
        key = identity(arm)
        return [self.runs[(key, s)][metric] for s in self.seeds if (key, s) in self.runs]


def _eval_metrics(stats: EvalStats, prefix: str = "") -> dict[str, float]:
    names = ("grounded", "reward", "tool_calls", "hack_episodes", "hack_reward")
    return {prefix + n: float(getattr(stats, n)) for n in names}


def _train_metrics(run: ArmRun) -> dict[str, float]:
    """What the run did; `train_grounded_at_budget` is its training success over the last three
    steps that fit in the rollouts a run without dynamic sampling spends (equal cost)."""
    moved, last = run.movement, run.steps[-3:]
    budget = len(run.steps) * run.arm.groups * run.arm.group_size
    spent = np.cumsum([s.rollouts for s in run.steps])
    within = [s for s, total in zip(run.steps, spent, strict=True) if total <= budget][-3:]
    return {
        "train_grounded_at_budget": sum(s.grounded for s in within) / max(len(within), 1),
        "spread_share": run.spread_share(),
        "gathered_per_step": run.per_step("gathered"),
        "kept_per_step": run.per_step("kept"),
        "dropped_per_step": run.per_step("dropped"),
        "carrying_per_step": run.per_step("carrying"),
        "updates_per_step": run.per_step("updates"),
        "rollouts": float(run.rollouts),
        "tied_share": moved.tied_share(),
        "clipped_share": moved.clipped / moved.updates if moved.grad_norms else 0.0,
        "grad_norm_median": float(np.median(moved.grad_norms)) if moved.grad_norms else 0.0,
        "train_grounded_last": sum(s.grounded for s in last) / max(len(last), 1),
    }


def _starts(
    seed: int, scale: RecipeScale, moves: Sequence[Move], pool: Sequence[Scenario]
) -> tuple[dict[str, SoftmaxPolicy], ColdStart]:
    """The seed's starts: untrained, the auditor cold start on the seed's own demonstrations,
    and that cold start softened to the weak start."""
    order = np.random.default_rng([seed, 5]).permutation(len(pool))[: scale.demos]
    auditor, report = cold_start("auditor", moves, [pool[int(i)] for i in order])
    weak = auditor.copy()
    weak.theta = WEAK_SCALE * auditor.theta
    uniform = SoftmaxPolicy([m.name for m in moves])
    return {"uniform": uniform, "auditor": auditor, "weak": weak}, report


def run_recipe(
    scale: RecipeScale, seeds: Sequence[int], say: Callable[[str], None] = print
) -> RecipeResults:
    started = time.perf_counter()
    moves = catalogue()
    pool, val = scenarios("train", scale.train_pool), scenarios("val", scale.val)
    results = RecipeResults(scale, tuple(seeds))
    arms = list({identity(a): a for d in DECISIONS for a in d.arms}.values())
    for seed in seeds:
        starts, results.cold[seed] = _starts(seed, scale, moves, pool)
        before: dict[tuple[str, RewardSpec], dict[str, float]] = {}
        for arm in arms:
            clock = time.perf_counter()
            if (arm.init, arm.reward) not in before:
                start = starts[arm.init]
                stats = evaluate(start, moves, val, arm.reward, k=scale.eval_k, seed=seed)
                before[(arm.init, arm.reward)] = _eval_metrics(stats, "before_")
                results.episodes += stats.episodes
            lr = scale.lr_art if arm.optimiser == "art" else scale.lr_batch
            run = train_arm(shrunk(arm, scale.shrink), moves, pool, starts[arm.init],
                            steps=scale.steps, lr=lr, seed=seed)  # fmt: skip
            final = evaluate(run.policy, moves, val, arm.reward, k=scale.eval_k, seed=seed)
            metrics = before[(arm.init, arm.reward)] | _eval_metrics(final) | _train_metrics(run)
            metrics["seconds"] = time.perf_counter() - clock
            results.runs[(identity(arm), seed)] = metrics
            results.episodes += run.rollouts + final.episodes
            results.loads.append(os.getloadavg()[0])
            say(
                f"seed {seed} · {arm.name} ({arm.reward.label}, {arm.estimator}, {arm.optimiser}): "
                f"grounded {metrics['before_grounded']:.2f} → {final.grounded:.2f}, "
                f"{final.tool_calls:.1f} calls, tied share {metrics['tied_share']:.2f} "
                f"({metrics['seconds']:.0f} s)"
            )
    results.seconds = time.perf_counter() - started
    return results
