"""train.py as a command: --check and --export run on a CPU; training names what is missing."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.train.adapter_fixtures import write_lora_adapter
from training.art.budget import ASSUMED
from training.art.export import export_checkpoint, model_card
from training.art.plan import estimate, level_sizes
from training.art.run_state import STEP_SECONDS_KEY, model_dir
from training.data_order import plan_data
from training.runs import load_run_config

REPO = Path(__file__).resolve().parents[2]


def train_py(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(REPO / "train.py"), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )


def fake_checkpoint(root: Path, run_name: str, step: int) -> Path:
    """What LocalBackend leaves: checkpoints/NNNN with a PEFT adapter, and history.jsonl."""
    directory = root / ".art" / "ledgergym" / "models" / run_name
    checkpoint = directory / "checkpoints" / f"{step:04d}"
    targets = load_run_config(run_name).lora.target_modules
    write_lora_adapter(checkpoint, targets, rank=16, base_model="unsloth/qwen3.5-4b")
    rows = [
        {"step": 0, "val/pass1": 0.12, "val/reward": 0.31},
        {"step": step, "train/reward": 0.5, STEP_SECONDS_KEY: 150.0},
        {"step": step, "val/pass1": 0.47, "val/reward": 0.66},
    ]
    (directory / "history.jsonl").write_text("\n".join(json.dumps(row) for row in rows) + "\n")
    return directory


def test_check_prints_the_plan_and_budget_of_binary_01_without_a_gpu(tmp_path):
    done = train_py("--run", "binary-01", "--check", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "Qwen/Qwen3.5-4B" in out
    assert "cold start  teacher auditor (tools only) on 600 train scenarios" in out
    assert "balanced by root cause and level" in out and "SFT 2 epoch(s) at lr 0.0001" in out
    assert "probe       96 stratified train scenarios x k=8 = 768 rollouts" in out
    assert "each step gathers 12 groups x 8 = 96 rollouts and trains the first 8" in out
    assert "curriculum  L1: GRPO steps 1-50" in out and "curriculum  L3: GRPO steps 101-150" in out
    assert "at GRPO steps 0, 25, ..., 150 (7 passes)" in out
    assert "ASSUMED" in out and "GPU hours" in out
    assert "within the $300 budget" in out and "at $4.3/h" in out
    assert "the L3 phase (GRPO steps 101-150)" in out and ": inside it" in out
    assert "no checkpoints yet" in out


def test_check_warns_when_the_price_passes_the_budget(tmp_path):
    done = train_py(
        "--run", "binary-01", "--check", "--usd-per-hour", "40", "--budget-usd", "100",
        cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "WARNING: over the $100 budget (--budget-usd)" in done.stdout


def test_check_imports_neither_torch_nor_art():
    code = (
        "import sys, train; rc = train.main(['--run', 'binary-01', '--check']); "
        "heavy = [m for m in ('torch', 'art', 'transformers') if m in sys.modules]; "
        "print('HEAVY', heavy, rc)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert "HEAVY [] 0" in done.stdout, done.stderr


@pytest.mark.skipif(
    importlib.util.find_spec("unsloth") is not None, reason="this machine has the [train] extra"
)
def test_training_without_the_gpu_stack_ends_in_one_line_naming_the_fix(tmp_path):
    done = train_py("--run", "binary-01", cwd=tmp_path)
    assert done.returncode == 2
    lines = [line for line in (done.stdout + done.stderr).splitlines() if line.strip()]
    assert len(lines) == 1, lines
    assert "pip install -e '.[train]'" in lines[0] and "CUDA GPU" in lines[0]
    assert "Traceback" not in done.stderr


def test_the_run_may_be_named_alone_as_torchrun_needs_and_only_once(tmp_path):
    alone = train_py("cpu-smoke", "--check", cwd=tmp_path)  # torchrun takes --run for itself
    assert alone.returncode == 0 and "run cpu-smoke (trainer trl)" in alone.stdout, alone.stderr
    for args in (("--check",), ("cpu-smoke", "--run", "cpu-smoke", "--check")):
        done = train_py(*args, cwd=tmp_path)
        assert done.returncode == 2 and "Traceback" not in done.stderr
        assert done.stderr.count("\n") == 1 and "name one run" in done.stderr


def test_an_unknown_run_is_one_line_naming_the_known_ones(tmp_path):
    done = train_py("--run", "no-such-run", "--check", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "binary-01" in done.stderr


def test_a_run_file_that_is_not_utf8_is_one_line(tmp_path):
    (tmp_path / "latin1.toml").write_bytes('description = "facturé"\n'.encode("latin-1"))
    done = train_py("--run", "latin1.toml", "--check", cwd=tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert (
        done.stderr == "error: latin1.toml: not UTF-8 text, at byte 21 (0xe9); save it as UTF-8\n"
    )


def test_export_onto_an_existing_file_is_one_line(tmp_path):
    fake_checkpoint(tmp_path, "binary-01", 2)
    (tmp_path / "taken").write_text("x")
    done = train_py("--run", "binary-01", "--export", "taken", cwd=tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr == "error: cannot export to taken: taken: File exists\n"


def test_export_copies_the_adapter_and_writes_a_model_card(tmp_path):
    fake_checkpoint(tmp_path, "binary-01", 120)
    done = train_py("--run", "binary-01", "--export", "exported", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    out = tmp_path / "exported"
    assert sorted(p.name for p in out.iterdir()) == [
        "README.md",
        "adapter_config.json",
        "adapter_model.safetensors",
    ]
    config = json.loads((out / "adapter_config.json").read_text())
    assert config["base_model_name_or_path"] == "Qwen/Qwen3.5-4B"
    card = (out / "README.md").read_text()
    assert "checkpoint 0120" in card and "binary" in card
    assert "| 120 | 0.470 | 0.660 |" in card and "| 0 | 0.120 | 0.310 |" in card
    assert "--tool-call-parser qwen3_coder" in card
    assert "unsloth/qwen3.5-4b" in card  # what it was trained on is still said


def test_export_of_a_step_that_does_not_exist_names_the_ones_that_do(tmp_path):
    fake_checkpoint(tmp_path, "binary-01", 7)
    done = train_py("--run", "binary-01", "--export", "out", "--step", "9", cwd=tmp_path)
    assert done.returncode == 2
    assert "no checkpoint 0009" in done.stderr and "[7]" in done.stderr


def test_export_refuses_a_checkpoint_without_adapter_weights(tmp_path, monkeypatch):
    directory = fake_checkpoint(tmp_path, "binary-01", 3)
    (directory / "checkpoints" / "0003" / "adapter_model.safetensors").unlink()
    monkeypatch.chdir(tmp_path)
    from training.art.export import ExportError

    with pytest.raises(ExportError, match="holds no PEFT adapter"):
        export_checkpoint(load_run_config("binary-01"), tmp_path / "out")


def test_the_model_card_says_when_no_validation_was_logged():
    card = model_card(load_run_config("shaped-01"), 5, history=[])
    assert "No validation was logged" in card
    assert "shaped: root_cause 0.35" in card


def test_the_budget_uses_the_measured_step_time_once_the_run_has_one(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    run = load_run_config("binary-01")
    data = plan_data(run)
    sizes = level_sizes(run, data)
    assumed = estimate(run, data, sizes)
    assert assumed.rates == ASSUMED and assumed.measured_step_s is None
    fake_checkpoint(tmp_path, "binary-01", 2)
    assert model_dir(run).is_dir()
    measured = estimate(run, data, sizes)
    assert measured.measured_step_s == 150.0
    assert measured.grpo_s == 150 * 150.0


def test_the_model_card_serves_with_what_the_saved_template_decides(tmp_path):
    from training.art.export import checkpoint_template

    run = load_run_config("binary-01")
    naming = "{% if preserve_thinking %}{% endif %}{{ messages }}"
    card = model_card(run, 5, history=[], chat_template=naming)
    assert '\'{"enable_thinking": false, "preserve_thinking": false}\'' in card
    assert "The chat template names `preserve_thinking`" in card
    plain = model_card(run, 5, history=[], chat_template="{{ messages }}")
    assert "'{\"enable_thinking\": false}'" in plain and "does not name" in plain
    assert "No chat template was saved" in model_card(run, 5, history=[])
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({"chat_template": naming}))
    assert checkpoint_template(tmp_path) == naming
    (tmp_path / "chat_template.jinja").write_text("{{ messages }}")
    assert checkpoint_template(tmp_path) == "{{ messages }}"  # the file wins, as transformers'
    assert checkpoint_template(tmp_path / "none") is None


@pytest.mark.parametrize(
    ("text", "hint"),
    [
        ("[grpo]\nlearning_rat = 1e-3\n", "grpo.learning_rat: Extra inputs are not permitted "
         "(not a key here; did you mean 'learning_rate'?)"),
        ("learning_rate = 1e-3\n", "(not a key here; it belongs under [grpo])"),
        ("[grpo]\nzzz = 1\n", "grpo.zzz: Extra inputs are not permitted (not a key here)"),
    ],
)  # fmt: skip
def test_a_typo_d_run_key_is_one_line_naming_the_closest_key(tmp_path, text, hint):
    (tmp_path / "typo.toml").write_text('trainer = "trl"\n' + text + "[trl]\n")
    done = train_py("--run", "typo.toml", "--check", cwd=tmp_path)
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert hint in done.stderr


def test_a_typo_d_run_name_gets_the_closest_run(tmp_path):
    done = train_py("--run", "cpu-smok", "--check", cwd=tmp_path)
    assert done.returncode == 2 and "did you mean 'cpu-smoke'?" in done.stderr
