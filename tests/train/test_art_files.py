"""training.art.art_files: a kill at any byte of ART's writes is repaired at start-up.

ART's own `model.log` writes the files here, through the backend double (tests/train/
backend_double.py); a kill is simulated by cutting the file ART was writing at random byte
offsets (seeded). After the repair, a new model on the same directory logs again through ART
(which reads state.json back) and its counters go on as if nothing had been cut.
"""

from __future__ import annotations

import asyncio
import json
import random
import shutil
from pathlib import Path

import pytest

from tests.train.backend_double import FakeBackendForTests
from tests.train.test_backend_double import INFERENCE_URL, PROJECT, group_with_rewards, new_model
from training.art import art_files, run_state

STEPS_KEY = "data/cum/num_gradient_steps"
CUTS = 12  # random offsets per file


def model_dir(root: Path) -> Path:
    return root / PROJECT / "models" / "agent-001"


async def train_and_log(root: Path, steps: int) -> None:
    model = new_model()
    backend = FakeBackendForTests(path=root, inference_base_url=INFERENCE_URL)
    await model.register(backend)
    for _ in range(steps):
        groups = [group_with_rewards(1.0, 0.0)]
        result = await backend.train(model, groups)
        await model.log(groups, metrics=result.metrics, step=result.step, split="train")


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("art")
    asyncio.run(train_and_log(root, 3))
    return root


def copy_of(trained: Path, tmp_path: Path) -> Path:
    root = tmp_path / "run"
    shutil.copytree(trained, root)
    return root


def last_counter(directory: Path) -> float:
    return run_state.read_history(directory)[-1][STEPS_KEY]


def offsets(size: int, seed: int) -> list[int]:
    draws = random.Random(seed).sample(range(1, size), min(CUTS, size - 1))
    return sorted({0, *draws})  # 0: ART's open(..., "w") emptied it, the kill came before dump


def test_a_whole_directory_needs_no_repair(trained, tmp_path):
    root = copy_of(trained, tmp_path)
    assert art_files.repair_art_files(model_dir(root), ["q_proj"]) == []


def test_state_json_cut_anywhere_is_rebuilt_and_the_run_goes_on(trained, tmp_path):
    whole = (model_dir(trained) / "state.json").read_bytes()
    expected = json.loads(whole)
    for cut in offsets(len(whole), seed=31):
        root = copy_of(trained, tmp_path / str(cut))
        directory = model_dir(root)
        (directory / "state.json").write_bytes(whole[:cut])
        with pytest.raises(ValueError):  # what ART's read_state would raise on the next log
            json.loads((directory / "state.json").read_bytes())
        lines = art_files.repair_art_files(directory, ["q_proj"])
        assert len(lines) == 1 and "state.json" in lines[0], lines
        assert "the original is state.json.corrupt-1" in lines[0]
        assert "up to checkpoint 0003" in lines[0]
        assert (directory / "state.json.corrupt-1").read_bytes() == whole[:cut]
        assert json.loads((directory / "state.json").read_bytes()) == expected
        asyncio.run(train_and_log(root, 1))  # ART reads the rebuilt state back
        assert last_counter(directory) == 4.0  # 3 + 1, as without the kill


def test_a_history_row_cut_anywhere_is_dropped_and_the_run_goes_on(trained, tmp_path):
    polars = pytest.importorskip("polars")
    whole = (model_dir(trained) / "history.jsonl").read_bytes()
    last_row_starts = whole.rstrip(b"\n").rfind(b"\n") + 1
    for cut in offsets(len(whole) - last_row_starts, seed=32):
        root = copy_of(trained, tmp_path / str(cut))
        directory = model_dir(root)
        (directory / "history.jsonl").write_bytes(whole[: last_row_starts + cut])
        lines = art_files.repair_art_files(directory, ["q_proj"])
        if cut:  # at 0 the kill came before ART appended a byte: nothing to repair
            assert len(lines) == 1 and "history.jsonl" in lines[0], lines
        else:
            assert lines == []
        asyncio.run(train_and_log(root, 1))
        assert polars.read_ndjson(directory / "history.jsonl").height == 3  # rows 1, 2 and 4
        assert last_counter(directory) == 4.0  # state.json was whole: its counters go on


def test_a_state_json_rebuilt_after_a_lost_checkpoint_stops_at_the_one_kept(trained, tmp_path):
    root = copy_of(trained, tmp_path)
    directory = model_dir(root)
    shutil.rmtree(directory / "checkpoints" / "0003")  # as if step 3 is trained again
    (directory / "state.json").write_bytes(b"")
    state, step = art_files.rebuilt_state(directory)
    assert step == 2 and state["_metrics_builder_state"]["cum_state"][STEPS_KEY] == 2.0


def test_cut_trajectory_files_are_set_aside(trained, tmp_path):
    root = copy_of(trained, tmp_path)
    parquet = model_dir(root) / "trajectories" / "train" / "0003.parquet"
    whole = parquet.read_bytes()
    assert art_files.set_aside_cut_trajectories(model_dir(root)) == []
    parquet.write_bytes(whole[: random.Random(33).randrange(1, len(whole) - 1)])
    lines = art_files.set_aside_cut_trajectories(model_dir(root))
    assert len(lines) == 1 and lines[0].endswith("moved to 0003.parquet.corrupt-1")
    assert not parquet.exists()


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        (b"", "empty"),
        (b'{"_metrics_builder_state": {"cum_st', "not JSON (cut short?)"),
        (b"[1]", "not a JSON object"),
        (b'{"_metrics_builder_state": {"cum_state": {"a/cum/b": "x"}}}', "not a number"),
        (b'{"_metrics_builder_state": {"cum_state": []}}', "the wrong shape"),
    ],
)
def test_state_problems_are_named(raw, problem):
    found = art_files.state_problem(raw)
    assert found is not None and found.endswith(problem)
    assert art_files.state_problem(b'{"_metrics_builder_state": {"cum_state": {}}}') is None
