"""What a TRL run keeps as it goes, and what it says when it is stopped.

Both phases save a trainer checkpoint (`sft/checkpoint-N`, `grpo/checkpoint-N`: weights,
optimizer, scheduler, RNG, step) every `[trl] sft_save_steps` / `grpo_save_steps` steps; a rerun
of the same command continues from the newest one whose `trainer_state.json` reads back whole
(a kill mid-save leaves a folder without it, which is set aside, never trusted). A finished
phase leaves its product under its final name (`warm_start/`, `adapter/`), written under a
temporary name and renamed, so its presence means it is complete. `RunProgress` follows the
run so that Ctrl-C can say in one line what was kept and how to continue.
Used by `training.trl.runner`, `training.trl.sft` and `training.trl.grpo`.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from transformers import TrainerCallback

CHECKPOINT = re.compile(r"^checkpoint-(\d+)$")
STATE_FILE = "trainer_state.json"
KEEP = 2  # checkpoints kept per phase: the newest, and one before it should that one be cut


@dataclass(frozen=True)
class Checkpoint:
    path: Path
    step: int


def last_checkpoint(phase_dir: Path) -> Checkpoint | None:
    """The newest checkpoint of a phase whose trainer state reads back whole, or None."""
    found = []
    for path in phase_dir.glob("checkpoint-*"):
        match = CHECKPOINT.match(path.name)
        if match and path.is_dir():
            found.append(Checkpoint(path, int(match.group(1))))
    for checkpoint in sorted(found, key=lambda c: c.step, reverse=True):
        step = _saved_step(checkpoint.path / STATE_FILE)
        if step == checkpoint.step:
            return checkpoint
    return None


def _saved_step(path: Path) -> int | None:
    try:
        state = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return None
    step = state.get("global_step") if isinstance(state, dict) else None
    return step if isinstance(step, int) else None


def drop_unfinished(phase_dir: Path, kept: Checkpoint | None) -> list[Path]:
    """Removes checkpoint folders newer than `kept` (cut mid-save: the phase redoes those
    steps and would write them again); returns what it removed. Rank 0 only."""
    removed = []
    for path in sorted(phase_dir.glob("checkpoint-*")):
        match = CHECKPOINT.match(path.name)
        if match and (kept is None or int(match.group(1)) > kept.step):
            shutil.rmtree(path)
            removed.append(path)
    return removed


def staging(final: Path) -> Path:
    """The temporary name a phase's product is written under (the same on every rank)."""
    return final.with_name(f".{final.name}.partial")


def publish(final: Path) -> Path:
    """Moves the product written at `staging(final)` to `final` in one rename. Rank 0 only."""
    if final.exists():
        shutil.rmtree(final)
    os.replace(staging(final), final)
    return final


@dataclass
class RunProgress:
    """Where the run is, for the line Ctrl-C prints; updated by the runner and by `Saved`."""

    command: str
    out_dir: Path | None = None
    phase: str = "preparing data and model"
    step: int = 0
    of: int = 0
    kept: list[str] = field(default_factory=list)  # finished products, e.g. "the SFT warm start"
    checkpoint: Checkpoint | None = None  # the current phase's newest saved checkpoint
    save_every: int = 0
    continued: dict[str, int] = field(default_factory=dict)  # phase folder -> step resumed at

    def enter(self, phase: str, of: int = 0, save_every: int = 0) -> None:
        self.phase, self.step, self.of, self.save_every = phase, 0, of, save_every
        self.checkpoint = None

    def interrupted_line(self) -> str:
        where = f"interrupted during {self.phase}"
        if self.of:
            where += f" at step {self.step}/{self.of}"
        kept = list(self.kept)
        if self.checkpoint is not None:
            kept.append(f"the checkpoint {self.checkpoint.path} (step {self.checkpoint.step})")
        elif self.of:
            kept.append(f"nothing of this phase yet (a checkpoint every {self.save_every} steps)")
        if not kept:
            return f"{where}: nothing to keep yet; `{self.command}` starts it again"
        return f"{where}; kept {', '.join(kept)}; rerun `{self.command}` to continue from there"


class Saved(TrainerCallback):
    """Keeps `RunProgress` at the trainer's current step and its newest checkpoint."""

    def __init__(self, progress: RunProgress, phase_dir: Path) -> None:
        self.progress = progress
        self.phase_dir = phase_dir

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.progress.step = state.global_step
        self.progress.checkpoint = last_checkpoint(self.phase_dir)

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.progress.step = state.global_step

    def on_save(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        path = self.phase_dir / f"checkpoint-{state.global_step}"
        self.progress.checkpoint = Checkpoint(path, state.global_step)
