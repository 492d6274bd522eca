"""One cold start for the runs that share it: the SFT checkpoint trained once, adopted by others.

The seed's two main runs (binary and shaped reward) must differ in the reward alone, so they
must start GRPO from the same weights, not from two SFT runs that agree only in expectation.
A run's cold start is identified by `cold_start_key`: everything that decides the SFT result
(base model and precision, LoRA shape, row length, the [cold_start] section, the data the
teacher plays, the seed that shuffles it, the generator that made the scenarios). The first run
with a key trains it and publishes the checkpoint to `{path}/{project}/cold-starts/<key>/`; a
later run with the same key copies it into its own `checkpoints/` before ART registers the
model, so ART loads it exactly as it loads a checkpoint to resume from (init_args model_name is
the newest checkpoint: art/dev/get_model_config.py). Publishing goes through a temporary name
and one rename: a kill leaves no half-copied cold start behind.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from training import run_ledger
from training.art import adapter_files
from training.art.run_state import (
    SftState,
    art_path,
    checkpoint_steps,
    read_sft_state,
    write_sft_state,
)
from training.runs import RunConfig

SHARED_DIR = "cold-starts"
RECORD_FILE = "cold_start.json"
CHECKPOINT_DIR = "checkpoint"


@dataclass(frozen=True)
class SharedColdStart:
    key: str
    directory: Path
    step: int  # the checkpoint number the SFT produced (GRPO starts there)
    trajectories: int
    teacher: str
    trained_by: str  # the run that trained it


def cold_start_key(run: RunConfig) -> str:
    """What decides the SFT result, hashed; runs with equal keys share one cold start."""
    from env.versions import generator_hash

    assert run.cold_start is not None
    section = run.cold_start.model_dump(mode="json", exclude={"shared"})
    parts = {
        "base_model": run.base_model,
        "model": run.model.model_dump(mode="json"),
        "lora": run.lora.model_dump(mode="json"),
        "max_seq_length": run.grpo.max_seq_length,
        "cold_start": section,
        "data": run.data.model_dump(mode="json", include={"split", "limit", "curriculum"}),
        "seed": run.seed,
        "rollout": run.rollout.model_dump(mode="json", include={"tool_budget", "max_turns"}),
        "generator": generator_hash(),
    }
    text = json.dumps(parts, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def shared_dir(run: RunConfig, key: str) -> Path:
    return art_path(run) / run.backend.project / SHARED_DIR / key


def find_shared(run: RunConfig) -> SharedColdStart | None:
    """The published cold start of this run's key, when one is whole on disk."""
    if run.cold_start is None or not run.cold_start.shared:
        return None
    key = cold_start_key(run)
    directory = shared_dir(run, key)
    record = run_ledger.read_ledger(directory / RECORD_FILE)
    if not record or record.get("key") != key:
        return None
    if adapter_files.adapter_problem(directory / CHECKPOINT_DIR, run.lora.target_modules):
        return None
    return SharedColdStart(
        key=key,
        directory=directory,
        step=int(record["step"]),
        trajectories=int(record.get("trajectories", 0)),
        teacher=str(record.get("teacher", "")),
        trained_by=str(record.get("trained_by", "?")),
    )


def publish(run: RunConfig, model_directory: Path, step: int, state: SftState) -> Path | None:
    """Copies this run's SFT checkpoint to the shared place (unless one is there already)."""
    if run.cold_start is None or not run.cold_start.shared or find_shared(run) is not None:
        return None
    key = cold_start_key(run)
    target = shared_dir(run, key)
    source = model_directory / "checkpoints" / f"{step:04d}"
    if adapter_files.adapter_problem(source, run.lora.target_modules):
        return None
    staging = target.with_name(f"{key}.incomplete-{os.getpid()}")
    shutil.rmtree(staging, ignore_errors=True)
    shutil.copytree(source, staging / CHECKPOINT_DIR)
    record = {
        "key": key,
        "step": step,
        "trajectories": state.trajectories,
        "teacher": state.teacher,
        "trained_by": run.name,
        "at": run_ledger.now(),
    }
    run_ledger.write_json(staging / RECORD_FILE, record)
    shutil.rmtree(target, ignore_errors=True)  # a stale copy of the same key
    os.replace(staging, target)
    return target


def adopt(run: RunConfig, model_directory: Path) -> str | None:
    """Before `register`: a fresh run whose key is published starts from that checkpoint.

    Only a run with no checkpoint and no cold-start state of its own adopts; it gets the same
    checkpoint number the SFT produced (GRPO step numbering then matches the run that trained
    it) and a done `ledgergym_sft.json`. Returns the line to print.
    """
    found = find_shared(run)
    if found is None or checkpoint_steps(model_directory) or read_sft_state(model_directory):
        return None
    destination = model_directory / "checkpoints" / f"{found.step:04d}"
    destination.parent.mkdir(parents=True, exist_ok=True)
    staging = destination.with_name(destination.name + ".adopting")
    shutil.rmtree(staging, ignore_errors=True)
    shutil.copytree(found.directory / CHECKPOINT_DIR, staging)
    os.replace(staging, destination)  # ART ignores the staging name (not a number)
    write_sft_state(
        model_directory,
        SftState(
            start_step=0,
            grpo_start_step=found.step,
            trajectories=found.trajectories,
            teacher=found.teacher,
            shared_key=found.key,
        ),
    )
    return (
        f"cold start: the shared SFT checkpoint {found.key} (trained by {found.trained_by}, "
        f"{found.trajectories} {found.teacher} trajectories) -> checkpoint {found.step:04d}"
    )
