"""What LedgerGym keeps beside ART's files in a run's model directory, and how it reads them back.

`{backend.path}/{project}/models/{name}/` holds ART's `checkpoints/NNNN`, `history.jsonl` and
`trajectories/`; next to them `ledgergym_run.json` records the resolved config and the data-order
fingerprint (a resumed run must match it, or pass --force) and `ledgergym_sft.json` marks the
cold-start phase done. Plain files only: `--check` and `--export` read them without ART.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from training import run_ledger
from training.art import adapter_files
from training.run_ledger import RunChanged
from training.runs import RunConfig

__all__ = ["RunChanged", "record_run"]  # RunChanged: the rule both paths share (run_ledger)

RUN_FILE = run_ledger.LEDGER_FILE
ADAPTER_CONFIG = adapter_files.CONFIG_FILE
ADAPTER_WEIGHTS = adapter_files.WEIGHT_FILES
INCOMPLETE_SUFFIX = ".incomplete"
SFT_FILE = "ledgergym_sft.json"
HISTORY_FILE = "history.jsonl"  # ART's, one JSON object per line
CORRUPT_SUFFIX = ".corrupt"  # history.jsonl.corrupt-N: an original that had unreadable lines
SMOKE_FILE = "ledgergym_smoke.json"  # python -m training.art.gpu_smoke: its figures
SMOKE_PATH = ".art-smoke"  # the smoke's default --path
SMOKE_SUFFIX = "-smoke"  # the smoke trains `<run>-smoke`, never the run itself
STEP_SECONDS_KEY = "time/loop_step_s"  # what train.py logs per step; `--check` reads it back
PASS1_KEY = "val/pass1"


def art_path(run: RunConfig) -> Path:
    """`[backend] path`, absolute: relative paths are taken from the working directory."""
    return Path(run.backend.path).expanduser().resolve()


def model_dir(run: RunConfig) -> Path:
    return art_path(run) / run.backend.project / "models" / run.name


def checkpoint_steps(directory: Path) -> list[int]:
    root = directory / "checkpoints"
    if not root.is_dir():
        return []
    return sorted(int(p.name) for p in root.iterdir() if p.is_dir() and p.name.isdigit())


def adapter_problem(checkpoint: Path, target_modules: Sequence[str] | None = None) -> str | None:
    """What is wrong with a checkpoint's adapter, in one line; None when it is whole."""
    return adapter_files.adapter_problem(checkpoint, target_modules)


def holds_adapter(checkpoint: Path, target_modules: Sequence[str] | None = None) -> bool:
    """A whole PEFT adapter: its config, and weights whose safetensors header fits the file and
    holds a lora_A/lora_B pair for every target module (training.art.adapter_files)."""
    return adapter_files.adapter_problem(checkpoint, target_modules) is None


def set_aside_incomplete_checkpoints(
    directory: Path, target_modules: Sequence[str] | None = None
) -> list[str]:
    """Before `register`: the newest checkpoint must hold an adapter; one warning per move.

    ART resumes from the highest-numbered `checkpoints/NNNN` whatever it holds, and a kill
    during a save can leave one without adapter files. Such a directory is renamed
    `NNNN.incomplete` (ART ignores names that are not numbers; nothing is deleted) until the
    newest holds an adapter, so the run resumes from the previous checkpoint and retrains the
    lost step on the same batch. Pass the run's `[lora] target_modules` to check them too.
    """
    warnings = []
    for step in reversed(checkpoint_steps(directory)):
        checkpoint = directory / "checkpoints" / f"{step:04d}"
        problem = adapter_files.adapter_problem(checkpoint, target_modules)
        if problem is None:
            break
        aside = _free_name(checkpoint.with_name(checkpoint.name + INCOMPLETE_SUFFIX))
        checkpoint.rename(aside)
        files = _non_empty(aside / ADAPTER_CONFIG) and any(
            _non_empty(aside / name) for name in ADAPTER_WEIGHTS
        )
        what = f"a broken adapter: {problem}" if files else "no adapter files"
        warnings.append(
            f"warning: checkpoint {step:04d} holds {what} (a save cut short?); "
            f"moved to {aside.name}, resuming from the checkpoint before it"
        )
    return warnings


def _free_name(path: Path) -> Path:
    candidate, n = path, 1
    while candidate.exists():
        n += 1
        candidate = path.with_name(f"{path.name}-{n}")
    return candidate


def _non_empty(path: Path) -> bool:
    return path.is_file() and path.stat().st_size > 0


def record_run(
    directory: Path, run: RunConfig, data_fingerprint: str, *, force: bool = False
) -> str | None:
    """Writes the ledger on a fresh run; refuses a changed one unless forced (then says so).

    Called before the backend starts (a refusal must not cost a vLLM start-up). Without any
    checkpoint nothing was trained yet, so a changed config simply replaces the ledger; with
    one, even the untrained 0000, the LoRA shape and the data order are already fixed.
    """
    path = directory / RUN_FILE
    steps = checkpoint_steps(directory)
    if not path.is_file() or not steps:
        run_ledger.write_json(path, run_ledger.new_ledger(run, data_fingerprint))
        return None
    step = steps[-1]
    saved = run_ledger.read_ledger(path)
    changes = run_ledger.changes(saved, run, data_fingerprint)
    if not changes:
        return None
    if not force:
        raise RunChanged(
            f"{directory} was trained (to step {step}) with another config: changed "
            f"{', '.join(changes)}; pass --force to continue with this one, or rename the run"
        )
    entry = {"at_step": step, "changed": changes, "at": run_ledger.now()}
    forced = [*saved.get("forced", []), entry]
    ledger = run_ledger.new_ledger(run, data_fingerprint)
    run_ledger.write_json(path, {**ledger, "created": saved.get("created"), "forced": forced})
    return f"--force: continuing at step {step} with changed {', '.join(changes)}"


