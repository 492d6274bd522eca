"""What a TRL run records: per-step metrics (metrics.jsonl), the reward curve, eval and summary.

`StepRecorder` is both the `LedgerTrlEnv` sink (every scored episode, with its reward terms)
and a `TrainerCallback` (TRL's logged loss and reward stats): at each log it writes one line
that joins the two. Groups are the episodes of one step that share a scenario; each row also
holds their tool-call sequences (`training.tool_sequences`). Whether the
reward rose is reported as numbers, never asserted. Used by `training.trl.runner`. The eval
before and after GRPO is `eval.run.evaluate` into eval run directories (`eval-before/`,
`eval-after/`), so `write_run_report` can build the run's report with `python -m eval.report`.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import time
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from transformers import TrainerCallback

from agent.policy import Policy
from agent.rollout import RolloutConfig
from env.scenario import Scenario
from eval.episode_log import EPISODES, RUN_CONFIG, EpisodeLine, read_episodes
from eval.run import evaluate as evaluate_policy
from eval.summary import SUMMARY_JSON, SUMMARY_MD, as_interval, load_summary
from training.tool_sequences import trl_fields
from training.trl.episode_env import EpisodeOutcome

# TRL log keys copied into metrics.jsonl as they are (when present)
TRL_KEYS = (
    "loss",
    "reward",
    "reward_std",
    "frac_reward_zero_std",
    "tools/call_frequency",
    "tools/failure_frequency",
    "completions/mean_length",
    "completions/clipped_ratio",
    "entropy",
    "learning_rate",
    "grad_norm",
)
EVAL_BEFORE = "eval-before"  # eval run directories inside a TRL run's output folder
EVAL_AFTER = "eval-after"
REPORT_DIR = "report"


def _mean(values: list[float]) -> float:
    return round(statistics.fmean(values), 6) if values else 0.0


class StepRecorder(TrainerCallback):
    """Collects scored episodes between logs and writes one metrics line per optimizer step."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.rows: list[dict[str, Any]] = []
        self._episodes: list[EpisodeOutcome] = []
        self._step_started = time.perf_counter()
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("", encoding="utf-8")

    def __call__(self, outcome: EpisodeOutcome) -> None:
        self._episodes.append(outcome)

    def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._step_started = time.perf_counter()

    def on_log(self, args: Any, state: Any, control: Any, logs: Any = None, **kwargs: Any) -> None:
        if not logs or "reward" not in logs:  # the end-of-training summary log has no reward
            return
        row = self.step_row(state.global_step, time.perf_counter() - self._step_started)
        row["trl"] = {
            key: value
            for key, value in logs.items()
            if key in TRL_KEYS or key.startswith("rewards/")
        }
        row["loss"] = logs.get("loss")
        self.rows.append(row)
        with self.path.open("a", encoding="utf-8") as out:
            out.write(json.dumps(row) + "\n")
        self._episodes = []

    def step_row(self, step: int, step_time: float) -> dict[str, Any]:
        episodes = self._episodes
        totals = [e.reward.total for e in episodes]
        groups: dict[str, list[float]] = defaultdict(list)
        for e in episodes:
            groups[e.scenario_id].append(e.reward.total)
        group_std = [statistics.pstdev(v) if len(v) > 1 else 0.0 for v in groups.values()]
        terms = sorted({name for e in episodes for name in e.reward.terms})
        return {
            "step": step,
            "episodes": len(episodes),
            "reward_mean": _mean(totals),
            "reward_std": round(statistics.pstdev(totals), 6) if len(totals) > 1 else 0.0,
            "terms": {t: _mean([e.reward.terms.get(t, 0.0) for e in episodes]) for t in terms},
            "group_reward_std": [round(s, 6) for s in group_std],
            "zero_variance_group_share": _mean([float(s == 0.0) for s in group_std]),
            "successes": sum(e.reward.success for e in episodes),
            "tool_calls_mean": _mean([float(e.tool_calls) for e in episodes]),
            "tool_errors_mean": _mean([float(e.tool_errors) for e in episodes]),
            "submitted_share": _mean([float(e.reward.submitted) for e in episodes]),
            "step_time_s": round(step_time, 3),
            # exploration within groups (eval.report.diversity reads it)
            **trl_fields((e.scenario_id, e.tool_sequence) for e in episodes),
        }


@dataclass(frozen=True)
class EvalSummary:
    scenarios: int
    success_rate: float
    mean_reward: float
    submitted_rate: float
    label_correct_rate: float
    mean_tool_calls: float
    wall_s: float
    episodes: list[dict[str, Any]] = field(default_factory=list)

    def line(self) -> str:
        return (
            f"success {self.success_rate:.2f}, mean reward {self.mean_reward:.3f}, "
            f"submitted {self.submitted_rate:.2f}, label right {self.label_correct_rate:.2f}, "
            f"tool calls {self.mean_tool_calls:.1f}"
        )


