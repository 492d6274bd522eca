"""The Gated-DeltaNet gradient check's pure-torch side: inputs, an fp32 reference, the error metric.

`python -m training.art.gdn_check` runs fla's Triton `chunk_gated_delta_rule` against
`recurrent_reference` here; everything in this module also runs on CPU, where
tests/train/test_gdn_reference.py checks the reference against transformers' own chunked torch
form. The metric is fla's own test metric (RMS of the difference over RMS of the reference), so
the tolerances below are the ones fla's test suite holds this op to in half precision.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F

GRADIENTS = ("dq", "dk", "dv", "dg", "dbeta")
# fla's tests/ops/test_gdn.py `test_chunk` (fp16, T up to 2,048, head size up to 128): o 0.005,
# dq/dk/dv 0.008, dbeta/dg 0.02, with this metric against an fp32-accumulating naive recurrence.
# A correct kernel stays well inside them; a miscompiled backward tile (fla #640) does not.
# They are fp16 tolerances: the check runs fla in fp16 (gdn_check's default).
TOLERANCES = {"o": 0.005, "dq": 0.008, "dk": 0.008, "dv": 0.008, "dg": 0.02, "dbeta": 0.02}
# bf16 keeps 3 fewer mantissa bits than fp16 (8 against 11: a rounding step 8x larger), and fla
# stores its per-chunk states in the input dtype, so a correct bf16 kernel runs close to the fp16
# tolerances (a CPU proxy of that rounding, `chunk_rounded`, uses most of dk's). For bf16 the
# check allows 4x fla's fp16 figures: still 10x and more below fla #640's errors, which are of
# order 1 (dk and dg wrong, not noisy), so the miscompiled tile still fails.
BF16_TOLERANCES = {name: 4 * value for name, value in TOLERANCES.items()}


def tolerances_for(dtype: torch.dtype) -> dict[str, float]:
    return BF16_TOLERANCES if dtype == torch.bfloat16 else TOLERANCES


LEAVES = ("q", "k", "v", "g", "beta")
Kernel = Callable[..., torch.Tensor]  # (q, k, v, g, beta) at value heads -> o [B, T, Hv, Dv]


@dataclass(frozen=True)
class GdnShape:
    batch: int
    tokens: int
    key_heads: int
    value_heads: int
    head_dim: int

    def __post_init__(self) -> None:
        if min(vars(self).values()) < 1 or self.value_heads % self.key_heads:
            raise ValueError(f"not a Gated-DeltaNet shape: {self}")


# Qwen3.5's linear-attention layers: transformers' Qwen3_5TextConfig defaults
# (linear_num_key_heads 16, linear_num_value_heads 32, linear_key/value_head_dim 128); T = 2,048
QWEN35 = GdnShape(batch=1, tokens=2048, key_heads=16, value_heads=32, head_dim=128)


def make_inputs(
    shape: GdnShape, *, dtype: torch.dtype, device: str | torch.device, seed: int = 0
) -> dict[str, torch.Tensor]:
    """Leaves as Qwen3.5's layer passes them (q, k at key heads; g in fp32) plus an upstream grad.

    Values follow fla's own test: uniform q/k/v (normalised in the kernel), beta = sigmoid,
    g = logsigmoid(uniform) in [-0.69, -0.31], a slow decay that carries state across chunks.
    """
    generator = torch.Generator().manual_seed(seed)
    b, t, hk, hv, d = (
        shape.batch,
        shape.tokens,
        shape.key_heads,
        shape.value_heads,
        shape.head_dim,
    )

    def draw(*size: int) -> torch.Tensor:
        return torch.rand(*size, generator=generator, dtype=torch.float32)

    values = {
        "q": draw(b, t, hk, d).to(dtype),
        "k": draw(b, t, hk, d).to(dtype),
        "v": draw(b, t, hv, d).to(dtype),
        "g": F.logsigmoid(draw(b, t, hv)),  # fp32, as transformers computes it
        "beta": draw(b, t, hv).sigmoid().to(dtype),
        "do": torch.randn(b, t, hv, d, generator=generator).to(dtype),
    }
    return {name: value.to(device) for name, value in values.items()}


def expand_heads(x: torch.Tensor, value_heads: int) -> torch.Tensor:
    """Each key head serves value_heads / key_heads consecutive value heads (dim 2)."""
    return x.repeat_interleave(value_heads // x.shape[2], dim=2)


def recurrent_reference(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, g: torch.Tensor, beta: torch.Tensor
) -> torch.Tensor:
    """The gated delta rule token by token in fp32, q and k L2-normalised, q scaled by 1/sqrt(d).

    State S [B, H, Dk, Dv]: S <- exp(g_t) S; S <- S + beta_t k_t (v_t - k_t S); o_t = q_t S.
    All tensors at value heads: [B, T, H, D] (g, beta: [B, T, H]).
    """
    return _recurrence(q, k, v, g, beta)


def chunk_rounded(dtype: torch.dtype, chunk: int = 64) -> Kernel:
    """A CPU proxy of a chunked kernel's rounding in `dtype`: the recurrence in fp32, but the
    state rounded to `dtype` at every chunk boundary (fla keeps per-chunk states in the input
    dtype) and the output rounded to it. Differentiable; used to size what a correct kernel's
    error looks like at a precision, never as the reference."""

    def kernel(
        q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, g: torch.Tensor, beta: torch.Tensor
    ) -> torch.Tensor:
        out = _recurrence(q, k, v, g, beta, round_to=dtype, chunk=chunk)
        return _round(out, dtype).to(q.dtype)

    return kernel


def _recurrence(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    g: torch.Tensor,
    beta: torch.Tensor,
    *,
    round_to: torch.dtype | None = None,
    chunk: int = 64,
) -> torch.Tensor:
    """`recurrent_reference`'s maths; with `round_to`, the state rounded every `chunk` tokens."""
    q, k, v, g, beta = (x.float() for x in (q, k, v, g, beta))
    q = _l2norm(q) / math.sqrt(q.shape[-1])
    k = _l2norm(k)
    batch, tokens, heads, dk = k.shape
    state = q.new_zeros(batch, heads, dk, v.shape[-1])
    out = []
    for t in range(tokens):
        if round_to is not None and t % chunk == 0:
            state = _round(state, round_to)
        state = state * g[:, t].exp()[..., None, None]
        k_t = k[:, t]
        error = v[:, t] - torch.einsum("bhk,bhkv->bhv", k_t, state)
        state = state + torch.einsum("bhk,bhv->bhkv", k_t, beta[:, t, :, None] * error)
        out.append(torch.einsum("bhk,bhkv->bhv", q[:, t], state))
    return torch.stack(out, dim=1)


