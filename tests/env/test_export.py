"""`python -m env.export`: the frozen eval split round-trips through its JSON Lines export.

The export is read back into `Scenario`s; each matches the manifest's frozen hashes, equals the
generator's own scenario, and its reference solution, replayed from the export alone on a
LedgerEnv, earns full marks from the reward and a grounded success from the grader.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from env.episode import record_episode
from env.export import load_export, scenario_row
from env.generation.generator import generate
from env.ledger_env import LedgerEnv
from env.scenario import reveal_truth
from eval.grader import grade_episode
from rewards.reward import RewardConfig, compute_reward
from tests.support.snippets import python_blocks, run_snippet

ROOT = Path(__file__).resolve().parents[2]
MANIFEST = json.loads((ROOT / "env" / "data" / "manifest.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("export")
    done = subprocess.run(
        [sys.executable, "-m", "env.export", "--split", "eval", "--out", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return out


def test_the_export_holds_the_frozen_eval_split_with_the_manifests_hashes(exported):
    rows = [
        json.loads(line) for line in (exported / "data" / "eval.jsonl").read_text().splitlines()
    ]
    frozen = {e["scenario_id"]: e for e in MANIFEST["scenarios"] if e["split"] == "eval"}
    assert [row["scenario_id"] for row in rows] == sorted(frozen)
    for row in rows:
        entry = frozen[row["scenario_id"]]
        assert (row["database_sha256"], row["complaint_sha256"]) == (
            entry["database_sha256"],
            entry["complaint_sha256"],
        )
        assert row["truth"]["label"] == entry["label"]


def test_every_scenario_loads_back_as_generated_and_its_reference_earns_full_marks(exported):
    scenarios = load_export(exported)
    assert len(scenarios) == 100
    for scenario in scenarios:
        generated = generate(scenario.split, scenario.seed)
        assert scenario == generated and reveal_truth(scenario) == reveal_truth(generated)
        truth = reveal_truth(scenario)
        env = LedgerEnv(scenario)
        for step in truth.reference:
            env.call(step.name, json.dumps(step.arguments))
        record = record_episode(env)
        reward = compute_reward(truth, record, RewardConfig())
        assert reward.total == 1.0, scenario.scenario_id
        assert grade_episode(truth, record, scenario.database).grounded_success


def test_the_dataset_card_has_a_hugging_face_yaml_header(exported):
    card = (exported / "README.md").read_text(encoding="utf-8")
    header = card.split("---\n")[1]
    for field in ("license:", "size_categories:", "configs:", "path: data/eval.jsonl"):
        assert field in header
    assert "num_examples: 100" in header
    assert "license: apache-2.0" in header and "License: Apache-2.0" in card


def test_the_cards_loading_snippets_run_as_written_from_the_export_folder(exported):
    """With LedgerGym (back to `Scenario`s) and without it (plain JSON and SQLite)."""
    blocks = python_blocks((exported / "README.md").read_text(encoding="utf-8"))
    assert len(blocks) == 2
    outputs = []
    for code in blocks:
        done = run_snippet(code, cwd=exported)
        assert done.returncode == 0, done.stderr[-2000:]
        outputs.append(done.stdout)
    with_ledgergym, plain = outputs
    assert with_ledgergym.startswith("100 scenarios; eval-100000 starts with:")
    first = generate("eval", 100000)
    assert first.complaint[:80] in with_ledgergym
    assert plain.startswith("100 rows; eval-100000 has ") and plain.rstrip().endswith(" invoices")


def test_a_split_the_manifest_does_not_freeze_is_one_line_and_exit_status_2(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "env.export", "--split", "train", "--out", str(tmp_path)],
        cwd=ROOT, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 2 and done.stderr.count("\n") == 1
    assert "split 'train' is not frozen" in done.stderr and not any(tmp_path.iterdir())


def test_a_tampered_database_is_refused_when_loaded(tmp_path):
    row = scenario_row(generate("eval", 100000))
    row["database"] = row["database"][:-8] + "AAAAAAA="
    (tmp_path / "x.jsonl").write_text(json.dumps(row) + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match="does not match its sha256"):
        load_export(tmp_path / "x.jsonl")
