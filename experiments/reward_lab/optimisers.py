"""Two ways to turn a GRPO step's advantages into a parameter update, with the movement measured.

- `BatchStep`: the lab's REINFORCE update (`reinforce.train`): one plain gradient step per
  batch, theta += lr x sum(advantage x grad log pi) / the step's nominal rollout count.
- `ArtAdam`: what OpenPipe ART 0.5.18's LocalBackend really does per GRPO step (read from the
  installed 0.5.18 sources; /work/shared/design/training-notes.md, "fourth review"):
  trajectories whose advantage is exactly 0 are dropped (`preprocessing/tokenize.py`); the rest
  are shuffled (`preprocessing/pack.py`) and fed one row at a time, one AdamW step each
  (`gradient_accumulation_steps=1`), the gradient clipped to global norm 0.1 before each step,
  beta2 0.99, decoupled weight decay, constant learning rate. A row's loss is
  -(A / mean|A|) x (n_mean / n) x (mean over its n tokens of log pi): tokenize.py weights a
  trajectory 1/n, pack.py renormalises those weights to mean 1 and the advantages by the
  batch's mean |A| x weight (which works out to the mean |A| over rows), loss.py divides the row
  by its own token count. The lab counts a trajectory's length in decisions, not tokens. The Adam
  state lives for the whole run. Left out: the 8-bit optimiser state (`paged_adamw_8bit`) and
  CISPO's clipped importance weight (each row's gradient is taken at the current parameters:
  ratio 1, which the clip [0, 5] of ART's default CISPO leaves at 1).

Both report the *movement*: the L1 norm of each contribution to the change in theta, split by
whether the trajectory's group tied on its outcome (only the tool cost or the small shaped terms
separate its samples). For `BatchStep` a group's contribution is its share of the one linear
update; for `ArtAdam` it is the whole change made by the steps its trajectories triggered.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from experiments.reward_lab.softmax_policy import Decision, SoftmaxPolicy

# ART 0.5.18's defaults (`art/dev/get_model_config.py`); the run files' learning rate.
ART_MAX_GRAD_NORM = 0.1
ART_BETAS = (0.9, 0.99)
ART_WEIGHT_DECAY = 0.1
ART_EPSILON = 1e-8
RUN_FILE_LR = 1e-5  # runs/*.toml [grpo] learning_rate
# AdamW shrinks every parameter by lr x weight_decay per step: 1e-6 at the run files' settings.
# The lab's learning rate is ~10^3 larger (a table policy, not a LoRA), so it keeps ART's shrink
# per step rather than its coefficient: `weight_decay = ART_DECAY_PER_STEP / lr`.
ART_DECAY_PER_STEP = RUN_FILE_LR * ART_WEIGHT_DECAY


@dataclass(frozen=True)
class Row:
    """One trajectory as the optimiser sees it."""

    decisions: tuple[Decision, ...]
    advantage: float
    tied: bool  # its group's outcome tied (all fail or all succeed)


@dataclass
class Movement:
    """Sum of |delta theta| (L1) per update, split by the outcome of the group behind it."""

    tied: float = 0.0
    mixed: float = 0.0
    updates: int = 0  # optimiser steps taken
    clipped: int = 0  # of those, steps whose gradient norm exceeded the clip
    grad_norms: list[float] = field(default_factory=list)  # before clipping

    def add(self, other: Movement) -> None:
        self.tied += other.tied
        self.mixed += other.mixed
        self.updates += other.updates
        self.clipped += other.clipped
        self.grad_norms += other.grad_norms

    def tied_share(self) -> float:
        total = self.tied + self.mixed
        return self.tied / total if total > 0 else 0.0


def log_prob_gradient(policy: SoftmaxPolicy, decisions: Sequence[Decision]) -> np.ndarray:
    """d/dtheta of sum over the decisions of log pi(action), at the policy's current theta."""
    grad = np.zeros_like(policy.theta)
    for d in decisions:
        probs = policy.probs(d.active, d.mask)
        row = -probs
        row[d.action] += 1.0
        np.add.at(grad, (slice(None), d.active), row[:, None])
    return grad


