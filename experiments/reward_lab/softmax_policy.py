"""The lab policy: a softmax over moves, linear in features the agent can see.

`observe` turns a desk into an `Observation` (the complaint's surface, the moves done so far,
whether a finding was confirmed); `features` reads only that observation. Nothing here takes a
`Scenario`: the truth is out of reach by construction, and
`tests/experiments/test_reward_lab_policy.py` checks that two scenarios that differ only in
their truth give identical features.
One-hot features make the linear policy a table per context (complaint cue x found x step)
plus shared terms (each move done, each move done without a finding).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from checks.hacks.programs import guess_label
from env.labels import ROOT_CAUSES
from experiments.reward_lab.desk import Desk

STEP_BUCKETS = 4  # decisions 0, 1, 2, 3+
_INVOICE_ID = re.compile(r"\bINV-[0-9A-Z]{4,12}\b")
_AMOUNT = re.compile(r"(?<![\w.])[0-9]{1,9}\.[0-9]{2}(?![0-9])")


@dataclass(frozen=True)
class Observation:
    """Everything a decision may depend on; all of it public."""

    cue: str  # the label the complaint's keywords suggest (`checks.hacks.programs.guess_label`)
    names_invoice: bool
    claims_amount: bool
    step: int  # decisions taken so far
    done: tuple[str, ...]  # moves done so far, in order
    found: bool  # a finding has been confirmed
    found_matches_cue: bool


@lru_cache(maxsize=4096)
def _complaint_surface(complaint: str) -> tuple[str, bool, bool]:
    return (
        guess_label(complaint),
        bool(_INVOICE_ID.search(complaint)),
        bool(_AMOUNT.search(complaint)),
    )


def observe(desk: Desk) -> Observation:
    cue, names_invoice, claims_amount = _complaint_surface(desk.complaint)
    return Observation(
        cue=cue,
        names_invoice=names_invoice,
        claims_amount=claims_amount,
        step=len(desk.moves),
        done=tuple(desk.moves),
        found=bool(desk.findings),
        found_matches_cue=any(f.label == cue for f in desk.findings),
    )


def features(obs: Observation) -> tuple[str, ...]:
    step = min(obs.step, STEP_BUCKETS - 1)
    names = ["bias", f"cue={obs.cue}", f"ctx={obs.cue}|found={int(obs.found)}|step={step}"]
    names += [f"done={move}" for move in obs.done]
    if not obs.found:
        names += [f"miss={move}" for move in obs.done]
    flags = {
        "names_invoice": obs.names_invoice,
        "claims_amount": obs.claims_amount,
        "found_matches_cue": obs.found_matches_cue,
    }
    return tuple(names + [name for name, on in flags.items() if on])


class FeatureSpace:
    """A fixed vocabulary of feature names (unknown names are ignored, never an error)."""

    def __init__(self, moves: Sequence[str]) -> None:
        names = ["bias", "names_invoice", "claims_amount", "found_matches_cue"]
        names += [f"cue={label}" for label in ROOT_CAUSES]
        names += [
            f"ctx={label}|found={found}|step={step}"
            for label in ROOT_CAUSES
            for found in (0, 1)
            for step in range(STEP_BUCKETS)
        ]
        names += [f"{kind}={move}" for kind in ("done", "miss") for move in moves]
        self.names = tuple(names)
        self._index = {name: i for i, name in enumerate(self.names)}
        self._seen: dict[Observation, np.ndarray] = {}  # observations repeat: encode each once

    def __len__(self) -> int:
        return len(self.names)

    def encode(self, names: Sequence[str]) -> np.ndarray:
        return np.array([self._index[n] for n in names if n in self._index], dtype=np.int64)

    def observation(self, obs: Observation) -> np.ndarray:
        if obs not in self._seen:
            self._seen[obs] = self.encode(features(obs))
        return self._seen[obs]


@dataclass(frozen=True)
class Decision:
    active: np.ndarray  # feature indices
    mask: np.ndarray  # moves offered
    action: int
    probs: np.ndarray  # the policy's distribution when it chose


class SoftmaxPolicy:
    def __init__(self, moves: Sequence[str]) -> None:
        self.moves = tuple(moves)
        self.space = FeatureSpace(self.moves)
        self.theta = np.zeros((len(self.moves), len(self.space)))

    def copy(self) -> SoftmaxPolicy:
        twin = SoftmaxPolicy(self.moves)
        twin.theta = self.theta.copy()
        return twin

    def probs(self, active: np.ndarray, mask: np.ndarray) -> np.ndarray:
        logits = self.theta[:, active].sum(axis=1)
        logits = np.where(mask, logits, -np.inf)
        logits -= logits.max()
        weights = np.exp(logits)
        return weights / weights.sum()

    def decide(
        self, obs: Observation, mask: Sequence[bool], rng: np.random.Generator, greedy: bool
    ) -> Decision:
        active = self.space.observation(obs)
        offered = np.asarray(mask, dtype=bool)
        probs = self.probs(active, offered)
        action = int(np.argmax(probs)) if greedy else int(rng.choice(len(probs), p=probs))
        return Decision(active, offered, action, probs)

    def step(self, weighted: Sequence[tuple[Decision, float]], lr: float) -> None:
        """theta += lr * sum of weight * grad log pi(action) over the decisions given."""
        for decision, weight in weighted:
            if weight == 0.0:
                continue
            grad = -decision.probs
            grad[decision.action] += 1.0
            self.theta[:, decision.active] += (lr * weight) * grad[:, None]

    def log_prob(self, decision: Decision) -> float:
        probs = self.probs(decision.active, decision.mask)
        return float(np.log(max(probs[decision.action], 1e-300)))


def entropy(probs: np.ndarray) -> float:
    p = probs[probs > 0]
    return float(-(p * np.log(p)).sum())
