"""The GPU smoke's kernel and precision checks and the figures it leaves for `--check` (CPU).

transformers only takes its Gated-DeltaNet fast path with CUDA, so the failing case uses a
stand-in modeling module (the GPU-boundary test double `GdnModelingStandIn`) that logs what
transformers 5.2's qwen3_5 / qwen3_next modeling code logs; the probe itself is the real one.
"""

from __future__ import annotations

import sys
import types

import pytest

from training.art import run_state
from training.art.gpu_smoke import smoke_run
from training.art.gpu_smoke_checks import Check, SmokeReport, render_report, smoke_record
from training.art.smoke_environment import (
    FAST_PATH_MESSAGE,
    gdn_modeling_module,
    kernel_check,
    precision_check,
    probe_gdn_fast_path,
)
from training.runs import load_run_config

# transformers 5.2.0, models/qwen3_5/modeling_qwen3_5.py (Qwen3_5GatedDeltaNet.__init__)
TRANSFORMERS_52_MESSAGE = (
    "The fast path is not available because one of the required library is not installed. "
    "Falling back to torch implementation. To install follow "
    "https://github.com/fla-org/flash-linear-attention#installation and "
    "https://github.com/Dao-AILab/causal-conv1d"
)


def gdn_modeling_stand_in(fast: bool) -> types.ModuleType:
    """GPU-boundary test double: a modeling module whose Gated-DeltaNet layer logs as 5.2's
    does when the kernels (which need CUDA) are missing."""
    import logging

    module = types.ModuleType("gdn_modeling_stand_in")
    logger = logging.getLogger("transformers.models.gdn_modeling_stand_in")

    class GdnModelingStandInGatedDeltaNet:
        def __init__(self, config: object, layer_idx: int) -> None:
            if not fast:
                logger.warning(TRANSFORMERS_52_MESSAGE)

    module.GdnModelingStandInGatedDeltaNet = GdnModelingStandInGatedDeltaNet  # type: ignore[attr-defined]
    module.is_fast_path_available = fast  # type: ignore[attr-defined]
    return module


def test_the_message_is_the_one_transformers_logs():
    assert FAST_PATH_MESSAGE in TRANSFORMERS_52_MESSAGE.lower()


@pytest.mark.parametrize(
    ("base_model", "module"),
    [
        ("Qwen/Qwen3.5-4B", "transformers.models.qwen3_5.modeling_qwen3_5"),
        ("unsloth/Qwen3_5-4B", "transformers.models.qwen3_5.modeling_qwen3_5"),
        ("Qwen/Qwen3-Next-80B-A3B-Instruct", "transformers.models.qwen3_next.modeling_qwen3_next"),
        ("Qwen/Qwen3-4B", None),
    ],
)
def test_the_models_with_gated_deltanet_layers_are_known(base_model, module):
    assert gdn_modeling_module(base_model) == module


def test_the_slow_path_fails_the_smoke_in_one_line(monkeypatch):
    monkeypatch.setitem(sys.modules, "gdn_modeling_stand_in", gdn_modeling_stand_in(fast=False))
    fast, messages = probe_gdn_fast_path("gdn_modeling_stand_in")
    assert fast is False and messages == [TRANSFORMERS_52_MESSAGE]
    check = kernel_check(fast, messages, "fla and causal_conv1d not importable")
    assert check.status == "fail" and "\n" not in check.detail
    assert check.detail.startswith(
        "transformers reports the Gated-DeltaNet slow path (The fast path is not available "
        "because one of the required library is not installed)"
    )
    assert "flash-linear-attention and causal-conv1d" in check.detail
    report = SmokeReport()
    report.checks.append(check)
    assert render_report(report, "smoke").endswith("FAILED: kernels")


def test_the_fast_path_passes_and_silence_is_only_a_note(monkeypatch):
    monkeypatch.setitem(sys.modules, "gdn_modeling_stand_in", gdn_modeling_stand_in(fast=True))
    assert kernel_check(*probe_gdn_fast_path("gdn_modeling_stand_in"), "ok").status == "pass"
    assert kernel_check(None, [], "ok").status == "note"  # a transformers without the flag
    assert kernel_check(None, [TRANSFORMERS_52_MESSAGE], "x").status == "fail"


@pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::FutureWarning")
def test_the_probe_runs_against_the_installed_transformers():
    pytest.importorskip("torch")
    module = gdn_modeling_module("Qwen/Qwen3.5-4B")
    assert module is not None
    pytest.importorskip(module)
    fast, messages = probe_gdn_fast_path(module)
    assert fast is not True  # no CUDA here: never the fast path
    expected = "fail" if fast is False or messages else "note"
    assert kernel_check(fast, messages, "here").status == expected


@pytest.mark.parametrize(
    ("load_in_4bit", "trained_on", "status"),
    [
        (False, "unsloth/Qwen3.5-4B", "pass"),
        (False, "unsloth/qwen3.5-4b-unsloth-bnb-4bit", "fail"),
        (True, "unsloth/qwen3.5-4b-unsloth-bnb-4bit", "pass"),
        (True, "Qwen/Qwen3.5-4B", "fail"),
        (False, None, "note"),
    ],
)
def test_the_precision_check_compares_the_trained_base_with_the_run(
    load_in_4bit, trained_on, status
):
    check = precision_check(load_in_4bit, trained_on)
    assert check.status == status and check.name == "precision"
    assert f"load_in_4bit = {str(load_in_4bit).lower()}" in check.detail


def test_the_record_carries_what_check_needs_and_lands_beside_the_smoke_model(tmp_path):
    run = smoke_run(load_run_config("binary-01"), None, tmp_path / ".art-smoke")
    report = SmokeReport(checks=[Check("train", "pass", "ok")])
    report.measured.update(rollout_s=40.0, train_s=20.0, rollouts=2, peak_gpu_mib=61000)
    record = smoke_record(run, report)
    assert record["passed"] and record["base_model"] == "Qwen/Qwen3.5-4B"
    assert record["load_in_4bit"] is False and record["checks"] == {"train": "pass"}
    path = run_state.write_smoke_record(run_state.model_dir(run), record)
    origin = load_run_config("binary-01")
    assert path.parent == run_state.smoke_dir(origin, str(tmp_path / ".art-smoke"))
    assert run_state.read_smoke_record(path.parent) == record


def test_the_gdn_phase_reads_the_gradient_checks_json_line():
    import json

    from training.art.gpu_smoke_checks import gdn_gradient_check

    line = {
        "errors": {"o": 1e-3, "dq": 2e-3, "dk": 0.4, "dg": 0.9},
        "failed": ["dk", "dg"],
        "versions": {"fla-core": "0.4.1"},
    }
    bad = gdn_gradient_check(1, "compiling...\n" + json.dumps(line) + "\n", "")
    assert bad.status == "fail" and "fla-core 0.4.1" in bad.detail and "dk, dg past" in bad.detail
    line |= {"errors": {"o": 1e-3, "dk": 3e-3}, "failed": [], "versions": {"fla-core": "0.4.2"}}
    good = gdn_gradient_check(0, json.dumps(line), "")
    assert good.status == "pass" and "dk 3.0e-03" in good.detail
    cannot = gdn_gradient_check(2, "", "warning\nerror: the GDN check needs fla-core\n")
    assert cannot.status == "fail" and cannot.detail.endswith("error: the GDN check needs fla-core")
    crashed = gdn_gradient_check(-9, "", "Traceback...\nRuntimeError: CUDA out of memory\n")
    assert crashed.status == "fail" and "ended with -9: RuntimeError" in crashed.detail
