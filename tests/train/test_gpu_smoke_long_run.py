"""The GPU smoke's long-run phases end to end on CPU: training.art.gpu_smoke_long_device run with
the backend double (tests/train/backend_double.py) for LocalBackend and a scripted
OpenAI-compatible server on 127.0.0.1 for vLLM, through the device module's own `_phase`
(deadlines, record lines) and `_add_or_stop`. The only other stand-in is the GPU memory
sampler (no nvidia-smi here). What cannot be checked here is what only a GPU shows: memory,
speed, Unsloth's and vLLM's real behaviour.
"""

from __future__ import annotations

import asyncio
import time

import art
import pytest

from env.generation.generator import generate
from tests.support.scripted_server import ScriptedOpenAIServer
from tests.train.backend_double import FakeBackendForTests
from tests.train.loop_fixtures import ReferenceOrQuit, small_run
from tests.train.toy_tokenizer import build_toy_tokenizer
from training.art import gpu_smoke_long_device, run_state
from training.art.backends import build_model, server_config
from training.art.gpu_smoke_checks import SmokeReport
from training.art.gpu_smoke_device import PhaseFailed, _add_or_stop, _phase
from training.art.gpu_smoke_phases import CONCURRENT_ROLLOUTS
from training.art.validation import validation_scenarios
from training.data_order import plan_data

LONG_PHASES = ["long-row", "equal-rewards", "resume", "validation", "pruning", "concurrency"]


class NoGpuMemoryForTests:
    """Stands in for GpuMemorySampler (nvidia-smi) at the GPU boundary: measures nothing."""

    window_peak_mib = None

    def start_window(self) -> None:
        pass


def scripted(run):
    data = plan_data(run)
    seeds = [seed for phase in data.phases for seed in phase.seeds][: CONCURRENT_ROLLOUTS // 8]
    scenarios = [generate(data.split, seed) for seed in seeds] + validation_scenarios(run)
    return ReferenceOrQuit(scenarios, varied=set())


@pytest.fixture(scope="module")
def long_run(tmp_path_factory):
    run = small_run(
        tmp_path_factory.mktemp("smoke") / "art",
        grpo={"max_seq_length": 2048},
        rollout={"max_turns": 3},
    )
    report = SmokeReport()
    backends: list[art.Backend] = []
    monkeypatch = pytest.MonkeyPatch()
    with ScriptedOpenAIServer(scripted(run)) as server:

        def restarted_backend(_run):  # what make_backend gives after the "kill": a new double
            return FakeBackendForTests(path=run.backend.path, inference_base_url=server.base_url)

        monkeypatch.setattr(gpu_smoke_long_device, "make_backend", restarted_backend)

        async def smoke() -> None:
            backend = restarted_backend(run)
            backends.append(backend)
            model = build_model(run)
            await model.register(backend, _openai_client_config=server_config(run))
            trajectory = art.Trajectory(
                messages_and_choices=[{"role": "user", "content": "I was charged twice."}],
                reward=1.0,
            )
            await gpu_smoke_long_device.long_run_phases(
                run,
                report,
                time.monotonic() + 600,
                backend,
                model,
                build_toy_tokenizer(),
                None,
                trajectory,
                _phase,
                _add_or_stop,
                NoGpuMemoryForTests(),
                backends,
            )

        try:
            asyncio.run(smoke())
        except PhaseFailed:
            pass
        finally:
            monkeypatch.undo()
    return run, report, backends


def test_every_long_run_phase_passes_in_order(long_run):
    _, report, _ = long_run
    assert [check.name for check in report.checks] == LONG_PHASES, report.checks
    assert all(check.status == "pass" for check in report.checks), report.checks


def test_each_phase_has_its_line_in_the_record(long_run):
    _, report, _ = long_run
    for name in LONG_PHASES:
        assert report.measured[f"phase_s/{name}"] >= 0
    assert report.measured["concurrent_rollouts"] == CONCURRENT_ROLLOUTS
    assert report.measured["long_row_tokens"] > 0.85 * 2048
    assert report.measured["long_row_train_s"] >= 0


def test_the_resume_phase_restarted_on_a_new_backend_and_repaired_the_cut_files(long_run):
    run, report, backends = long_run
    assert len(backends) == 2 and backends[0].closed
    directory = run_state.model_dir(run)
    assert (directory / "state.json.corrupt-1").is_file()
    assert (directory / "history.jsonl.corrupt-1").is_file()
    resume = next(check for check in report.checks if check.name == "resume")
    assert "next batch unchanged" in resume.detail and "2 repair line(s)" in resume.detail


def test_pruning_left_the_latest_checkpoint_only(long_run):
    run, _, _ = long_run
    steps = run_state.checkpoint_steps(run_state.model_dir(run))
    assert steps == [2]  # long-row made 1, equal-rewards 2; validated at 2: latest and best
