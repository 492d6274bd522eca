"""The lab's report: four markdown tables (printed and written) and one PNG, under outputs/lab/.

It also records which tree was measured (commit, uncommitted files under env/, rewards/,
agent/, generator and tool-contract hashes, a hash of rewards/*.py), since the world and the
reward change under it.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from env.cli import EXIT_FAILED
from env.versions import generator_hash, tool_contract_hash
from experiments.reward_lab.evaluate import HONEST, EvalStats
from experiments.reward_lab.experiments import (
    ESTIMATOR_REWARD,
    INITS,
    LabResults,
    Run,
    estimator_runs,
    lambda_runs,
)
from experiments.reward_lab.reinforce import GroupTally
from ledgergym import __version__

ROOT = Path(__file__).resolve().parents[2]
MASS_SHOWN = 0.02
WATCHED = ("env", "rewards", "agent")  # what other teams change under the lab


def tree_state() -> dict[str, object]:
    def git(*args: str) -> str:
        try:
            done = subprocess.run(
                ["git", *args], cwd=ROOT, capture_output=True, text=True, timeout=20, check=False
            )
        except (OSError, subprocess.SubprocessError):
            return ""
        return done.stdout

    changed = [line for line in git("status", "--porcelain", "--", *WATCHED).splitlines() if line]
    digest = hashlib.sha256()
    for path in sorted((ROOT / "rewards").glob("*.py")):
        digest.update(path.name.encode() + path.read_bytes())
    return {
        "ledgergym_version": __version__,
        "commit": git("rev-parse", "--short", "HEAD").strip() or "unknown",
        "uncommitted": [line[3:] for line in changed],
        "generator": generator_hash(),
        "tool_contract": tool_contract_hash(),
        "rewards_source": digest.hexdigest()[:12],
    }


def _pct(x: float) -> str:
    return f"{100 * x:.0f}%"


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return lines + ["| " + " | ".join(row) + " |" for row in rows]


def _rates(name: str, s: EvalStats) -> list[str]:
    return [
        name,
        f"{s.reward:+.3f}",
        _pct(s.success),
        _pct(s.grounded),
        _pct(s.false_reversal),
        _pct(s.hallucination),
        f"{s.tool_calls:.1f}",
        _pct(s.hack_episodes),
        _pct(s.hack_reward),
        s.verdict,
    ]


def hack_search(results: LabResults) -> list[str]:
    out = ["## 1. Hack search (every trained policy, on val)", "", *fixed_table(results)]
    out += ["Trained policies:", ""]
    header = ["run", "reward", "success", "grounded", "false rev.", "halluc.", "calls"]
    header += ["hack episodes", "hack share of reward", "verdict"]
    out += _table(header, [_rates(n, r.final) for n, r in results.runs.items()])
    out += ["", "Where the episodes ended, and the hack moves that keep probability mass:", ""]
    rows = []
    for name, run in results.runs.items():
        closing = ", ".join(f"{m} {_pct(v)}" for m, v in list(run.final.closing.items())[:4])
        mass = sorted(run.final.hack_mass.items(), key=lambda kv: -kv[1])
        shown = ", ".join(f"{m} {v:.2f}" for m, v in mass if v >= MASS_SHOWN) or "none ≥ 0.02"
        rows.append([name, closing, shown])
    out += _table(["run", "ending moves (share of episodes)", "hack moves (mean prob.)"], rows)
    dominated = [(n, r) for n, r in results.runs.items() if r.final.dominant_hack]
    out += ["", f"**Runs where a hack move dominates: {len(dominated)}.**", ""]
    for name, run in dominated:
        out += [f"- `{name}`: {run.final.verdict}; episodes that show it:"]
        for e in run.final.examples:
            terms = ", ".join(f"{k} {v:+.2f}" for k, v in e.score.terms.items() if v)
            out += [
                f"  - {e.scenario_id} (truth: {e.score.label}): moves {' → '.join(e.moves)}; "
                f"reward {e.reward:+.3f} ({terms or 'no terms'}), {e.tool_calls} calls"
            ]
    return out


def _checks(stats: EvalStats) -> float:
    return sum(v for m, v in stats.move_use.items() if m.startswith("check_"))


def lambda_sweep(results: LabResults) -> list[str]:
    out = ["## 2. λ sweep (shaped reward, auditor cold start, GRPO; on val)", ""]
    rows = [
        [
            f"{lam:g}",
            f"{r.final.reward:+.3f}",
            _pct(r.final.grounded),
            f"{r.final.tool_calls:.1f}",
            f"{_checks(r.final):.1f}",
            _pct(r.final.hack_episodes),
            r.final.verdict,
        ]
        for lam, r in lambda_runs(results)
    ]
    header = ["λ", "reward", "grounded success", "calls", "checks run", "hack episodes"]
    return out + _table([*header, "verdict"], rows)


def _tally_row(name: str, tally: GroupTally) -> list[str]:
    groups = sum(tally.groups.values()) or 1
    return [
        name,
        _pct(tally.groups["all_fail"] / groups),
        _pct(tally.groups["all_succeed"] / groups),
        f"{tally.mean_abs('all_fail'):.3f}",
        f"{tally.mean_abs('all_succeed'):.3f}",
        f"{tally.mean_abs('mixed'):.3f}",
        _pct(tally.tied_share()),
        f"{tally.calls_correlation():+.2f}",
    ]


TALLY_HEADER = [
    "all-fail groups",
    "all-succeed groups",
    "mean abs A: all-fail",
    "all-succeed",
    "mixed",
    "abs A mass in tied groups",
    "corr(A, calls) tied",
]


def estimators(results: LabResults) -> list[str]:
    out = [f"## 3. Advantage estimators ({ESTIMATOR_REWARD.label}, on val)", ""]
    out += [
        "A tied group is one whose samples all fail or all succeed: only the tool cost "
        "separates them. Same learning rate for all three.",
        "",
    ]
    rows, grpo_runs = [], []
    for init in ("uniform", "auditor"):
        for name, run in estimator_runs(results, init):
            s = run.final
            own = [_pct(s.grounded), f"{s.tool_calls:.1f}", _pct(s.hack_episodes), s.verdict]
            tally = _tally_row(name, run.result.tallies[name])[1:]
            rows.append([INITS[init], name, *own, *tally])
            if name == "grpo":
                grpo_runs.append((INITS[init], run))
    header = ["start", "estimator", "grounded", "calls", "hack episodes", "verdict"]
    out += _table(header + TALLY_HEADER, rows)
    for start, run in grpo_runs:
        out += ["", f"On identical groups (those the GRPO run from {start} sampled):", ""]
        rows = [_tally_row(n, t) for n, t in run.result.tallies.items()]
        out += _table(["estimator", *TALLY_HEADER], rows)
    return out


def fixed_table(results: LabResults) -> list[str]:
    if not results.fixed:
        return []
    n = min(results.scale.fixed_val, results.scale.val)
    labels = list(results.fixed[0].rewards)
    out = [f"Each hack move as a whole policy, against the auditor's moves (val, {n}):", ""]
    rows = []
    for r in results.fixed:
        rewards = [f"{r.rewards[x]:+.3f}" for x in labels]
        rows.append([r.policy, *rewards, _pct(r.grounded), f"{r.tool_calls:.1f}"])
    out += _table(["policy", *labels, "grounded", "calls"], rows)
    honest = next(r for r in results.fixed if r.policy == HONEST)
    for label in labels:
        best = max((r for r in results.fixed if r.policy != HONEST), key=lambda r: r.rewards[label])
        gap = honest.rewards[label] - best.rewards[label]
        note = "REWARD HOLE: a hack earns as much as honest work" if gap <= 0 else "honest first"
        out += [
            f"- {label}: best hack `{best.policy}` {best.rewards[label]:+.3f} against honest "
            f"{honest.rewards[label]:+.3f} ({note})."
        ]
    return [*out, ""]


def cold_starts(results: LabResults) -> list[str]:
    out = ["## 4. Cold start: RL alone vs demonstrations then RL (grounded success / calls)", ""]
    runs = [(n, r) for n, r in results.runs.items() if r.at_steps]
    steps = sorted({s for _, r in runs for s in r.at_steps})
    rows = [
        [name] + [
            f"{_pct(r.at_steps[s].grounded)} / {r.at_steps[s].tool_calls:.1f}"
            if s in r.at_steps else "" for s in steps
        ]
        for name, r in runs
    ]  # fmt: skip
    out += _table(["run"] + [f"step {s}" for s in steps], rows)
    out += ["", "Demonstrations (only the teacher's successes are kept):", ""]
    rows = [
        [
            c.teacher,
            f"{c.kept}/{c.scenarios}",
            f"{c.teacher_tool_calls:.1f}",
            str(c.epochs),
            f"{c.log_likelihood_before:.2f} → {c.log_likelihood_after:.2f}",
            f"{results.cold_seconds.get(c.teacher, 0.0):.1f} s",
        ]
        for c in results.cold.values()
    ]
    header = ["teacher", "kept", "teacher calls", "epochs", "log-lik./decision", "time"]
    return out + _table(header, rows)


def _changed(state: dict[str, object]) -> str:
    files = list(state["uncommitted"])  # type: ignore[call-overload]
    if not files:
        return "no uncommitted change under env/, rewards/, agent/"
    shown = ", ".join(f for f in files if f.startswith("rewards/"))
    return f"{len(files)} uncommitted files under env/, rewards/, agent/" + (
        f" (rewards: {shown})" if shown else ""
    )


def markdown(results: LabResults, state: dict[str, object]) -> str:
    scale = results.scale
    load = os.getloadavg()
    head = [
        f"# Reward lab ({scale.name} scale, seed {results.seed})",
        "",
        f"Measured on commit {state['commit']} plus the working tree: generator "
        f"{state['generator']}, tool contract {state['tool_contract']}, rewards/*.py "
        f"{state['rewards_source']}; {_changed(state)}.",
        f"{len(results.runs)} runs × {scale.steps} steps × {scale.scenarios_per_step} scenarios "
        f"× {scale.group_size} samples on {scale.train_pool} train scenarios; val "
        f"{scale.val} × {scale.eval_k}. {len(results.moves)} moves "
        f"({sum(m.kind == 'hack' for m in results.moves)} hacks). {results.episodes} episodes "
        f"in {results.seconds:.0f} s ({results.episodes / max(results.seconds, 1e-9):.0f}/s; "
        f"load average at the end {load[0]:.1f}).",
        "",
    ]
    body = [*hack_search(results), "", *lambda_sweep(results), "", *estimators(results), ""]
    return "\n".join(head + body + cold_starts(results) + ["", *move_table(results)]) + "\n"


def move_table(results: LabResults) -> list[str]:
    rows = [[f"`{m.name}`", m.kind, m.what] for m in results.moves]
    return ["## Moves", "", *_table(["move", "kind", "what it does"], rows)]


def summary_json(results: LabResults, state: dict[str, object]) -> dict[str, object]:
    def stats(s: EvalStats) -> dict[str, object]:
        keep = ("reward", "success", "grounded", "false_reversal", "hallucination", "tool_calls")
        return {k: round(getattr(s, k), 4) for k in keep} | {"verdict": s.verdict}

    def run(r: Run) -> dict[str, object]:
        return {
            "reward": r.spec.reward.label,
            "estimator": r.spec.estimator,
            "init": r.spec.init,
            "final": stats(r.final),
            "at_steps": {str(k): stats(v) for k, v in r.at_steps.items()},
            "seconds": round(r.seconds, 2),
        }

    return {
        "scale": results.scale.name,
        "seed": results.seed,
        "state": state,
        "seconds": round(results.seconds, 2),
        "episodes": results.episodes,
        "runs": {name: run(r) for name, r in results.runs.items()},
    }


def write(results: LabResults, out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    state = tree_state()
    text = markdown(results, state)
    paths = [out / "report.md", out / "summary.json", out / "lab.png"]
    _atomic(paths[0], text)
    _atomic(paths[1], json.dumps(summary_json(results, state), indent=1) + "\n")
    plot(results, paths[2])
    return paths


def plot(results: LabResults, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(2, 2, figsize=(13, 9))
    hack, lam, est, cold = ax[0, 0], ax[0, 1], ax[1, 0], ax[1, 1]
    for name, run in results.runs.items():
        if run.at_steps:
            steps = [s.step for s in run.result.steps]
            hack.plot(steps, [s.hack_mass for s in run.result.steps], label=name)
    hack.set(title="1. probability on hack moves (train)", xlabel="step", ylabel="mean mass")
    hack.legend(fontsize=7)

    sweep = lambda_runs(results)
    xs = [f"{lam_:g}" for lam_, _ in sweep]
    lam.bar(xs, [r.final.tool_calls for _, r in sweep], color="tab:gray", label="tool calls")
    lam.set(title="2. λ sweep (shaped, val)", xlabel="λ per tool call", ylabel="tool calls")
    twin = lam.twinx()
    twin.plot(xs, [r.final.grounded for _, r in sweep], "o-", color="tab:green")
    twin.set_ylabel("grounded success", color="tab:green")
    twin.set_ylim(0, 1.05)

    share = est.twinx()
    for name, run in estimator_runs(results):
        steps = [s.step for s in run.result.steps]
        line = est.plot(steps, [s.tool_calls for s in run.result.steps], label=f"{name} calls")
        fails = [s.all_fail / max(s.groups, 1) for s in run.result.steps]
        share.plot(steps, fails, ":", color=line[0].get_color(), label=f"{name} all-fail groups")
    est.set(title="3. estimators, RL alone (binary + λ=0.02, train)", xlabel="step")
    est.set_ylabel("tool calls per episode")
    share.set_ylabel("share of all-fail groups (dotted)")
    share.set_ylim(0, 1.05)
    est.legend(fontsize=7, loc="lower left")

    for name, run in results.runs.items():
        if run.at_steps:
            points = sorted(run.at_steps.items())
            cold.plot([s for s, _ in points], [e.grounded for _, e in points], "o-", label=name)
    cold.set(title="4. cold start (val)", xlabel="RL step", ylabel="grounded success")
    cold.set_ylim(0, 1.05)
    cold.legend(fontsize=7)
    fig.tight_layout()
    partial = path.with_name(path.stem + ".partial.png")
    fig.savefig(partial, dpi=90)
    plt.close(fig)
    partial.replace(path)


def _atomic(path: Path, text: str) -> None:
    """Written beside, then renamed: a crash never leaves half a report."""
    partial = path.with_suffix(path.suffix + ".partial")
    partial.write_text(text, encoding="utf-8")
    partial.replace(path)


def write_and_show(write_all: Callable[[], Sequence[Path]], out: Path) -> int:
    """Writes a report with `write_all`, prints its first file and the paths written; a write
    that fails is one line and the failure exit status (what the lab's commands return)."""
    try:
        paths = write_all()
    except OSError as exc:
        print(f"error: cannot write the report to {out}: {exc}", file=sys.stderr)
        return EXIT_FAILED
    print()
    print(paths[0].read_text(encoding="utf-8"))
    print("wrote " + ", ".join(str(p) for p in paths))
    return 0
