"""Start-up repair of every file in a run's model directory that a kill can leave broken.

ART 0.5.18 writes three kinds of file per step after `backend.train` saved the checkpoint: a row
appended to `history.jsonl`, `trajectories/<split>/NNNN.parquet`, and `state.json`, which
`model.log` rewrites in place (`open(..., "w")` then `json.dump`) and reads back with a plain
`json.load` on the next log: a kill during that write leaves a cut or empty file, and every
restart then trains one step and dies in `model.log`. Before registering, `repair_art_files`:
sets aside a checkpoint without a whole adapter (run_state), drops unreadable history lines
(run_state.repair_history), rebuilds an unreadable state.json from history.jsonl up to the
newest checkpoint's step, and sets aside a cut trajectory file. Originals are kept as
`<name>.corrupt-N`; each repair prints one line.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from training.art import run_state

STATE_FILE = "state.json"
METRICS_STATE_KEY = "_metrics_builder_state"  # art/model.py METRICS_BUILDER_STATE_KEY
# ART derives this one from its set of scenario ids (not kept in history): not a counter to copy
UNIQUE_SCENARIOS_KEY = "data/cum/num_unique_scenarios"
PARQUET_MAGIC = b"PAR1"  # a parquet file starts and ends with it (the footer is written last)


def repair_art_files(
    directory: Path, target_modules: Sequence[str] | None = None, *, checkpoints: bool = True
) -> list[str]:
    """Every repair, in dependency order (state.json is rebuilt from the repaired history and
    the newest whole checkpoint); the lines to print, none when all was whole."""
    lines = []
    if checkpoints:  # only the local backend keeps checkpoints in the directory
        lines += run_state.set_aside_incomplete_checkpoints(directory, target_modules)
    history = run_state.repair_history(directory)
    lines += [history] if history else []
    state = repair_state(directory)
    lines += [state] if state else []
    lines += set_aside_cut_trajectories(directory)
    return lines


def state_problem(raw: bytes) -> str | None:
    """Why ART could not load these state.json bytes (in one phrase); None when it can."""
    try:
        state = json.loads(raw)
    except ValueError:  # also UnicodeDecodeError; an empty file too
        return "empty" if not raw.strip() else "not JSON (cut short?)"
    if not isinstance(state, dict):
        return "not a JSON object"
    metrics = state.get(METRICS_STATE_KEY, {})
    if not isinstance(metrics, dict):
        return f"{METRICS_STATE_KEY} is not an object"
    counters, ids = metrics.get("cum_state", {}), metrics.get("unique_scenario_ids", [])
    if not isinstance(counters, dict) or not isinstance(ids, list):
        return f"{METRICS_STATE_KEY} has the wrong shape"
    if not all(_number(value) for value in counters.values()):
        return "a cumulative counter is not a number"
    return None


def rebuilt_state(directory: Path) -> tuple[dict[str, Any], int]:
    """ART's metrics state from history.jsonl: each cumulative counter's last value in a row at
    or before the newest checkpoint (later rows belong to steps that will be trained again).
    Returns the state and the step it stands at."""
    steps = run_state.checkpoint_steps(directory)
    newest = steps[-1] if steps else 0
    counters: dict[str, float] = {}
    rows = [row for row in run_state.read_history(directory) if _step(row) <= newest]
    for row in sorted(rows, key=_step):  # stable: rows of one step keep their order
        for key, value in row.items():
            if _cumulative(key) and key != UNIQUE_SCENARIOS_KEY and _number(value):
                counters[key] = float(value)
    state = {METRICS_STATE_KEY: {"cum_state": counters, "unique_scenario_ids": []}}
    return state, newest


def repair_state(directory: Path) -> str | None:
    """An unreadable state.json is set aside as state.json.corrupt-N and rebuilt; None: whole."""
    path = directory / STATE_FILE
    if not path.is_file():
        return None
    raw = path.read_bytes()
    problem = state_problem(raw)
    if problem is None:
        return None
    copy = _corrupt_copy(path)
    copy.write_bytes(raw)
    state, step = rebuilt_state(directory)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(state, indent=2), encoding="utf-8")
    os.replace(tmp, path)
    counters = len(state[METRICS_STATE_KEY]["cum_state"])
    return (
        f"warning: {path} was {problem} (a write cut short?): the original is {copy.name}; "
        f"rebuilt from {run_state.HISTORY_FILE} up to checkpoint {step:04d} ({counters} "
        "cumulative counters; ART's count of unique scenarios starts again from 0)"
    )


def set_aside_cut_trajectories(directory: Path) -> list[str]:
    """trajectories/<split>/NNNN.parquet without parquet's magic at both ends -> .corrupt-N.

    Nothing in ART reads them back on resume, but an analysis of the run would stop on one.
    """
    lines = []
    for path in sorted((directory / "trajectories").glob("*/*.parquet")):
        with path.open("rb") as handle:
            head = handle.read(4)
            size = path.stat().st_size
            handle.seek(max(size - 4, 0))
            tail = handle.read(4)
        if size >= 12 and head == tail == PARQUET_MAGIC:
            continue
        copy = _corrupt_copy(path)
        path.rename(copy)
        lines.append(
            f"warning: {path} is not a whole parquet file (a write cut short?): moved to "
            f"{copy.name}"
        )
    return lines


def _corrupt_copy(path: Path) -> Path:
    n = 1
    while (copy := path.with_name(f"{path.name}{run_state.CORRUPT_SUFFIX}-{n}")).exists():
        n += 1
    return copy


def _cumulative(key: str) -> bool:
    """ART's `is_cumulative_metric_key`: `<section>/cum/<name>`."""
    parts = key.split("/", 2)
    return len(parts) >= 2 and parts[1] == "cum"


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _step(row: dict[str, Any]) -> int:
    step = row.get("step", 0)
    return int(step) if _number(step) else 0
