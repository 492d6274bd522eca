"""What a stopped TRL run trusts: the newest checkpoint whose trainer state reads back whole; a
folder cut mid-save is set aside; the Ctrl-C line names what was kept.

Run: pytest tests/train/test_trl_checkpoints.py      (seconds: nothing is trained)
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("transformers")

from training.trl.checkpoints import (
    Checkpoint,
    RunProgress,
    drop_unfinished,
    last_checkpoint,
    publish,
    staging,
)


def saved(phase: Path, step: int, state: str | None = None) -> Path:
    folder = phase / f"checkpoint-{step}"
    folder.mkdir(parents=True)
    (folder / "model.safetensors").write_bytes(b"weights")
    if state is None:
        state = json.dumps({"global_step": step})
    if state:
        (folder / "trainer_state.json").write_text(state)
    return folder


def test_the_newest_whole_checkpoint_is_trusted_and_a_cut_one_set_aside(tmp_path: Path) -> None:
    saved(tmp_path, 50)
    saved(tmp_path, 100)
    saved(tmp_path, 150, state='{"global_st')  # killed while the state was written
    saved(tmp_path, 200, state="")  # killed before it
    kept = last_checkpoint(tmp_path)
    assert kept == Checkpoint(tmp_path / "checkpoint-100", 100)
    removed = drop_unfinished(tmp_path, kept)
    assert [p.name for p in removed] == ["checkpoint-150", "checkpoint-200"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["checkpoint-100", "checkpoint-50"]


def test_a_state_that_names_another_step_is_not_trusted(tmp_path: Path) -> None:
    saved(tmp_path, 10, state=json.dumps({"global_step": 9}))
    assert last_checkpoint(tmp_path) is None and last_checkpoint(tmp_path / "none") is None


def test_a_product_appears_under_its_name_only_when_whole(tmp_path: Path) -> None:
    final = tmp_path / "adapter"
    staging(final).mkdir()
    (staging(final) / "adapter_model.safetensors").write_bytes(b"new")
    final.mkdir()
    (final / "stale.txt").write_text("from a run cut before")
    publish(final)
    assert sorted(p.name for p in final.iterdir()) == ["adapter_model.safetensors"]
    assert not staging(final).exists()


def test_the_ctrl_c_line_says_what_was_kept_and_how_to_continue(tmp_path: Path) -> None:
    progress = RunProgress(command="python train.py --run cpu-smoke")
    assert progress.interrupted_line() == (
        "interrupted during preparing data and model: nothing to keep yet; "
        "`python train.py --run cpu-smoke` starts it again"
    )
    progress.enter("the SFT warm start", of=400, save_every=50)
    progress.step = 37
    assert "at step 37/400; kept nothing of this phase yet (a checkpoint every 50 steps)" in (
        progress.interrupted_line()
    )
    progress.step, progress.checkpoint = 163, Checkpoint(Path("outputs/x/sft/checkpoint-150"), 150)
    line = progress.interrupted_line()
    assert "kept the checkpoint outputs/x/sft/checkpoint-150 (step 150)" in line
    assert line.endswith("rerun `python train.py --run cpu-smoke` to continue from there")
