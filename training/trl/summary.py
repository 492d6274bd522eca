"""A TRL run's summary: what `summary.json` holds, the printed report and the closing lines.

`build_summary` joins the phases' figures (SFT data, the evaluations before and after GRPO, the
per-step rows of `StepRecorder`); `TrlSummary.render` is the block printed at the end, and
`headline` the last lines: the figures the run is for, what it shows, and where the rest is.
Used by `training.trl.runner` and `train.py`.
"""

from __future__ import annotations

import json
import statistics
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from eval.summary import as_interval, load_summary
from training.runs import RunConfig
from training.trl.data import SftExample
from training.trl.report import EVAL_AFTER, EVAL_BEFORE, REPORT_DIR, EvalSummary

SUMMARY_FILE = "summary.json"  # written last: a finished run has one
TREND_WINDOW = 5  # steps averaged at each end of the reward curve for the summary
REWARD_LAB = "experiments/reward_lab/README.md"


@dataclass
class TrlSummary:
    """Returned by `run_trl` and written as summary.json; `render()` is the printed report."""

    run: str
    out_dir: str
    base_model: str
    eval_split: str
    sft_steps: int
    sft_examples: int
    sft_mean_calls_kept: float
    sft_reference_reward: float
    grpo_steps: int
    loss_type: str
    scale_rewards: str
    lora: dict[str, Any]
    before: EvalSummary
    after: EvalSummary
    reward_first_steps: float  # LedgerGym reward, mean of the first `trend_window` steps
    reward_last_steps: float
    trained_first_steps: float  # the reward GRPO optimised (LedgerGym + extra shaping)
    trained_last_steps: float
    trend_window: int
    groups_with_variance: int  # LedgerGym reward alone
    groups_with_variance_total: int  # the reward GRPO trained on (with any extra shaping)
    groups_total: int
    lora_b_max_abs_delta: float
    lora_tensors_changed: int
    timings_s: dict[str, float]
    wall_s: float  # this process's, from its start (a continued run counts from the rerun)
    extra_shaping: str | None = None
    processes: int = 1  # data-parallel processes (torchrun / accelerate launch)
    continued_from: dict[str, int] = field(default_factory=dict)  # phase -> checkpoint step
    # sha256 of each rank's LoRA tensors after GRPO (data-parallel ranks must agree); None where
    # a sharded trainer (FSDP, ZeRO-3) holds no whole copy on any rank
    rank_adapter_digests: list[str] | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def write(self, path: Path) -> None:
        path.write_text(json.dumps(self.to_dict(), indent=2) + "\n", encoding="utf-8")

    @classmethod
    def read(cls, path: Path) -> TrlSummary:
        data = json.loads(path.read_text(encoding="utf-8"))
        before, after = EvalSummary(**data.pop("before")), EvalSummary(**data.pop("after"))
        return cls(before=before, after=after, **data)

    def render(self) -> str:
        b, a = self.before, self.after
        window = self.trend_window
        timings = ", ".join(f"{k} {v:.0f}s" for k, v in self.timings_s.items())
        return "\n".join(
            [
                f"TRL run {self.run!r} ({self.base_model}) -> {self.out_dir}",
                f"  SFT warm start: {self.sft_steps} steps on {self.sft_examples} fitted reference "
                f"trajectories (mean {self.sft_mean_calls_kept:.1f} calls kept, reference "
                f"reward {self.sft_reference_reward:.2f})",
                f"  GRPO: {self.grpo_steps} steps, loss_type={self.loss_type}, "
                f"scale_rewards={self.scale_rewards}, LoRA r={self.lora['rank']} "
                f"alpha={self.lora['alpha']} on {','.join(self.lora['target_modules'])}",
                f"  eval on {b.scenarios} {self.eval_split} scenarios (eval.grader):",
                f"    before GRPO (warm start): {b.line()}",
                f"    after GRPO (LoRA):        {a.line()}",
                f"  train reward, mean of first -> last {window} steps (noisy; not evidence of "
                "learning either way):",
                f"    LedgerGym reward {_trend(self.reward_first_steps, self.reward_last_steps)}",
                f"    trained reward   {_trend(self.trained_first_steps, self.trained_last_steps)}",
                f"  groups with non-zero reward variance: LedgerGym reward "
                f"{self.groups_with_variance}/{self.groups_total}, trained reward "
                f"{self.groups_with_variance_total}/{self.groups_total}",
                f"  LoRA changed: {self.lora_tensors_changed} lora_B tensors, max |delta| "
                f"{self.lora_b_max_abs_delta:.3g}",
                f"  extra shaping: {self.extra_shaping or 'none'}",
                f"  {self.processes} process(es)"
                + "".join(f", {k} continued from step {v}" for k, v in self.continued_from.items()),
                f"  wall time {self.wall_s:.0f}s ({timings})",
            ]
        )


