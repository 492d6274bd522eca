"""`python -m experiments.reward_lab.recipe` end to end at the tiny scale, its intervals, and its
plan: every decision's arms differ from their reference in the knob the decision names."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path

import pytest

from experiments.reward_lab.intervals import interval, paired, t975
from experiments.reward_lab.recipe import main
from experiments.reward_lab.recipe_plan import DECISIONS, identity, shrunk

TITLES = ("## 1. Cold start", "## 2. Group size", "## 3. Tool cost", "## 4. Std division")


def test_the_t_interval_of_five_values() -> None:
    values = [0.1, 0.2, 0.3, 0.4, 0.5]  # mean 0.3, sd 0.158114, se 0.0707107
    iv = interval(values)
    assert iv.mean == pytest.approx(0.3)
    assert iv.high - iv.mean == pytest.approx(2.776 * 0.0707107, rel=1e-4)
    assert iv.low < 0.3 < iv.high and iv.n == 5


def test_the_t_quantiles_agree_with_scipy() -> None:
    stats = pytest.importorskip("scipy.stats")
    for df in (1, 2, 4, 9, 30):
        assert t975(df) == pytest.approx(stats.t.ppf(0.975, df), abs=1e-3)


def test_a_paired_difference_removes_what_the_seeds_share() -> None:
    a, b = [0.50, 0.70, 0.90], [0.40, 0.60, 0.80]
    assert interval(a).low < interval(b).high  # the arms' intervals overlap
    diff = paired(a, b)
    assert diff.mean == pytest.approx(0.1) and diff.excludes_zero()
    with pytest.raises(ValueError):
        paired([1.0], [1.0, 2.0])
    assert interval([0.4]).low == interval([0.4]).high == 0.4


def test_each_decision_changes_only_its_own_knob() -> None:
    for decision in DECISIONS:
        first = decision.arms[0]
        for arm in decision.arms[1:]:
            fields = set(first.__dataclass_fields__) - {"name"}
            changed = {f for f in fields if getattr(first, f) != getattr(arm, f)}
            allowed = {
                "cold_start": {"init"},
                "groups": {"groups", "group_size", "gather"},
                "tool_cost": {"optimiser", "drop_tied", "max_grad_norm", "reward"},
                "std": {"estimator", "optimiser"},
            }[decision.key]
            assert changed and changed <= allowed, (decision.key, arm.name, changed)
    same_rollouts = [a for a in DECISIONS[1].arms if not a.dynamic]
    assert len({a.groups * a.group_size for a in same_rollouts}) == 1


def test_arms_two_decisions_share_run_once() -> None:
    arms = [a for d in DECISIONS for a in d.arms]
    assert len({identity(a) for a in arms}) == len(arms) - 1  # weak 8 x 8 is in 1 and 2
    small = shrunk(DECISIONS[1].arms[2], 4)
    assert small.dynamic and (small.groups, small.gather) == (2, 3)
    assert shrunk(replace(DECISIONS[1].arms[0], groups=1), 4).groups == 1


def test_the_tiny_scale_writes_every_table(tmp_path: Path, capsys) -> None:
    assert main(["--scale", "tiny", "--out", str(tmp_path)]) == 0
    report = (tmp_path / "report.md").read_text(encoding="utf-8")
    printed = capsys.readouterr().out
    assert all(title in report and title in printed for title in TITLES)
    summary = json.loads((tmp_path / "summary.json").read_text(encoding="utf-8"))
    assert summary["scale"] == "tiny" and summary["seeds"] == [0]
    arms = summary["decisions"]["groups"]["arms"]
    assert len(arms) == 4
    dynamic = arms["8 × 8, gather 12, keep 8 with spread"]
    assert dynamic["settings"]["gather"] == 12
    rollouts = dynamic["metrics"]["rollouts"]["per_seed"][0]
    assert rollouts == 3 * 8  # tiny: gathers 3 groups of 8 for its one step
    tool = summary["decisions"]["tool_cost"]["arms"]["ART per-trajectory AdamW, filter"]
    assert tool["metrics"]["tied_share"]["per_seed"] == [0.0]
    assert not math.isnan(summary["seconds"]) and not list(tmp_path.glob("*.partial"))


@pytest.mark.parametrize("argv", [["--seeds", "0"], ["--first-seed", "-1"], ["--scale", "big"]])
def test_a_bad_argument_is_one_error_line(argv: list[str], capsys) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.strip().count("\n") == 0
