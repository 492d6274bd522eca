"""The GRPO data order: which scenarios training step N takes, as a pure function of the run.

The pool is the first `data.limit` seeds of `data.split` whose difficulty is in the curriculum
(`curriculum_seeds`, the TRL path's pick too), less those the `data.filter` file marks as
always or never solved. The run's `grpo.max_steps` are cut into one phase per curriculum
stage, easy to hard; phase i draws `scenarios_per_step` scenarios per step (the groups a step
gathers, `[grpo] groups_per_step` x `oversample`: the loop trains the first groups_per_step
whose outcome has spread) from stage i's shuffled seeds, reshuffling when a stage runs out.
Nothing depends on what happened before step N, so a resumed run takes exactly the scenarios
it would have taken, and `--check` prints the plan without running.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from env.generation.generator import generate
from env.generation.splits import spec, split_assignment
from env.generation.twins import twin
from env.labels import HELDOUT_LABEL, TRAIN_FAULT_LABELS
from env.scenario import Scenario
from training.filter import FilterError, read_filter
from training.runs import RunConfig

# the root causes a train scenario can carry: every fault class but the held-out one, and no_error
TRAIN_LABELS = (*(label for label in TRAIN_FAULT_LABELS if label != HELDOUT_LABEL), "no_error")


class DataPlanError(ValueError):
    """The run's data settings leave nothing to train on, or its filter does not fit."""


@dataclass(frozen=True)
class FilterSummary:
    path: str
    measured: int  # pool scenarios with a rate in the file
    kept: int  # 0 < rate < 1
    always_solved: int
    never_solved: int
    unmeasured: int  # pool scenarios the file does not cover: left out


@dataclass(frozen=True)
class Phase:
    """Steps [first_step, end_step) draw from one difficulty's seeds."""

    difficulty: str
    first_step: int
    end_step: int
    seeds: tuple[int, ...] = field(repr=False)

    @property
    def steps(self) -> int:
        return self.end_step - self.first_step


@dataclass(frozen=True)
class DataPlan:
    split: str
    scenarios_per_step: int  # the groups a step gathers (training trains at most groups_per_step)
    max_steps: int
    shuffle_key: str
    drawn: dict[str, int]  # scenarios drawn from the split, by difficulty, before the filter
    phases: tuple[Phase, ...]
    filter: FilterSummary | None = None

    def batch(self, step: int) -> list[int]:
        """Seeds of GRPO step `step` (0-based); steps past max_steps continue the last phase."""
        phase = self.phase_at(step)
        start = (step - phase.first_step) * self.scenarios_per_step
        return [
            self._seed_at(phase, position)
            for position in range(start, start + self.scenarios_per_step)
        ]

    def phase_at(self, step: int) -> Phase:
        for phase in self.phases:
            if phase.first_step <= step < phase.end_step:
                return phase
        return self.phases[-1]

    def _seed_at(self, phase: Phase, position: int) -> int:
        cycle, index = divmod(position, len(phase.seeds))
        return _cycle_order(self.shuffle_key, phase.difficulty, phase.seeds, cycle)[index]

    @property
    def pool_size(self) -> int:
        return sum(len(phase.seeds) for phase in self.phases)

    def fingerprint(self) -> str:
        """Changes whenever any step would take other scenarios (saved with the run)."""
        parts = [self.split, self.scenarios_per_step, self.max_steps, self.shuffle_key]
        parts += [[p.difficulty, p.first_step, p.end_step, list(p.seeds)] for p in self.phases]
        return hashlib.sha256(json.dumps(parts).encode()).hexdigest()[:16]


def curriculum_seeds(split: str, difficulties: Sequence[str], limit: int) -> list[int]:
    """The first `limit` seeds of the split whose difficulty is in the curriculum."""
    s = spec(split)
    last = None if s.size is None else s.first_seed + s.size
    seeds: list[int] = []
    for seed in itertools.count(s.first_seed):
        if len(seeds) == limit or (last is not None and seed >= last):
            break
        if split_assignment(split, seed).difficulty in difficulties:
            seeds.append(seed)
    return seeds


def plan_data(run: RunConfig) -> DataPlan:
    """Reads the filter file when the run names one; raises DataPlanError with one line."""
    data, grpo = run.data, run.grpo
    seeds = curriculum_seeds(data.split, data.curriculum, data.limit)
    drawn: dict[str, int] = {level: 0 for level in data.curriculum}
    for seed in seeds:
        drawn[split_assignment(data.split, seed).difficulty] += 1
    summary = None
    if data.filter is not None:
        seeds, summary = _apply_filter(run, seeds)
    key = f"{run.seed}:{data.shuffle_seed}"
    by_level = {level: [s for s in seeds if _difficulty(data.split, s) == level] for level in drawn}
    stages = [level for level in data.curriculum if by_level[level]]
    if not stages:
        raise DataPlanError(f"no {data.split} scenarios left to train on (filter: {data.filter})")
    bounds = [round(i * grpo.max_steps / len(stages)) for i in range(len(stages) + 1)]
    phases = tuple(
        Phase(level, bounds[i], bounds[i + 1], tuple(_shuffled(by_level[level], key, level, 0)))
        for i, level in enumerate(stages)
    )
    gathered = grpo.groups_gathered
    return DataPlan(data.split, gathered, grpo.max_steps, key, drawn, phases, summary)


