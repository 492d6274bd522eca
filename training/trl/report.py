"""What a TRL run records: per-step metrics (metrics.jsonl), the reward curve and the evaluations.

`StepRecorder` is both the `LedgerTrlEnv` sink (every scored episode, with its reward terms)
and a `TrainerCallback` (TRL's logged loss and reward stats): at each log it writes one line
that joins the two. Groups are the episodes of one step that share a scenario; each row also
holds their tool-call sequences (`training.tool_sequences`). Whether the
reward rose is reported as numbers, never asserted. Used by `training.trl.phases` and
`training.trl.grpo`. The eval before and after GRPO is `eval.run.evaluate` into eval run
directories (`eval-before/`, `eval-after/`), so `write_run_report` can build the run's report
with `python -m eval.report`; the summary is `training.trl.summary`.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from transformers import TrainerCallback

from agent.policy import Policy
from agent.rollout import RolloutConfig
from env.scenario import Scenario
from eval.episode_log import EPISODES, RUN_CONFIG, EpisodeLine, read_episodes
from eval.run import evaluate as evaluate_policy
from eval.summary import SUMMARY_JSON, SUMMARY_MD, load_summary
from training.tool_sequences import trl_fields
from training.trl import ranks
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


def _json_lines(path: Path) -> list[dict[str, Any]]:
    """The whole lines of a JSON-lines file (a line cut by a kill is left out)."""
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            rows.append(json.loads(line))
        except ValueError:
            continue
    return rows


def _mean(values: list[float]) -> float:
    return round(statistics.fmean(values), 6) if values else 0.0


class StepRecorder(TrainerCallback):
    """Collects scored episodes between logs and writes one metrics line per optimizer step.

    Under several processes each rank scores its own share of the step's episodes: every rank
    gathers all of them at the log (a collective; TRL logs on every rank), and rank 0 alone
    writes the line. Continuing from a checkpoint at `resume_step` keeps the lines up to it.
    """

    def __init__(self, path: Path, *, resume_step: int = 0, main: bool = True) -> None:
        self.path = path
        self.main = main
        self.rows: list[dict[str, Any]] = []
        self._episodes: list[EpisodeOutcome] = []
        self._step_started = time.perf_counter()
        if resume_step and path.is_file():
            self.rows = [row for row in _json_lines(path) if row.get("step", 0) <= resume_step]
        if main:
            path.parent.mkdir(parents=True, exist_ok=True)
            text = "".join(json.dumps(row) + "\n" for row in self.rows)
            path.write_text(text, encoding="utf-8")

    def __call__(self, outcome: EpisodeOutcome) -> None:
        self._episodes.append(outcome)

    def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._step_started = time.perf_counter()

    def on_log(self, args: Any, state: Any, control: Any, logs: Any = None, **kwargs: Any) -> None:
        if not logs or "reward" not in logs:  # the end-of-training summary log has no reward
            return
        shares = ranks.gather(self._episodes)
        self._episodes = [episode for share in shares for episode in share]
        row = self.step_row(state.global_step, time.perf_counter() - self._step_started)
        row["trl"] = {
            key: value
            for key, value in logs.items()
            if key in TRL_KEYS or key.startswith("rewards/")
        }
        row["loss"] = logs.get("loss")
        self.rows.append(row)
        if self.main:
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
    asyncio.run(
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
    return read_evaluation(run_dir, round(time.perf_counter() - started, 1))


def finished_evaluation(run_dir: Path) -> bool:
    """An eval run directory whose summary was written (eval.run writes it last)."""
    return (run_dir / SUMMARY_JSON).is_file()


def read_evaluation(run_dir: Path, wall_s: float = 0.0) -> EvalSummary:
    """The rates of a finished eval run directory (also one a stopped run left behind)."""
    summary = load_summary(run_dir)
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
        wall_s=wall_s,
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
