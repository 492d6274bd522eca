"""The GPU smoke's phases: each with its own deadline and its own line in the record, plus the
pure parts of the long-run phases (a synthetic long episode, the verdicts) tested on CPU.

A phase's deadline is the sooner of its own budget and the smoke's --timeout-s. A re-run reads
the previous record first and skips `gdn` when it passed with the same torch, Triton and
fla-core; every other phase runs again (the smoke's model is trained from scratch each time).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, MutableMapping, Sequence
from dataclasses import dataclass
from typing import Any

from training.art.gpu_smoke_checks import Check


@dataclass(frozen=True)
class Phase:
    name: str
    budget_s: float  # this phase's own deadline (the first run's register includes the builds)
    holds: str  # what must hold, for --help and docs/gpu.md


PHASES = (
    Phase("kernels", 120, "Gated-DeltaNet fast path (fla and causal-conv1d), not pure torch"),
    Phase("gdn", 240, "fla's GDN fwd+bwd at Qwen3.5 shapes within tolerance of fp32"),
    Phase("template", 120, "the base tokenizer's template decides the settings; ART = vLLM"),
    Phase("register", 900, "LocalBackend starts Unsloth and ART's vLLM; the model registers"),
    Phase("rollout", 300, "2 rollouts; at least one tool call parsed by qwen3_coder"),
    Phase("tokens", 120, "vLLM's prompt + sampled ids = ART's packed tokens, per position"),
    Phase("train", 300, "one backend.train step saves checkpoint 1 with a whole adapter"),
    Phase("precision", 10, "the base Unsloth trained on is [model] load_in_4bit's"),
    Phase("checkpoint", 120, "vLLM serves <run>-smoke@1 and answers"),
    Phase("long-row", 420, "a row at 90% of max_seq_length trains; peak GPU memory recorded"),
    Phase("equal-rewards", 240, "a group of equal rewards is skipped and logged; step advances"),
    Phase("resume", 480, "after a cut state.json/history: repaired, step and data order go on"),
    Phase("validation", 300, "one validation pass writes val/pass1"),
    Phase("pruning", 120, "delete_checkpoints keeps the latest and the best only"),
    Phase("concurrency", 420, "64 concurrent rollouts against the served model"),
)
PHASE_NAMES = tuple(phase.name for phase in PHASES)
BUDGETS = {phase.name: phase.budget_s for phase in PHASES}
RERUN_SKIPPABLE = ("gdn",)
RERUN_VERSIONS = ("torch", "triton", "fla-core", "transformers", "openpipe-art")
LONG_ROW_SHARE = 0.9  # of [grpo] max_seq_length
CONCURRENT_ROLLOUTS = 64  # 8 groups of 8, as a real step gathers them


def phase_help() -> str:
    width = max(map(len, PHASE_NAMES))
    return "\n".join(f"  {p.name:<{width}}  {p.holds} ({p.budget_s:.0f} s)" for p in PHASES)


def phase_deadline(name: str, overall_deadline: float, now: float | None = None) -> float:
    """The sooner of the phase's own budget from now and the smoke's overall deadline."""
    now = time.monotonic() if now is None else now
    return min(now + BUDGETS[name], overall_deadline)


def installed_versions() -> dict[str, str]:
    """What a passed `gdn` phase depends on; a re-run under other versions runs it again."""
    import importlib.metadata

    found = {}
    for name in RERUN_VERSIONS:
        try:
            found[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            found[name] = "absent"
    return found


def skipped_on_rerun(previous: dict[str, Any] | None, versions: str) -> list[str]:
    """Phases the previous record passed under the same versions (see the module docstring)."""
    if not previous or previous.get("versions") != versions:
        return []
    checks = previous.get("checks", {})
    return [name for name in RERUN_SKIPPABLE if checks.get(name) == "pass"]


def filler_text(tokenizer: Any, tokens: int) -> str:
    """Billing-log text of about `tokens` tokens under `tokenizer` (never more)."""
    line = "2026-03-01 invoice INV-1001 line 3: seat add-on prorated 12 days, 148.20 USD.\n"
    per_line = max(len(tokenizer.encode(line, add_special_tokens=False)), 1)
    text = line * max(tokens // per_line, 1)
    ids = tokenizer.encode(text, add_special_tokens=False)
    return str(tokenizer.decode(ids[:tokens]))


def long_episode_messages(
    tokenizer: Any, max_seq_length: int, reserve: int = 64
) -> list[dict[str, Any]]:
    """A synthetic episode whose prompt fills LONG_ROW_SHARE of max_seq_length, less `reserve`
    tokens left for the template's markers and the sampled answer."""
    target = int(max_seq_length * LONG_ROW_SHARE) - reserve
    return [
        {"role": "system", "content": "You investigate SaaS billing disputes."},
        {"role": "user", "content": "Read this billing log and say what went wrong:\n"},
        {"role": "user", "content": filler_text(tokenizer, target)},
    ]


