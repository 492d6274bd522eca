"""Whose outputs `outputs/<run>/` holds: the TRL path's side of the resume rule both paths keep.

A TRL run continues from its checkpoints (`training.trl.checkpoints`); what it must not do is
continue, or replace, the outputs of another config silently. The folder's `ledgergym_run.json`
(`training.run_ledger`) names the config they were made with: the same config continues in
place; a changed one is refused, naming what changed, unless `--force`, which keeps the old
outputs beside the new in a dated folder (`outputs/<run>.<UTC date and time>/`), never deleting
them, and starts afresh. Under several processes rank 0 alone claims (`training.trl.ranks`).
Light: no torch.
"""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from pathlib import Path

from training import run_ledger
from training.data_order import curriculum_seeds
from training.run_ledger import LEDGER_FILE, RunChanged
from training.runs import RunConfig

__all__ = ["RunChanged", "claim_outputs", "effective_run"]


def effective_run(run: RunConfig, steps: int | None) -> RunConfig:
    """The run as it will be trained: `--max-steps` sets `[trl] grpo_steps` (other outputs)."""
    if steps is None or run.trl is None:
        return run
    return run.model_copy(update={"trl": run.trl.model_copy(update={"grpo_steps": steps})})


def data_fingerprint(run: RunConfig) -> str:
    """The scenarios the run trains and evaluates on (a function of the run file alone)."""
    eval_scenarios = run.trl.eval_scenarios if run.trl else run.validation.limit
    seeds = [
        curriculum_seeds(run.data.split, run.data.curriculum, run.data.limit),
        curriculum_seeds(run.validation.split, run.data.curriculum, eval_scenarios),
    ]
    return hashlib.sha256(json.dumps(seeds).encode()).hexdigest()[:16]


def claim_outputs(run: RunConfig, out_dir: Path, *, force: bool = False) -> str | None:
    """Makes `out_dir` this run's before anything is trained; returns a line to print, if any.

    Raises `RunChanged` (one line, naming each changed field) when `out_dir` holds the outputs
    of another config and `force` is not given. Outputs without a ledger (written before there
    was one) count as another config: theirs is unknown.
    """
    fingerprint = data_fingerprint(run)
    if not out_dir.is_dir() or not any(out_dir.iterdir()):
        run_ledger.write_json(out_dir / LEDGER_FILE, run_ledger.new_ledger(run, fingerprint))
        return None
    path = out_dir / LEDGER_FILE
    if path.is_file():
        changes = run_ledger.changes(run_ledger.read_ledger(path), run, fingerprint)
        reason = f"changed {', '.join(changes)}"
        what = f"a run made with another config: {reason}"
    else:
        changes = [f"unknown: no {LEDGER_FILE}"]
        reason = f"their config unknown: no {LEDGER_FILE}"
        what = f"outputs of an unknown config (no {LEDGER_FILE}: written before there was one)"
    if not changes:  # a finished one (summary.json) is said by the runner
        finished = (out_dir / "summary.json").is_file()
        return None if finished else f"{out_dir} holds a run of this same config: continuing it"
    if not force:
        raise RunChanged(
            f"{out_dir} holds {what}; pass --force to keep them beside the new run "
            f"(as {out_dir.name}.<UTC date>), or rename the run"
        )
    aside = _dated(out_dir)
    out_dir.rename(aside)
    ledger = run_ledger.new_ledger(run, fingerprint)
    ledger["forced"] = [{"kept_as": aside.name, "changed": changes, "at": run_ledger.now()}]
    run_ledger.write_json(out_dir / LEDGER_FILE, ledger)
    return f"--force: the previous outputs ({reason}) are kept in {aside}"


def _dated(out_dir: Path) -> Path:
    """`<run>.<UTC date and time>` beside `out_dir`, never an existing path."""
    stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H%M%SZ")
    candidate, n = out_dir.with_name(f"{out_dir.name}.{stamp}"), 1
    while candidate.exists():
        n += 1
        candidate = out_dir.with_name(f"{out_dir.name}.{stamp}-{n}")
    return candidate
