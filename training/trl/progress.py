"""What a TRL run shows while it runs: one progress bar per phase, short lines, a full log file.

The console gets a tqdm bar per phase (SFT steps, GRPO steps; each evaluation has its own from
`eval.run.evaluate`) with i/N, elapsed and remaining time, labelled with what it does, and one
short line per logged step; every metric dict the trainers log goes, whole, to the run's log file
(`train.log`, one JSON object per line, with its phase). Transformers' own per-log printing and
its loading bars are switched off. Under several processes only rank 0 shows and writes.
Used by `training.trl.phases`, `training.trl.sft` and `training.trl.grpo`.
"""

from __future__ import annotations

import json
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tqdm import tqdm
from transformers import TrainerCallback

LOG_FILE = "train.log"

Line = Callable[[int, int, dict[str, Any]], str | None]  # (step, of, logs) -> console line


def quiet_libraries() -> None:
    """No loading/tokenizing bars from transformers and datasets: the phases have their own."""
    import datasets
    from transformers.utils import logging

    logging.disable_progress_bar()
    datasets.disable_progress_bars()
    # peft 0.21 and TRL 1.16 still read transformers 5's deprecated `is_gradient_checkpointing`
    # (peft_model.py, trl/models/utils.py): a warning per LoRA model, none of it ours to fix
    warnings.filterwarnings(
        "ignore", message="`is_gradient_checkpointing` is deprecated", category=FutureWarning
    )


def close_bars() -> None:
    """Closes every progress bar still open (a Ctrl-C skips their trainers' `on_train_end`);
    an open bar would otherwise redraw itself at exit, after the line that says what was kept.
    tqdm keeps its live bars in `tqdm._instances`."""
    for bar in list(getattr(tqdm, "_instances", ())):
        bar.close()


def say(line: str) -> None:
    """A console line that does not break a progress bar being drawn."""
    tqdm.write(line, file=sys.stderr)


def sft_line(step: int, of: int, logs: dict[str, Any]) -> str | None:
    if "loss" not in logs:
        return None
    accuracy = logs.get("mean_token_accuracy")
    return f"SFT step {step}/{of}: loss {float(logs['loss']):.3f}" + (
        f", token accuracy {float(accuracy):.2f}" if accuracy is not None else ""
    )


def grpo_line(rows: list[dict[str, Any]]) -> Line:
    """The line per GRPO step, from the step's row that `StepRecorder` has just appended."""

    def line(step: int, of: int, logs: dict[str, Any]) -> str | None:
        if "reward" not in logs or not rows:
            return None
        row = rows[-1]
        return (
            f"GRPO step {step}/{of}: reward mean {row['reward_mean']:.3f}, success "
            f"{row['successes']}/{row['episodes']}, tool calls {row['tool_calls_mean']:.1f}"
        )

    return line


class PhaseProgress(TrainerCallback):
    """A trainer's progress bar, its short console lines and its log file, for one phase."""

    def __init__(
        self,
        phase: str,
        label: str,
        log_path: Path,
        line: Line | None = None,
        *,
        main: bool = True,
    ) -> None:
        self.phase = phase
        self.label = label
        self.log_path = log_path
        self.line = line
        self.main = main  # under several processes only rank 0 shows and writes anything
        self.bar: tqdm | None = None

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if not self.main:
            return
        if state.global_step:  # continued from a checkpoint: said, and marked in the log
            say(f"{self.label}: continuing from step {state.global_step}/{state.max_steps}")
            record = {"phase": self.phase, "step": state.global_step, "continued": True}
            with self.log_path.open("a", encoding="utf-8") as out:
                out.write(json.dumps(record) + "\n")
        self.bar = tqdm(
            total=state.max_steps,
            initial=state.global_step,
            desc=self.label,
            unit="step",
            file=sys.stderr,
        )

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self.bar is not None:
            self.bar.update(state.global_step - self.bar.n)

    def on_log(self, args: Any, state: Any, control: Any, logs: Any = None, **kwargs: Any) -> None:
        if not logs or not self.main:
            return
        record = {"phase": self.phase, "step": state.global_step, **logs}
        with self.log_path.open("a", encoding="utf-8") as out:
            out.write(json.dumps(record, default=str) + "\n")
        text = self.line(state.global_step, state.max_steps, dict(logs)) if self.line else None
        if text:
            say(text)

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None


def attach(trainer: Any, progress: PhaseProgress) -> None:
    """Our bar and log instead of transformers' PrinterCallback (a dict printed per log)."""
    from transformers.trainer_callback import PrinterCallback, ProgressCallback

    trainer.remove_callback(PrinterCallback)
    trainer.remove_callback(ProgressCallback)
    trainer.add_callback(progress)
