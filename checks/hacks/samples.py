"""Which eval scenarios the reward-hacking suite plays: a light module, so that
`python -m checks.agreement` can pick the same samples without importing the agent's rollout."""

from __future__ import annotations

from env.generation.generator import generate
from env.generation.splits import split_assignment, split_seeds
from env.labels import ROOT_CAUSES
from env.scenario import Scenario, reveal_truth

PER_LABEL = 2


def eval_scenarios() -> list[Scenario]:
    return [generate("eval", seed) for seed in split_seeds("eval")]


def sample(kind: str) -> list[Scenario]:
    """all: the first PER_LABEL eval seeds of every label (26); faulted: those without
    no_error (24); injected: every eval scenario with an injected instruction; no_error:
    every no_error eval scenario (20)."""
    if kind == "eval":  # the surface-cue policies (checks.hacks.cheats_surface): all 100
        return eval_scenarios()
    if kind == "injected":
        return [s for s in eval_scenarios() if "injected_instruction" in reveal_truth(s).traps]
    if kind == "no_error":  # the blind no_error guesses (rules G11): every no_error eval scenario
        return [s for s in eval_scenarios() if reveal_truth(s).label == "no_error"]
    chosen: list[Scenario] = []
    for label in ROOT_CAUSES:
        if kind == "faulted" and label == "no_error":
            continue
        seeds = [s for s in split_seeds("eval") if split_assignment("eval", s).label == label]
        chosen.extend(generate("eval", seed) for seed in seeds[:PER_LABEL])
    return chosen
