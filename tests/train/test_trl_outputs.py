"""The resume rule on the TRL path: a changed run file is refused, naming what changed, exactly as
the ART path refuses it (one rule, training/run_ledger.py); --force keeps the old outputs.

Run: pytest tests/train/test_trl_outputs.py      (seconds: nothing is trained)
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.train.adapter_fixtures import write_lora_adapter
from training.art import run_state
from training.run_ledger import LEDGER_FILE, RunChanged
from training.runs import RunConfig, load_run_config
from training.trl.outputs import claim_outputs, effective_run

REPO = Path(__file__).resolve().parents[2]
RUN_FILE = (REPO / "runs" / "cpu-smoke.toml").read_text(encoding="utf-8")
CHANGED_LR = "grpo.learning_rate (0.002 -> 0.001)"


def smoke(**grpo: float) -> RunConfig:
    run = load_run_config("cpu-smoke")
    return run.model_copy(update={"grpo": run.grpo.model_copy(update=grpo)})


def written(out: Path) -> Path:
    """Outputs a finished run left (as far as this rule cares: files that must survive)."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "summary.json").write_text('{"grpo_steps": 20}\n', encoding="utf-8")
    (out / "adapter").mkdir(exist_ok=True)
    (out / "adapter" / "adapter_model.safetensors").write_bytes(b"weights")
    return out


def test_a_fresh_folder_is_claimed_and_records_the_config(tmp_path: Path) -> None:
    out = tmp_path / "cpu-smoke"
    assert claim_outputs(smoke(), out) is None
    ledger = json.loads((out / LEDGER_FILE).read_text())
    assert ledger["fingerprint"] == smoke().fingerprint()
    assert ledger["run"]["grpo"]["learning_rate"] == 0.002


def test_the_same_config_continues_in_place(tmp_path: Path) -> None:
    out = tmp_path / "cpu-smoke"
    claim_outputs(smoke(), out)
    (out / "sft" / "checkpoint-50").mkdir(parents=True)  # a run stopped part-way
    note = claim_outputs(smoke(), out)
    assert note is not None and "same config: continuing it" in note
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cpu-smoke"]
    written(out)  # finished: nothing to continue, which the runner says with the results
    assert claim_outputs(smoke(), out) is None
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cpu-smoke"]


def test_a_changed_run_file_is_refused_naming_the_field_and_nothing_moves(tmp_path: Path) -> None:
    out = tmp_path / "cpu-smoke"
    claim_outputs(smoke(), out)
    written(out)
    with pytest.raises(RunChanged, match=r"grpo\.learning_rate \(0\.002 -> 0\.001\)") as refused:
        claim_outputs(smoke(learning_rate=0.001), out)
    assert "--force" in str(refused.value)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cpu-smoke"]
    assert (out / "adapter" / "adapter_model.safetensors").read_bytes() == b"weights"
    assert json.loads((out / LEDGER_FILE).read_text())["run"]["grpo"]["learning_rate"] == 0.002


def test_force_keeps_the_old_outputs_in_a_dated_folder_beside_the_new(tmp_path: Path) -> None:
    out = tmp_path / "cpu-smoke"
    claim_outputs(smoke(), out)
    written(out)
    note = claim_outputs(smoke(learning_rate=0.001), out, force=True)
    kept = [p for p in tmp_path.iterdir() if p.name != "cpu-smoke"]
    assert len(kept) == 1 and kept[0].name.startswith("cpu-smoke.20")
    assert note is not None and str(kept[0]) in note and CHANGED_LR in note
    assert (kept[0] / "adapter" / "adapter_model.safetensors").read_bytes() == b"weights"
    assert json.loads((kept[0] / LEDGER_FILE).read_text())["run"]["grpo"]["learning_rate"] == 0.002
    assert sorted(p.name for p in out.iterdir()) == [LEDGER_FILE]
    ledger = json.loads((out / LEDGER_FILE).read_text())
    assert ledger["run"]["grpo"]["learning_rate"] == 0.001
    assert ledger["forced"][0]["kept_as"] == kept[0].name
    # a second forced change keeps the second set too: nothing is ever deleted
    written(out)
    claim_outputs(smoke(learning_rate=0.003), out, force=True)
    assert len([p for p in tmp_path.iterdir() if p.name != "cpu-smoke"]) == 2


def test_more_grpo_steps_are_another_config(tmp_path: Path) -> None:
    out = tmp_path / "cpu-smoke"
    claim_outputs(effective_run(smoke(), None), out)
    written(out)
    with pytest.raises(RunChanged, match=r"trl\.grpo_steps \(20 -> 5\)"):
        claim_outputs(effective_run(smoke(), 5), out)


def test_outputs_from_before_the_ledger_count_as_another_config(tmp_path: Path) -> None:
    out = written(tmp_path / "cpu-smoke")
    with pytest.raises(RunChanged, match="outputs of an unknown config"):
        claim_outputs(smoke(), out)


def test_both_paths_name_a_change_in_the_same_words(tmp_path: Path) -> None:
    """One rule: the ART model directory and the TRL outputs refuse the same edit alike."""
    art = tmp_path / "art"
    write_lora_adapter(art / "checkpoints" / "0001", ["q_proj"], rank=8, base_model="tiny")
    run_state.record_run(art, smoke(), "data")
    with pytest.raises(RunChanged) as art_refusal:
        run_state.record_run(art, smoke(learning_rate=0.001), "data")
    trl = tmp_path / "trl"
    claim_outputs(smoke(), trl)
    written(trl)
    with pytest.raises(RunChanged) as trl_refusal:
        claim_outputs(smoke(learning_rate=0.001), trl)
    assert f"changed {CHANGED_LR};" in str(art_refusal.value)
    assert f"changed {CHANGED_LR};" in str(trl_refusal.value)


def test_train_py_refuses_a_changed_run_file_in_one_line(tmp_path: Path) -> None:
    pytest.importorskip("trl")
    run_file = tmp_path / "cpu-smoke.toml"
    run_file.write_text(RUN_FILE, encoding="utf-8")
    claim_outputs(load_run_config(str(run_file)), tmp_path / "outputs" / "cpu-smoke")
    written(tmp_path / "outputs" / "cpu-smoke")
    run_file.write_text(RUN_FILE.replace("learning_rate = 2e-3", "learning_rate = 1e-3"))
    done = subprocess.run(
        [sys.executable, str(REPO / "train.py"), "--run", str(run_file)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode != 0 and "Traceback" not in done.stderr
    lines = [line for line in (done.stdout + done.stderr).splitlines() if line.strip()]
    assert len(lines) == 1 and CHANGED_LR in lines[0] and "--force" in lines[0], lines
    assert sorted(p.name for p in (tmp_path / "outputs").iterdir()) == ["cpu-smoke"]