def headline(summary: TrlSummary) -> list[str]:
    """The run's last lines: the figures it is run for (graded on the eval split before and
    after GRPO, with intervals), then where everything is."""
    out = Path(summary.out_dir)
    before, after = (load_summary(out / name) for name in (EVAL_BEFORE, EVAL_AFTER))

    def pair(key: str) -> str:
        return f"{_interval(before, key)} -> {_interval(after, key)}"

    def reversals(s: dict[str, Any]) -> str:
        return f"{s['false_reversal']['count']}/{s['false_reversal']['total']}"

    return [
        f"{summary.run}, warm start -> GRPO, on {before['scenarios']} {summary.eval_split} "
        f"scenarios: pass^1 {pair('overall')}",
        f"  grounded success pass^1 {pair('grounded')}; false reversals "
        f"{reversals(before)} -> {reversals(after)}",
        f"  train reward, first -> last {summary.trend_window} steps: "
        f"{_trend(summary.reward_first_steps, summary.reward_last_steps)}",
        "what this run shows: the whole path works on a CPU (SFT warm start, GRPO through "
        "LedgerEnv with the LedgerGym reward, graded evaluation, report); a model this small "
        "is not expected to move pass^1, so neither figure is evidence of learning",
        "learning on a CPU is shown by the reward lab: python -m experiments.reward_lab "
        f"(about 2 min; {REWARD_LAB})",
        f"report: {out / REPORT_DIR / 'index.html'}",
        f"summary: {out / 'summary.json'}; log: {out / 'train.log'}",
    ]


def _interval(summary: dict[str, Any], key: str) -> str:
    interval = as_interval((summary.get(key) or {}).get("pass1"))
    return "–" if interval is None else interval.format()


def _trend(first: float, last: float) -> str:
    change = last - first
    word = "rose" if change > 0 else ("fell" if change < 0 else "did not move")
    return f"{first:.3f} -> {last:.3f} ({word} by {abs(change):.3f})"


def build_summary(
    run: RunConfig,
    out_dir: Path,
    examples: list[SftExample],
    steps: int,
    evaluations: tuple[EvalSummary, EvalSummary],
    rows: list[dict[str, Any]],
    timings: dict[str, float],
) -> TrlSummary:
    """The summary of a run from its phases' figures (LoRA and process fields filled after)."""
    trl = run.trl
    assert trl is not None  # RunConfig guarantees it for trainer "trl"
    before, after = evaluations
    window = max(1, min(TREND_WINDOW, len(rows) // 2))
    group_stds = [std for row in rows for std in row["group_reward_std"]]
    return TrlSummary(
        run=run.name,
        out_dir=str(out_dir),
        base_model=run.base_model,
        eval_split=run.validation.split,
        sft_steps=trl.sft_steps,
        sft_examples=len(examples),
        sft_mean_calls_kept=statistics.fmean(ex.calls_kept for ex in examples),
        sft_reference_reward=statistics.fmean(ex.reward for ex in examples),
        grpo_steps=steps,
        loss_type=trl.loss_type,
        scale_rewards=trl.scale_rewards,
        lora=run.lora.model_dump(),
        before=before,
        after=after,
        reward_first_steps=statistics.fmean(r["reward_mean"] for r in rows[:window]) if rows else 0,
        reward_last_steps=statistics.fmean(r["reward_mean"] for r in rows[-window:]) if rows else 0,
        trained_first_steps=_mean_of(rows[:window], "reward"),
        trained_last_steps=_mean_of(rows[-window:], "reward"),
        trend_window=window,
        groups_with_variance=sum(std > 0 for std in group_stds),
        groups_with_variance_total=sum(
            round((1 - r["trl"].get("frac_reward_zero_std", 1.0)) * len(r["group_reward_std"]))
            for r in rows
        ),
        groups_total=len(group_stds),
        lora_b_max_abs_delta=0.0,
        lora_tensors_changed=0,
        timings_s=timings,
        wall_s=0.0,
        extra_shaping=f"tool_format x {trl.format_reward}" if trl.format_reward else None,
    )


def _mean_of(rows: list[dict[str, Any]], trl_key: str) -> float:
    values = [row["trl"][trl_key] for row in rows if trl_key in row["trl"]]
    return statistics.fmean(values) if values else 0.0