@dataclass(frozen=True)
class SftState:
    """The cold start ran from checkpoint `start_step` and its result is `grpo_start_step`."""

    start_step: int
    grpo_start_step: int | None  # None until the SFT checkpoint exists
    trajectories: int = 0
    teacher: str = ""
    shared_key: str = ""  # the shared cold start this run adopted or published (cold_start_key)

    @property
    def done(self) -> bool:
        return self.grpo_start_step is not None


def read_sft_state(directory: Path) -> SftState | None:
    path = directory / SFT_FILE
    if not path.is_file():
        return None
    saved = json.loads(path.read_text(encoding="utf-8"))
    known = SftState.__dataclass_fields__
    return SftState(**{name: value for name, value in saved.items() if name in known})


def write_sft_state(directory: Path, state: SftState) -> None:
    run_ledger.write_json(directory / SFT_FILE, vars(state))


def grpo_offset(directory: Path) -> int:
    """Checkpoints made before GRPO (the SFT step): GRPO step s is checkpoint s + offset."""
    state = read_sft_state(directory)
    return state.grpo_start_step if state and state.grpo_start_step is not None else 0


def read_history(directory: Path) -> list[dict[str, Any]]:
    path = directory / HISTORY_FILE
    if not path.is_file():
        return []
    rows = []
    for line in path.read_bytes().splitlines():
        try:
            row = json.loads(line)
        except ValueError:  # a line cut by a kill mid-write (or not UTF-8)
            continue
        if isinstance(row, dict):
            rows.append(row)
    return rows


def smoke_dir(run: RunConfig, path: str = SMOKE_PATH) -> Path:
    """Where `python -m training.art.gpu_smoke --run <run>` trains its copy (cwd-relative)."""
    root = Path(path).expanduser().resolve()
    return root / run.backend.project / "models" / (run.name + SMOKE_SUFFIX)


def write_smoke_record(directory: Path, record: dict[str, Any]) -> Path:
    run_ledger.write_json(directory / SMOKE_FILE, record)
    return directory / SMOKE_FILE


def read_smoke_record(directory: Path) -> dict[str, Any] | None:
    """The last smoke's figures, or None when there was none (or it cannot be read)."""
    saved = run_ledger.read_ledger(directory / SMOKE_FILE)
    return saved or None


def repair_history(directory: Path) -> str | None:
    """Drops the lines of history.jsonl that polars cannot read; the original is kept beside it.

    ART's `model.log` appends one JSON object per line, and `model.delete_checkpoints` reads the
    whole file with polars: one line cut by a kill mid-write raises polars' ComputeError in every
    later validation (and a cut last line would swallow the next row appended to it). Run before
    training and again when pruning fails. Returns the one line to print, or None when whole.
    """
    path = directory / HISTORY_FILE
    if not path.is_file():
        return None
    raw = path.read_bytes()
    lines = [line for line in raw.splitlines() if line.strip()]
    kept = [line for line in lines if _readable_row(line)]
    if len(kept) == len(lines):
        if not raw or raw.endswith(b"\n"):
            return None
        with path.open("ab") as handle:  # or ART's next row would be appended to this one
            handle.write(b"\n")
        return f"warning: {path} ended without a newline (a write cut short?); added one"
    n = 1
    while (copy := path.with_name(f"{HISTORY_FILE}{CORRUPT_SUFFIX}-{n}")).exists():
        n += 1
    copy.write_bytes(raw)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(b"".join(line + b"\n" for line in kept))
    os.replace(tmp, path)
    return (
        f"warning: {path} had {len(lines) - len(kept)} unreadable line(s) (a write cut short?): "
        f"dropped, {len(kept)} kept; the original is {copy.name}"
    )


def _readable_row(line: bytes) -> bool:
    """A JSON object without NaN or Infinity (Python's json takes them, polars does not)."""
    try:
        row = json.loads(line, parse_constant=_reject_constant)
    except ValueError:  # also UnicodeDecodeError
        return False
    return isinstance(row, dict)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def validated_steps(history: list[dict[str, Any]]) -> set[int]:
    return {int(row["step"]) for row in history if PASS1_KEY in row and "step" in row}


def latest_validation(history: list[dict[str, Any]]) -> dict[str, Any] | None:
    rows = [row for row in history if PASS1_KEY in row]
    return max(rows, key=lambda row: row.get("step", 0)) if rows else None


def measured_step_seconds(history: list[dict[str, Any]]) -> tuple[float, int] | None:
    """Median seconds per GRPO step over the logged steps, and how many there were."""
    values = sorted(float(row[STEP_SECONDS_KEY]) for row in history if STEP_SECONDS_KEY in row)
    if not values:
        return None
    return values[len(values) // 2], len(values)
