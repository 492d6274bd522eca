"""The resume rule both training paths keep: a run directory records the config it was made with.

`ledgergym_run.json` holds the resolved run config and fingerprints; a run that finds another
config there stops, naming each changed field, unless `--force`. The ART path then continues in
place (`training.art.run_state.record_run`); the TRL path, which cannot resume, keeps the old
outputs beside the new ones (`training.trl.outputs`). Plain files only: no torch, no ART.
"""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from training.runs import RunConfig

LEDGER_FILE = "ledgergym_run.json"


class RunChanged(RuntimeError):
    """The run directory was made under another config; --force goes on with this one."""


def fingerprints(run: RunConfig, data_fingerprint: str) -> dict[str, str]:
    return {"fingerprint": run.fingerprint(), "data_fingerprint": data_fingerprint}


def new_ledger(run: RunConfig, data_fingerprint: str) -> dict[str, Any]:
    return {**fingerprints(run, data_fingerprint), "run": dump(run), "created": now(), "forced": []}


def changes(saved: dict[str, Any], run: RunConfig, data_fingerprint: str) -> list[str]:
    """What differs from the saved ledger, one entry per changed field; [] when nothing does.

    An empty `saved` (a ledger that cannot be read) counts as changed: its config is unknown.
    """
    current = fingerprints(run, data_fingerprint)
    if saved and all(saved.get(key) == value for key, value in current.items()):
        return []
    if not saved:
        return [f"{LEDGER_FILE} (unreadable: the saved config is unknown)"]
    return changed_fields(saved.get("run", {}), dump(run)) or ["the data order (filter file)"]


def read_ledger(path: Path) -> dict[str, Any]:
    """The saved ledger, or {} when it cannot be read (then the run counts as changed)."""
    try:
        saved = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return {}
    return saved if isinstance(saved, dict) else {}


def dump(run: RunConfig) -> dict[str, Any]:
    return run.model_dump(mode="json")


def changed_fields(old: dict[str, Any], new: dict[str, Any], prefix: str = "") -> list[str]:
    changed = []
    for key in sorted(old.keys() | new.keys()):
        a, b = old.get(key), new.get(key)
        if isinstance(a, dict) and isinstance(b, dict):
            changed += changed_fields(a, b, f"{prefix}{key}.")
        elif a != b:
            changed.append(f"{prefix}{key} ({a!r} -> {b!r})")
    return changed


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def write_json(path: Path, data: dict[str, Any]) -> None:
    """Via a temporary file: a kill mid-write must not leave half a ledger."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=True), encoding="utf-8")
    os.replace(tmp, path)