def evaluate(
    policy: Policy,
    scenarios: list[Scenario],
    config: RolloutConfig,
    run_dir: Path,
    label: str | None = None,
) -> EvalSummary:
    """`eval.run.evaluate` with k = 1, one episode at a time, into a fresh eval run directory
    (a rerun of the TRL run replaces it; the report reads it); its summary gives the rates.
    `label` names the progress bar ("evaluating the warm-started model on val")."""
    started = time.perf_counter()
    for name in (EPISODES, RUN_CONFIG, SUMMARY_JSON, SUMMARY_MD):
        (run_dir / name).unlink(missing_ok=True)
    result = asyncio.run(
        evaluate_policy(
            policy,
            scenarios,
            k=1,
            run_dir=run_dir,
            config=_run_config(policy, scenarios),
            rollout=config,
            concurrency=1,  # one CPU: concurrency would only interleave the same work
            label=label,
        )
    )
    summary = result.summary or {}
    episodes = [_episode(line) for line in read_episodes(run_dir / EPISODES)]
    submitted = summary.get("submitted", {})
    return EvalSummary(
        scenarios=len(episodes),
        success_rate=_rounded((summary.get("overall", {}).get("pass1") or {}).get("estimate")),
        mean_reward=_rounded(summary.get("mean_reward")),
        submitted_rate=_rounded(
            submitted["count"] / submitted["total"] if submitted.get("total") else None
        ),
        label_correct_rate=_mean([float(e["label_correct"]) for e in episodes]),
        mean_tool_calls=_rounded(summary.get("means", {}).get("tool_calls")),
        wall_s=round(time.perf_counter() - started, 1),
        episodes=episodes,
    )


def _rounded(value: float | None) -> float:
    return round(value, 6) if value is not None else 0.0


def _episode(line: EpisodeLine) -> dict[str, Any]:
    """An eval line as the TRL summary lists it (an error line has no grade: all False)."""
    grade = line.grade or {}
    return {
        "scenario_id": line.scenario_id,
        "success": line.success,
        "submitted": bool(grade.get("submitted")),
        "label_correct": bool(grade.get("label_correct")),
        "reported_label": grade.get("reported_label"),
        "reward": line.reward_total or 0.0,
        "tool_calls": line.tool_calls,
        "turns": line.turns,
    }


def _run_config(policy: Policy, scenarios: list[Scenario]) -> dict[str, Any]:
    from env.versions import generator_hash, tool_contract_hash
    from ledgergym import __version__

    return {
        "model": policy.name,
        "kind": "local",
        "split": scenarios[0].split if scenarios else None,
        "k": 1,
        "limit": len(scenarios),
        "ledgergym_version": __version__,
        "tool_contract": tool_contract_hash(),
        "generator": generator_hash(),
    }


def write_run_report(out_dir: Path) -> Path:
    """The TRL run's report, by the same command a user runs:

    python -m eval.report OUT/eval-before OUT/eval-after --train-metrics OUT/metrics.jsonl
        --out OUT/report
    """
    from eval.report.__main__ import main

    argv = [str(out_dir / EVAL_BEFORE), str(out_dir / EVAL_AFTER)]
    argv += ["--train-metrics", str(out_dir / "metrics.jsonl"), "--out", str(out_dir / REPORT_DIR)]
    if main(argv) != 0:
        raise RuntimeError(f"the report of {out_dir} could not be written (see above)")
    return out_dir / REPORT_DIR / "index.html"


def plot_reward_curve(rows: list[dict[str, Any]], path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    steps = [row["step"] for row in rows]
    means = [row["reward_mean"] for row in rows]
    stds = [row["reward_std"] for row in rows]
    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.plot(steps, means, marker="o", label="LedgerGym reward, mean")
    trained = [row["trl"].get("reward") for row in rows]
    if any(value is not None for value in trained):
        ax.plot(steps, trained, marker=".", linestyle="--", label="trained reward (with shaping)")
    ax.fill_between(
        steps,
        [m - s for m, s in zip(means, stds, strict=True)],
        [m + s for m, s in zip(means, stds, strict=True)],
        alpha=0.2,
        label="± std",
    )
    ax.set_xlabel("GRPO step")
    ax.set_ylabel("reward per episode")
    ax.set_title(title)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


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
    wall_s: float
    extra_shaping: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def write(self, path: Path) -> None:
        path.write_text(json.dumps(self.to_dict(), indent=2) + "\n", encoding="utf-8")

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
