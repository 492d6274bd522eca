"""training.art.run_state: the files beside ART's, read back safely (no ART, no GPU)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from training.art import run_state
from training.art.run_state import RunChanged
from training.runs import load_run_config


def checkpoint(directory: Path, step: int, *, weights: bytes = b"\x00" * 16) -> Path:
    path = directory / "checkpoints" / f"{step:04d}"
    path.mkdir(parents=True)
    (path / run_state.ADAPTER_CONFIG).write_text('{"r": 16}')
    (path / run_state.ADAPTER_WEIGHTS[0]).write_bytes(weights)
    return path


def test_only_a_newest_checkpoint_without_an_adapter_is_set_aside(tmp_path):
    checkpoint(tmp_path, 0)
    checkpoint(tmp_path, 1, weights=b"")  # empty weights: the save was cut short
    (tmp_path / "checkpoints" / "0002").mkdir()  # nothing saved at all
    warnings = run_state.set_aside_incomplete_checkpoints(tmp_path)
    assert run_state.checkpoint_steps(tmp_path) == [0]
    assert [w.split(";")[0] for w in warnings] == [
        "warning: checkpoint 0002 holds no adapter files (a save cut short?)",
        "warning: checkpoint 0001 holds no adapter files (a save cut short?)",
    ]
    assert (tmp_path / "checkpoints" / "0001.incomplete" / "adapter_config.json").is_file()
    assert run_state.set_aside_incomplete_checkpoints(tmp_path) == []  # idempotent


def test_a_second_cut_save_of_the_same_step_is_kept_beside_the_first(tmp_path):
    checkpoint(tmp_path, 0)
    for _ in range(2):
        (tmp_path / "checkpoints" / "0001").mkdir()
        run_state.set_aside_incomplete_checkpoints(tmp_path)
    aside = sorted(p.name for p in (tmp_path / "checkpoints").iterdir())
    assert aside == ["0000", "0001.incomplete", "0001.incomplete-2"]


def test_an_unreadable_ledger_counts_as_a_changed_run(tmp_path):
    run = load_run_config("binary-01")
    checkpoint(tmp_path, 0)
    run_state.record_run(tmp_path, run, "data-1")
    (tmp_path / run_state.RUN_FILE).write_bytes(b"\xff{ cut")
    with pytest.raises(RunChanged, match="unreadable"):
        run_state.record_run(tmp_path, run, "data-1")
    note = run_state.record_run(tmp_path, run, "data-1", force=True)
    assert note is not None and "unreadable" in note
    assert json.loads((tmp_path / run_state.RUN_FILE).read_text())["fingerprint"] == (
        run.fingerprint()
    )


def test_history_lines_cut_or_not_utf8_are_skipped(tmp_path):
    (tmp_path / "history.jsonl").write_bytes(b'{"step": 1}\n\xff\xfe\n{"step": 2, "x"\n[3]\n')
    assert run_state.read_history(tmp_path) == [{"step": 1}]
