"""The lab's four experiments over one shared set of training runs.

- hack search: each hack move played as a whole policy, then every run's policy on `val`
  and whether hack moves carry its reward;
- λ sweep: the shaped reward at λ = 0, 0.005, 0.02, 0.05 per tool call (auditor cold start);
- estimators: RLOO, GRPO, Dr. GRPO on the binary reward with λ = 0.02, from the uniform
  policy (groups mostly all fail) and from the auditor cold start (many all succeed): in such
  tied groups only the tool cost separates the samples;
- cold start: RL alone against demonstrations then RL, evaluated at several step counts.
Runs are seeded; the same seed and tree give the same numbers.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from env.generation.generator import generate
from env.generation.splits import split_seeds
from env.scenario import Scenario
from experiments.reward_lab.episodes import RewardSpec
from experiments.reward_lab.evaluate import EvalStats, FixedRow, evaluate, fixed_policies
from experiments.reward_lab.moves import Move, catalogue
from experiments.reward_lab.reinforce import TrainConfig, TrainResult, train
from experiments.reward_lab.softmax_policy import SoftmaxPolicy
from experiments.reward_lab.teachers import ColdStart, cold_start

LAMBDAS = (0.0, 0.005, 0.02, 0.05)
ESTIMATOR_REWARD = RewardSpec("binary", 0.02)
ESTIMATOR_NAMES = ("rloo", "grpo", "dr_grpo")
INITS = {
    "uniform": "RL alone",
    "auditor": "auditor cold start",
    "reference": "reference cold start",
}
FIXED_SPECS = (RewardSpec("shaped"), RewardSpec("binary"), ESTIMATOR_REWARD)


@dataclass(frozen=True)
class Scale:
    name: str
    train_pool: int  # train scenarios the runs draw from
    val: int  # val scenarios evaluated
    eval_k: int  # samples per val scenario
    steps: int
    scenarios_per_step: int
    group_size: int
    demos: int  # train scenarios a teacher plays for the cold start
    checkpoints: tuple[int, ...]  # steps evaluated in the cold-start table (plus the last)
    checkpoint_k: int = 1  # samples per val scenario at the intermediate checkpoints
    fixed_val: int = 50  # val scenarios each fixed policy plays
    lr: float = 1.0


SCALES = {
    "default": Scale("default", 256, 100, 2, 25, 6, 8, 64, (0, 10, 20)),
    "quick": Scale("quick", 32, 12, 1, 5, 2, 8, 12, (0, 3)),
    "tiny": Scale("tiny", 8, 4, 1, 2, 1, 4, 4, (0, 1)),  # the test suite's end-to-end run
}


@dataclass(frozen=True)
class RunSpec:
    name: str
    reward: RewardSpec
    estimator: str = "grpo"
    init: str = "uniform"  # or a cold-start teacher
    checkpoints: bool = False


@dataclass
class Run:
    spec: RunSpec
    result: TrainResult
    final: EvalStats
    at_steps: dict[int, EvalStats] = field(default_factory=dict)
    seconds: float = 0.0


@dataclass
class LabResults:
    scale: Scale
    seed: int
    moves: tuple[Move, ...]
    runs: dict[str, Run] = field(default_factory=dict)
    cold: dict[str, ColdStart] = field(default_factory=dict)
    cold_seconds: dict[str, float] = field(default_factory=dict)
    fixed: list[FixedRow] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def episodes(self) -> int:
        trained = sum(r.result.episodes for r in self.runs.values())
        evaluated = sum(
            s.episodes for r in self.runs.values() for s in (r.final, *r.at_steps.values())
        )
        fixed = len(self.fixed) * min(self.scale.fixed_val, self.scale.val)
        return trained + evaluated + fixed + sum(c.scenarios for c in self.cold.values())


def plan() -> list[RunSpec]:
    """Every training run the four tables need, each run once."""
    shaped, binary = RewardSpec("shaped"), RewardSpec("binary")
    runs = [
        RunSpec("shaped · RL alone", shaped, checkpoints=True),
        RunSpec("shaped · auditor cold start", shaped, init="auditor", checkpoints=True),
        RunSpec("binary · RL alone", binary, checkpoints=True),
        RunSpec("binary · auditor cold start", binary, init="auditor", checkpoints=True),
        RunSpec("binary · reference cold start", binary, init="reference", checkpoints=True),
    ]
    runs += [
        RunSpec(f"shaped λ={lam:g} · auditor cold start", RewardSpec("shaped", lam), init="auditor")
        for lam in LAMBDAS
        if lam > 0
    ]
    runs += [
        RunSpec(f"{ESTIMATOR_REWARD.label} · {INITS[init]} · {name}", ESTIMATOR_REWARD, name, init)
        for init in ("uniform", "auditor")
        for name in ESTIMATOR_NAMES
    ]
    return runs


def lambda_runs(results: LabResults) -> list[tuple[float, Run]]:
    """The λ sweep: the auditor cold start trained on the shaped reward at each λ."""
    found = []
    for run in results.runs.values():
        spec = run.spec
        if spec.reward.variant == "shaped" and spec.init == "auditor" and spec.estimator == "grpo":
            found.append((spec.reward.lam, run))
    return sorted(found, key=lambda pair: pair[0])


def estimator_runs(results: LabResults, init: str = "uniform") -> list[tuple[str, Run]]:
    return [
        (run.spec.estimator, run)
        for run in results.runs.values()
        if run.spec.reward == ESTIMATOR_REWARD and run.spec.init == init
    ]


def scenarios(split: str, count: int) -> list[Scenario]:
    return [generate(split, seed) for seed in split_seeds(split, count)]


def run_all(scale: Scale, seed: int, say: Callable[[str], None] = print) -> LabResults:
    started = time.perf_counter()
    moves = catalogue()
    pool, val = scenarios("train", scale.train_pool), scenarios("val", scale.val)
    results = LabResults(scale, seed, moves)
    results.fixed = fixed_policies(moves, val[: scale.fixed_val], FIXED_SPECS)
    say(f"fixed policies: {len(results.fixed)} played on {min(scale.fixed_val, len(val))} val")
    starts: dict[str, SoftmaxPolicy] = {}
    for spec in plan():
        if spec.init != "uniform" and spec.init not in starts:
            clock = time.perf_counter()
            policy, report = cold_start(spec.init, moves, pool[: scale.demos])
            starts[spec.init], results.cold[spec.init] = policy, report
            results.cold_seconds[spec.init] = time.perf_counter() - clock
            say(f"cold start ({spec.init}): {report.kept}/{report.scenarios} demonstrations kept")
        results.runs[spec.name] = _run(spec, scale, seed, moves, pool, val, starts.get(spec.init))
        run = results.runs[spec.name]
        say(
            f"{spec.name}: val reward {run.final.reward:+.3f}, grounded success "
            f"{run.final.grounded:.2f}, {run.final.tool_calls:.1f} calls, {run.final.verdict} "
            f"({run.seconds:.1f} s)"
        )
    results.seconds = time.perf_counter() - started
    return results


def _run(
    spec: RunSpec,
    scale: Scale,
    seed: int,
    moves: tuple[Move, ...],
    pool: list[Scenario],
    val: list[Scenario],
    start: SoftmaxPolicy | None,
) -> Run:
    clock = time.perf_counter()
    config = TrainConfig(
        reward=spec.reward,
        estimator=spec.estimator,
        steps=scale.steps,
        scenarios_per_step=scale.scenarios_per_step,
        group_size=scale.group_size,
        lr=scale.lr,
        seed=seed,
    )
    keep = tuple(s for s in scale.checkpoints if s < scale.steps) if spec.checkpoints else ()
    result = train(config, moves, pool, policy=start, keep=keep)

    def score(policy: SoftmaxPolicy, k: int) -> EvalStats:
        return evaluate(policy, moves, val, spec.reward, k=k, seed=seed)

    at_steps = {s: score(p, scale.checkpoint_k) for s, p in result.checkpoints.items()}
    final = score(result.policy, scale.eval_k)
    if spec.checkpoints:
        at_steps[scale.steps] = final
    return Run(spec, result, final, at_steps, time.perf_counter() - clock)