def long_row_check(
    row_tokens: int,
    max_seq_length: int,
    trained: bool,
    seconds: float,
    peak_gib: float | None = None,
) -> Check:
    """The long row trained; and its peak memory (all processes, this phase) within the
    estimate for ART's log-prob head with the entropy under no_grad (training.art.memory):
    above the four-row estimate's low end means the patch did not reach ART's service."""
    from training.art.memory import ART_HEAD_ROWS, head_rows, needed_gib

    share = row_tokens / max_seq_length
    detail = f"{row_tokens:,} tokens ({share:.0%} of max_seq_length {max_seq_length:,})"
    if not trained:
        return Check("long-row", "fail", f"{detail}: ART trained nothing (dropped as too long?)")
    if share < LONG_ROW_SHARE - 0.05:
        return Check("long-row", "fail", f"{detail}: shorter than the phase asks")
    detail += f" trained in {seconds:.1f} s"
    if peak_gib is None:
        return Check("long-row", "pass", detail + "; peak memory not measured")
    rows = head_rows()
    low, high = needed_gib(max_seq_length, rows)
    unpatched_low, _ = needed_gib(max_seq_length, ART_HEAD_ROWS)
    detail += f"; peak {peak_gib:.1f} GiB (estimate {low:.0f}-{high:.0f} GiB)"
    if rows < ART_HEAD_ROWS and peak_gib >= unpatched_low:
        return Check(
            "long-row",
            "fail",
            f"{detail}: as much as ART's unpatched head needs ({unpatched_low:.0f}+ GiB); the "
            "entropy patch did not reach ART's model service (training.art.entropy_patch)",
        )
    return Check("long-row", "pass", detail)


GRAD_NORM_KEY = "loss/grad_norm"  # art/unsloth/train.py: the trainer's norm before clipping
GRAD_NORM_RECORDS = ("train_grad_norm", "long_row_grad_norm")  # where the smoke keeps them


def keep_grad_norm(
    measured: MutableMapping[str, float | int | str], key: str, metrics: Mapping[str, float]
) -> None:
    """A train call's `loss/grad_norm`, kept in the smoke's record for `grad_norm_note`."""
    value = metrics.get(GRAD_NORM_KEY)
    if isinstance(value, int | float) and not isinstance(value, bool):
        measured[key] = round(float(value), 6)


def grad_norm_note(norms: Sequence[float], max_grad_norm: float) -> str:
    """What the per-trajectory gradient norms (ART's `loss/grad_norm`, before clipping) say
    about `[grpo] max_grad_norm`: every step clipped means each trajectory moves the LoRA by
    the same amount whatever its advantage (runs/README.md, "What ART optimises")."""
    if not norms:
        return "loss/grad_norm not reported"
    ordered = sorted(norms)
    median = ordered[len(ordered) // 2]
    clipped = sum(norm > max_grad_norm for norm in norms) / len(norms)
    note = (
        f"loss/grad_norm median {median:.3g} (max {ordered[-1]:.3g}) over {len(norms)} train "
        f"call(s) against max_grad_norm {max_grad_norm:g}: {clipped:.0%} above it"
    )
    if clipped == 1.0:
        note += (
            "; every step is clipped, so its size ignores the advantage's: consider "
            f"[grpo] max_grad_norm near {median:.2g} (the median) and rerun the smoke"
        )
    return note


def equal_rewards_check(step_before: int, step_after: int, skipped: int, logged: bool) -> Check:
    ok = step_after == step_before + 1 and skipped == 1 and logged
    detail = (
        f"equal-reward groups skipped {skipped}, checkpoint {step_before} -> {step_after}, "
        f"logged: {'yes' if logged else 'no'}"
    )
    return Check("equal-rewards", "pass" if ok else "fail", detail)


def resume_check(
    step_before: int,
    step_after: int,
    batch_expected: Sequence[int],
    batch_taken: Sequence[int],
    repairs: Sequence[str],
) -> Check:
    """After the restart: the step goes on, the next batch is the one the plan named."""
    ok = step_after == step_before and list(batch_expected) == list(batch_taken) and bool(repairs)
    detail = (
        f"resumed at checkpoint {step_after} (was {step_before}); next batch "
        f"{'unchanged' if list(batch_expected) == list(batch_taken) else 'CHANGED'}; "
        f"{len(repairs)} repair line(s)"
    )
    return Check("resume", "pass" if ok else "fail", detail)


def pruning_check(before: Sequence[int], after: Sequence[int], best: int | None) -> Check:
    latest = max(before) if before else None
    keep = {step for step in (latest, best) if step is not None}
    ok = set(after) == keep
    detail = f"checkpoints {list(before)} -> {list(after)} (latest {latest}, best {best})"
    return Check("pruning", "pass" if ok else "fail", detail)


def concurrency_check(done: int, failed: int, seconds: float) -> Check:
    ok = done == CONCURRENT_ROLLOUTS and failed == 0
    detail = f"{done}/{CONCURRENT_ROLLOUTS} rollouts, {failed} failed, {seconds:.0f} s wall"
    return Check("concurrency", "pass" if ok else "fail", detail)
