"""training.art.run_state: the files beside ART's, read back safely (no ART, no GPU)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.train.adapter_fixtures import write_lora_adapter
from training.art import run_state
from training.art.run_state import RunChanged
from training.runs import ALL_LINEAR, load_run_config


def checkpoint(directory: Path, step: int, *, weights: bytes | None = None) -> Path:
    """A saved adapter; `weights` replaces its safetensors bytes (b"": a save cut short)."""
    path = directory / "checkpoints" / f"{step:04d}"
    write_lora_adapter(path, ALL_LINEAR, rank=16)
    if weights is not None:
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


HISTORY = b'{"step": 0, "val/pass1": 0.5}\n{"step": 1, "train/reward": 0.25}\n'


def test_a_history_line_cut_mid_write_is_dropped_and_the_original_kept(tmp_path):
    polars = pytest.importorskip("polars")
    cut = HISTORY + b'{"step": 2, "val/pa'  # a kill mid-write: no end, no newline
    (tmp_path / "history.jsonl").write_bytes(cut)
    with pytest.raises(polars.exceptions.ComputeError):  # what ART's delete_checkpoints hits
        polars.read_ndjson(tmp_path / "history.jsonl")
    note = run_state.repair_history(tmp_path)
    assert note is not None and len(note.splitlines()) == 1
    assert "1 unreadable line(s)" in note and "2 kept" in note
    assert note.endswith("the original is history.jsonl.corrupt-1")
    assert (tmp_path / "history.jsonl").read_bytes() == HISTORY
    assert (tmp_path / "history.jsonl.corrupt-1").read_bytes() == cut
    assert polars.read_ndjson(tmp_path / "history.jsonl").height == 2
    assert run_state.repair_history(tmp_path) is None  # whole now: nothing to say


def test_each_repair_keeps_its_own_copy_and_drops_what_polars_refuses(tmp_path):
    path = tmp_path / "history.jsonl"
    path.write_bytes(HISTORY + b"\xff\xfe\n")
    run_state.repair_history(tmp_path)
    path.write_bytes(HISTORY + b'{"step": 2, "loss/train": NaN}\n[3]\n')
    note = run_state.repair_history(tmp_path)
    assert note is not None and "2 unreadable line(s)" in note and note.endswith("corrupt-2")
    assert path.read_bytes() == HISTORY
    assert (tmp_path / "history.jsonl.corrupt-1").read_bytes().endswith(b"\xff\xfe\n")


def test_a_last_row_without_its_newline_gets_one(tmp_path):
    (tmp_path / "history.jsonl").write_bytes(HISTORY.rstrip(b"\n"))
    note = run_state.repair_history(tmp_path)
    assert note is not None and note.endswith("without a newline (a write cut short?); added one")
    assert (tmp_path / "history.jsonl").read_bytes() == HISTORY
    assert run_state.repair_history(tmp_path / "missing") is None
