"""What a GPU smoke of the run measured, as the budget's rates (training.art.budget).

`python -m training.art.gpu_smoke --run NAME` leaves its figures in `ledgergym_smoke.json`; they
count only for the same base model and precision. Its `concurrency` phase times 64 concurrent
rollouts of at most `max_turns` turns (the wave ends with its longest: seconds per turn), its
`long-row` phase trains two rows at 90% of `max_seq_length` (trained tokens per second). A smoke
without those phases times one small step, which gives seconds per turn only.
"""

from __future__ import annotations

from dataclasses import dataclass

from training.art import run_state
from training.art.budget import ASSUMED, Rates
from training.runs import RunConfig

LONG_ROW_SHARE = 0.9  # the long-row phase's rows: 90% of max_seq_length, two of them


@dataclass(frozen=True)
class SmokeTiming:
    """One small step timed by the GPU smoke: a group of rollouts, then one train step."""

    rollout_s: float
    train_s: float
    rollouts: int
    max_turns: int
    at: str
    long_row_train_s: float | None = None  # 2 rows at 90% of max_seq_length, one train call
    concurrent_rollout_s: float | None = None  # the wall time of 64 concurrent rollouts
    concurrent_rollouts: int = 0

    def rates(self, max_seq_length: int) -> Rates:
        turns = max(self.max_turns, 1)
        wave = self.concurrent_rollout_s if self.concurrent_rollout_s is not None else None
        per_turn = (wave if wave is not None else self.rollout_s) / turns
        throughput = ASSUMED.train_tokens_per_second
        trained = "training throughput ASSUMED"
        if self.long_row_train_s:
            throughput = 2 * LONG_ROW_SHARE * max_seq_length / self.long_row_train_s
            trained = f"{throughput:,.0f} trained tokens/s from its long-row phase"
        rollouts = f"{self.concurrent_rollouts} concurrent" if wave is not None else "a group of"
        return Rates(
            per_turn,
            throughput,
            f"GPU smoke of {self.at}: {per_turn:.1f} s per turn ({rollouts} rollouts of at most "
            f"{self.max_turns} turns), {trained}",
        )


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
            long_row_train_s=_optional(record.get("long_row_train_s")),
            concurrent_rollout_s=_optional(record.get("concurrent_rollout_s")),
            concurrent_rollouts=int(record.get("concurrent_rollouts", 0) or 0),
        )
    except (KeyError, TypeError, ValueError):  # a smoke that stopped before the train step
        return None
    return timing if timing.rollouts > 0 else None


def _optional(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None