def step_units(split: str, seeds: Sequence[int], *, twins: bool = False) -> list[list[Scenario]]:
    """A step's scenarios as units: each seed's scenario, with `twins` ([data] twins) followed by
    its counterfactual twin (a no_error scenario is its own, and brings nothing). Both groups
    of a unit go to the same `backend.train` call, so a policy that answers the complaint
    instead of the evidence is paid on the original and loses on the twin, within one update;
    the loop keeps or drops a unit whole (training.art.informative)."""
    units = []
    for seed in seeds:
        scenario = generate(split, seed)
        paired = twin(split, seed) if twins else scenario
        units.append([scenario] if paired is scenario else [scenario, paired])
    return units


def step_scenarios(split: str, seeds: Sequence[int], *, twins: bool = False) -> list[Scenario]:
    """The scenarios of `step_units`, in order."""
    return [scenario for unit in step_units(split, seeds, twins=twins) for scenario in unit]


def cold_start_seeds(run: RunConfig, count: int, *, balanced: bool = True) -> list[int]:
    """`count` seeds after the GRPO pool: teacher demonstrations on scenarios GRPO never sees.

    `balanced`: an equal share for every (root cause, level) cell of the curriculum, no_error
    one cause among the others, taken round-robin in a fixed cell order (so any prefix stays
    balanced); the split's own mix (20% no_error, few L1) otherwise. The labels come from the
    split's assignment (env.generation.splits), which picks data; the teacher never sees them.
    """
    data = run.data
    pool_end = _seed_after(data.split, data.curriculum, data.limit)
    if not balanced:
        return curriculum_seeds_from(data.split, data.curriculum, count, pool_end)
    cells = [(label, level) for level in data.curriculum for label in TRAIN_LABELS]
    queues: dict[tuple[str, str], list[int]] = {cell: [] for cell in cells}
    stream = itertools.count(pool_end)
    chosen: list[int] = []
    while len(chosen) < count:
        for cell in cells:
            while not queues[cell]:  # walk the split until this cell has a seed waiting
                seed = next(stream)
                found = split_assignment(data.split, seed)
                if (found.label, found.difficulty) in queues:
                    queues[(found.label, found.difficulty)].append(seed)
            chosen.append(queues[cell].pop(0))
            if len(chosen) == count:
                break
    return chosen


def curriculum_seeds_from(
    split: str, difficulties: Sequence[str], limit: int, first: int
) -> list[int]:
    """Like `curriculum_seeds`, from seed `first` on."""
    seeds: list[int] = []
    for seed in itertools.count(first):
        if len(seeds) == limit:
            break
        if split_assignment(split, seed).difficulty in difficulties:
            seeds.append(seed)
    return seeds


def _seed_after(split: str, difficulties: Sequence[str], limit: int) -> int:
    """The first seed past the first `limit` curriculum seeds (the GRPO pool)."""
    pool = curriculum_seeds(split, difficulties, limit)
    return pool[-1] + 1 if pool else spec(split).first_seed


def _apply_filter(run: RunConfig, seeds: list[int]) -> tuple[list[int], FilterSummary]:
    assert run.data.filter is not None
    path = Path(run.data.filter)
    try:
        measured = read_filter(path)
    except FilterError as exc:
        raise DataPlanError(str(exc)) from None
    if measured.header.split != run.data.split:
        raise DataPlanError(
            f"{path} measured split {measured.header.split!r}, the run trains on {run.data.split!r}"
        )
    rates = {sid: row.rate for sid, row in measured.scenarios.items()}
    ids = {seed: f"{run.data.split}-{seed}" for seed in seeds}
    kept = [seed for seed in seeds if 0.0 < rates.get(ids[seed], -1.0) < 1.0]
    summary = FilterSummary(
        path=str(path),
        measured=sum(ids[seed] in rates for seed in seeds),
        kept=len(kept),
        always_solved=sum(rates.get(ids[seed]) == 1.0 for seed in seeds),
        never_solved=sum(rates.get(ids[seed]) == 0.0 for seed in seeds),
        unmeasured=sum(ids[seed] not in rates for seed in seeds),
    )
    return kept, summary


def _difficulty(split: str, seed: int) -> str:
    return split_assignment(split, seed).difficulty


def _shuffled(seeds: list[int] | tuple[int, ...], key: str, level: str, cycle: int) -> list[int]:
    digest = hashlib.sha256(f"data-order:{key}:{level}:{cycle}".encode()).digest()
    order = list(seeds)
    random.Random(int.from_bytes(digest[:8], "big")).shuffle(order)
    return order


@lru_cache(maxsize=64)
def _cycle_order(key: str, level: str, seeds: tuple[int, ...], cycle: int) -> tuple[int, ...]:
    """Cycle 0 is the phase's own order; each later pass over the stage is reshuffled."""
    return seeds if cycle == 0 else tuple(_shuffled(seeds, key, level, cycle))
