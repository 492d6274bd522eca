"""The reading list: a seeded sample of high-reward trajectories and failures, stratified by class.

The plan says to read at least 50 high-reward trajectories before believing a curve. The sample
takes classes in turn (contract order), each class's episodes in a seeded shuffle, so a run
dominated by easy classes still shows the rare ones; the same seed gives the same list.
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from env.labels import ROOT_CAUSES
from eval.report.episode_view import episode_id
from eval.report.flags import HIGH_REWARD
from eval.report.load import EpisodeLine, RunData

HIGH_REWARD_TARGET = 50
FAILURE_TARGET = 20

Candidate = tuple[int, RunData, EpisodeLine]


def stratified_sample(candidates: Sequence[Candidate], size: int, seed: int) -> list[Candidate]:
    """Round robin over classes, each shuffled with `random.Random(seed)`; all if too few."""
    by_class: dict[str, list[Candidate]] = defaultdict(list)
    for candidate in candidates:
        by_class[candidate[2].label].append(candidate)
    order = [name for name in ROOT_CAUSES if name in by_class]
    order += sorted(set(by_class) - set(order))
    rng = random.Random(seed)
    for name in order:
        rng.shuffle(by_class[name])
    picked: list[Candidate] = []
    depth = 0
    while len(picked) < size and any(depth < len(by_class[name]) for name in order):
        for name in order:
            if depth < len(by_class[name]) and len(picked) < size:
                picked.append(by_class[name][depth])
        depth += 1
    return picked


def _entry(candidate: Candidate, kind: str) -> dict[str, Any]:
    run_index, run, line = candidate
    return {
        "episode": episode_id(run_index, line),
        "kind": kind,
        "run": run.name,
        "scenario_id": line.scenario_id,
        "sample": line.sample,
        "label": line.label,
        "difficulty": line.difficulty,
        "reward": line.reward_total,
        "success": line.success,
    }


def reading_list(runs: Sequence[RunData], *, seed: int = 0) -> dict[str, Any]:
    """High reward (≥ HIGH_REWARD) and failures (grader failed), with the counts available."""
    everything = [(index, run, line) for index, run in enumerate(runs) for line in run.lines]
    high = [c for c in everything if c[2].error is None and (c[2].reward_total or 0) >= HIGH_REWARD]
    failed = [c for c in everything if not c[2].success]
    high_pick = stratified_sample(high, HIGH_REWARD_TARGET, seed)
    failed_pick = stratified_sample(failed, FAILURE_TARGET, seed + 1)
    return {
        "seed": seed,
        "high_reward_threshold": HIGH_REWARD,
        "targets": {"high_reward": HIGH_REWARD_TARGET, "failures": FAILURE_TARGET},
        "available": {"high_reward": len(high), "failures": len(failed)},
        "items": [_entry(c, "high reward") for c in high_pick]
        + [_entry(c, "failure") for c in failed_pick],
    }
