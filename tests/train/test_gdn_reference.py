"""training.art.gdn_reference and gdn_check on CPU: the comparison the GPU check relies on.

transformers' own pure-torch chunked Gated-DeltaNet (its fallback when fla is absent) and our
fp32 token-by-token reference must agree at a small shape; a gradient bent the way a
miscompiled tile bends it must fail the comparison; the command exits 2 in one line here.
"""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from training.art.gdn_reference import (
    BF16_TOLERANCES,
    GRADIENTS,
    QWEN35,
    TOLERANCES,
    GdnShape,
    chunk_rounded,
    compare,
    error_ratio,
    make_inputs,
    recurrent_reference,
    tolerances_for,
)

REPO = Path(__file__).resolve().parents[2]
SMALL = GdnShape(batch=2, tokens=150, key_heads=2, value_heads=4, head_dim=16)  # 3 chunks, a tail


def transformers_chunked(q, k, v, g, beta):
    modeling = pytest.importorskip("transformers.models.qwen3_5.modeling_qwen3_5")
    if importlib_spec("fla"):
        pytest.skip("fla is installed: transformers would dispatch to it")
    out, _ = modeling.torch_chunk_gated_delta_rule(
        q, k, v, g=g, beta=beta, chunk_size=64, use_qk_l2norm_in_kernel=True
    )
    return out


def importlib_spec(name: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(name) is not None


def test_transformers_chunked_form_matches_the_recurrent_reference():
    inputs = make_inputs(SMALL, dtype=torch.float32, device="cpu", seed=3)
    result = compare(transformers_chunked, recurrent_reference, inputs)
    assert set(result.errors) == {"o", *GRADIENTS}
    assert result.failed == []
    assert max(result.errors.values()) < 1e-4, result.errors  # both fp32: rounding only


@pytest.mark.parametrize(
    ("dtype", "tolerances"), [(torch.float16, TOLERANCES), (torch.bfloat16, BF16_TOLERANCES)]
)
def test_a_correct_kernels_rounding_stays_inside_the_tolerances_of_its_dtype(dtype, tolerances):
    """The CPU proxy of a chunked kernel in `dtype` (states rounded at each chunk boundary)."""
    inputs = make_inputs(SMALL, dtype=dtype, device="cpu", seed=4)

    result = compare(chunk_rounded(dtype), recurrent_reference, inputs)

    assert result.tolerances == tolerances and result.failed == [], result.errors
    assert result.errors["dk"] > 0  # the rounding is there, and it is measured
    assert result.errors["dk"] < 0.9 * tolerances["dk"]


def test_bf16_rounding_would_crowd_fp16_tolerances_which_is_why_bf16_gets_its_own():
    inputs = make_inputs(SMALL, dtype=torch.bfloat16, device="cpu", seed=4)
    result = compare(chunk_rounded(torch.bfloat16), recurrent_reference, inputs)
    fp16 = compare(chunk_rounded(torch.float16), recurrent_reference, {
        name: value.to(torch.float16) if value.dtype == torch.bfloat16 else value
        for name, value in inputs.items()
    })  # fmt: skip
    assert result.errors["dk"] > 2 * fp16.errors["dk"]  # 3 mantissa bits fewer
    assert BF16_TOLERANCES["dk"] == 4 * TOLERANCES["dk"]


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_an_order_one_key_gradient_error_fails_at_either_precision(dtype):
    """fla #640 corrupts dk and dg by order 1: the looser bf16 tolerances still catch it."""
    inputs = make_inputs(SMALL, dtype=dtype, device="cpu", seed=6)
    rounded = chunk_rounded(dtype)

    def bent(q, k, v, g, beta):
        return rounded(q, _BentKeyGradient.apply(k), v, g, beta)

    result = compare(bent, recurrent_reference, inputs)
    assert "dk" in result.failed and result.errors["dk"] > tolerances_for(dtype)["dk"]


class _BentKeyGradient(torch.autograd.Function):
    """Identity forward; backward scales the gradient of the second half of the heads' keys."""

    @staticmethod
    def forward(ctx, k):
        return k.view_as(k)

    @staticmethod
    def backward(ctx, grad):
        bent = grad.clone()
        bent[..., grad.shape[-1] // 2 :] *= 1.3  # a wrong tile: half the key dimension
        return bent


def test_a_corrupted_key_gradient_fails_the_comparison():
    inputs = make_inputs(SMALL, dtype=torch.float32, device="cpu", seed=5)

    def bent(q, k, v, g, beta):
        return recurrent_reference(q, _BentKeyGradient.apply(k), v, g, beta)

    result = compare(bent, recurrent_reference, inputs)
    assert result.failed == ["dk"], result.errors
    assert result.errors["o"] < 1e-6 and result.errors["dk"] > TOLERANCES["dk"]
    assert any(line.endswith("FAIL") and "dk" in line for line in result.lines())


def test_error_ratio_is_rms_of_the_difference_over_rms_of_the_reference():
    want = torch.tensor([3.0, 4.0])
    assert error_ratio(want, want) == 0
    assert error_ratio(torch.tensor([3.0, 3.0]), want) == pytest.approx(
        math.sqrt(0.5) / math.sqrt(12.5)
    )
    assert error_ratio(torch.tensor([float("nan"), 4.0]), want) == math.inf


def test_the_check_runs_at_qwen35_shapes():
    assert (QWEN35.tokens, QWEN35.key_heads, QWEN35.value_heads, QWEN35.head_dim) == (
        2048,
        16,
        32,
        128,
    )
    config = pytest.importorskip("transformers.models.qwen3_5.configuration_qwen3_5")
    defaults = config.Qwen3_5TextConfig()
    assert (defaults.linear_num_key_heads, defaults.linear_num_value_heads) == (16, 32)
    assert defaults.linear_key_head_dim == defaults.linear_value_head_dim == QWEN35.head_dim
    with pytest.raises(ValueError, match="not a Gated-DeltaNet shape"):
        GdnShape(batch=1, tokens=8, key_heads=3, value_heads=4, head_dim=8)


def test_on_a_cpu_machine_the_check_exits_2_with_one_line():
    done = subprocess.run(
        [sys.executable, "-m", "training.art.gdn_check"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and done.stdout == ""
    assert done.stderr.startswith("error: the GDN check needs")