class _RoundTo(torch.autograd.Function):
    """Rounds to a dtype in the forward and the gradient in the backward, as a kernel
    holding the tensor in that dtype does in both directions."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
        ctx.dtype = dtype
        return x.to(dtype).to(x.dtype)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, None]:
        return grad.to(ctx.dtype).to(grad.dtype), None


def _round(x: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    return _RoundTo.apply(x, dtype)


def _l2norm(x: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    return x * torch.rsqrt((x * x).sum(dim=-1, keepdim=True) + eps)


def output_and_gradients(
    kernel: Kernel, inputs: dict[str, torch.Tensor], *, upcast: bool = False
) -> dict[str, torch.Tensor]:
    """o and the gradient of sum(o * do) for each leaf; `upcast` runs on fp32 copies."""
    leaves = {
        name: (inputs[name].float() if upcast else inputs[name]).detach().clone().requires_grad_()
        for name in LEAVES
    }
    value_heads = inputs["v"].shape[2]
    q, k = (expand_heads(leaves[name], value_heads) for name in ("q", "k"))
    out = kernel(q, k, leaves["v"], leaves["g"], leaves["beta"])
    out.backward(inputs["do"].to(out.dtype))
    found = {"o": out.detach().float()}
    for name in LEAVES:
        grad = leaves[name].grad
        if grad is None:
            raise RuntimeError(f"the kernel gave no gradient for {name}")
        found["d" + name] = grad.detach().float()
    return found


def error_ratio(got: torch.Tensor, want: torch.Tensor) -> float:
    """RMS(got - want) / RMS(want), in fp64; NaN or Inf anywhere gives inf."""
    got, want = got.double(), want.double()
    if not bool(torch.isfinite(got).all()):
        return math.inf
    base = want.square().mean().sqrt().item()
    return (got - want).square().mean().sqrt().item() / (base + 1e-12)


@dataclass(frozen=True)
class GdnComparison:
    errors: dict[str, float]  # "o" and each of GRADIENTS
    tolerances: dict[str, float]

    @property
    def failed(self) -> list[str]:
        return [name for name, error in self.errors.items() if not error <= self.tolerances[name]]

    def lines(self) -> list[str]:
        return [
            f"  {name:<6} {error:.2e}  (tolerance {self.tolerances[name]:g})"
            + ("  FAIL" if name in self.failed else "")
            for name, error in self.errors.items()
        ]

    def as_json(self) -> dict[str, Any]:
        return {"errors": self.errors, "failed": self.failed}


def compare(
    candidate: Kernel,
    reference: Kernel,
    inputs: dict[str, torch.Tensor],
    tolerances: dict[str, float] | None = None,
) -> GdnComparison:
    """The candidate on the inputs as given against the reference on fp32 copies of them;
    the tolerances of the inputs' dtype unless given (`tolerances_for`)."""
    tolerances = tolerances or tolerances_for(inputs["q"].dtype)
    got = output_and_gradients(candidate, inputs)
    want = output_and_gradients(reference, inputs, upcast=True)
    errors = {name: error_ratio(got[name], want[name]) for name in ("o", *GRADIENTS)}
    return GdnComparison(errors, dict(tolerances))