class BatchStep:
    """One plain gradient step per batch (the lab's update, `SoftmaxPolicy.step`)."""

    name = "batch"

    def __init__(self, lr: float) -> None:
        self.lr = lr

    def update(
        self, policy: SoftmaxPolicy, groups: Sequence[Sequence[Row]], nominal: int
    ) -> Movement:
        """`nominal`: the step's rollouts before any group was dropped, so that dropping a group
        removes its push without rescaling the others."""
        moved = Movement()
        total = np.zeros_like(policy.theta)
        for group in groups:
            delta = np.zeros_like(policy.theta)
            for row in group:
                if row.advantage != 0.0:
                    delta += (self.lr * row.advantage / nominal) * log_prob_gradient(
                        policy, row.decisions
                    )
            size = float(np.abs(delta).sum())
            if group and group[0].tied:
                moved.tied += size
            else:
                moved.mixed += size
            total += delta
        policy.theta += total
        moved.updates = 1
        return moved


class ArtAdam:
    """ART 0.5.18's per-trajectory clipped AdamW (module docstring)."""

    name = "art"

    def __init__(
        self,
        lr: float,
        *,
        max_grad_norm: float = ART_MAX_GRAD_NORM,
        betas: tuple[float, float] = ART_BETAS,
        weight_decay: float | None = None,
        eps: float = ART_EPSILON,
        seed: int = 0,
    ) -> None:
        self.lr, self.max_grad_norm, self.betas, self.eps = lr, max_grad_norm, betas, eps
        self.weight_decay = ART_DECAY_PER_STEP / lr if weight_decay is None else weight_decay
        self.m: np.ndarray | None = None
        self.v: np.ndarray | None = None
        self.t = 0
        self.rng = np.random.default_rng([seed, 7])

    @staticmethod
    def row_weights(rows: Sequence[Row]) -> list[float]:
        """Each row's coefficient on the *sum* of its log-probs in its loss, before the minus:
        (A / mean|A|) x (n_mean / n) x 1/n, ART's pack.py and loss.py normalisations."""
        if not rows:
            return []
        lengths = [max(len(r.decisions), 1) for r in rows]
        mean_abs = sum(abs(r.advantage) for r in rows) / len(rows)
        mean_n = sum(lengths) / len(lengths)
        return [
            (r.advantage / mean_abs) * (mean_n / n) / n for r, n in zip(rows, lengths, strict=True)
        ]

    def step(self, policy: SoftmaxPolicy, grad: np.ndarray) -> float:
        """One AdamW step on a clipped gradient (torch `clip_grad_norm_` + `AdamW`); returns
        the gradient norm before clipping."""
        norm = float(np.sqrt((grad**2).sum()))
        if norm > self.max_grad_norm:
            grad = grad * (self.max_grad_norm / (norm + 1e-6))
        if self.m is None or self.v is None:
            self.m, self.v = np.zeros_like(grad), np.zeros_like(grad)
        beta1, beta2 = self.betas
        self.t += 1
        self.m = beta1 * self.m + (1 - beta1) * grad
        self.v = beta2 * self.v + (1 - beta2) * grad**2
        m_hat = self.m / (1 - beta1**self.t)
        v_hat = self.v / (1 - beta2**self.t)
        policy.theta *= 1 - self.lr * self.weight_decay
        policy.theta -= self.lr * m_hat / (np.sqrt(v_hat) + self.eps)
        return norm

    def update(
        self, policy: SoftmaxPolicy, groups: Sequence[Sequence[Row]], nominal: int
    ) -> Movement:
        """Every row with a nonzero advantage, in a shuffled order, one step each (`nominal`
        is unused: each row's weight is its own 1/length)."""
        del nominal
        rows = [row for group in groups for row in group if row.advantage != 0.0]
        weights = self.row_weights(rows)
        moved = Movement()
        for i in self.rng.permutation(len(rows)):
            row = rows[int(i)]
            before = policy.theta.copy()
            grad = -weights[int(i)] * log_prob_gradient(policy, row.decisions)
            norm = self.step(policy, grad)
            size = float(np.abs(policy.theta - before).sum())
            if row.tied:
                moved.tied += size
            else:
                moved.mixed += size
            moved.updates += 1
            moved.clipped += norm > self.max_grad_norm
            moved.grad_norms.append(norm)
        return moved


Optimiser = BatchStep | ArtAdam
OPTIMISERS = ("art", "batch")


def make_optimiser(
    name: str, lr: float, seed: int, max_grad_norm: float = ART_MAX_GRAD_NORM
) -> Optimiser:
    if name == "art":
        return ArtAdam(lr, max_grad_norm=max_grad_norm, seed=seed)
    if name == "batch":
        return BatchStep(lr)
    raise ValueError(f"unknown optimiser {name!r}; choose one of {', '.join(OPTIMISERS)}")
