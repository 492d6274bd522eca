"""The lab's figure: one PNG with a panel per experiment."""

from __future__ import annotations

from pathlib import Path

from training.lab.experiments import LabResults, estimator_runs, lambda_runs


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
