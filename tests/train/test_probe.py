"""training.probe: the base-rate probe's sample, its statistics, its verdicts and its command."""

from __future__ import annotations

import json
from collections import Counter
from itertools import product
from math import comb

import pytest

from env.generation.splits import split_assignment
from training.data_order import plan_data
from training.probe import (
    ProbeResult,
    judge,
    main,
    probe_seeds,
    spread_probability,
)
from training.runs import load_run_config


def result(**changes: object) -> ProbeResult:
    base = {
        "model": "m",
        "k": 8,
        "scenarios": 96,
        "episodes": 768,
        "success": 0.3,
        "by_level": {},
        "by_label": {},
        "spread_share": 0.5,
        "spread_at": {8: 0.5, 16: 0.7},
        "no_error_share": 0.2,
        "format_error_rate": 0.0,
        "mean_tool_calls": 12.0,
        "verdict": "",
    }
    return ProbeResult(**{**base, **changes})  # type: ignore[arg-type]


def test_the_sample_covers_every_level_and_root_cause_of_the_pool_evenly():
    run = load_run_config("binary-01")
    plan = plan_data(run)
    pool = {seed for phase in plan.phases for seed in phase.seeds}
    seeds = probe_seeds(plan, 96, "train")
    cells = Counter(
        (split_assignment("train", s).difficulty, split_assignment("train", s).label) for s in seeds
    )
    assert len(seeds) == len(set(seeds)) == 96 and set(seeds) <= pool
    assert len(cells) == 36 and max(cells.values()) - min(cells.values()) <= 1
    first = {split_assignment("train", s).label for s in seeds[:12]}
    assert len(first) == 12  # a dozen picks already name a dozen causes
    assert probe_seeds(plan, 96, "train") == seeds  # a pure function of the run


@pytest.mark.parametrize(("k", "c"), [(8, 0), (8, 1), (8, 4), (8, 8), (4, 2)])
def test_spread_up_to_k_is_the_unbiased_estimate_of_a_subgroup_that_disagrees(k, c):
    for n in range(2, k + 1):  # every n-subset of the k outcomes, counted directly
        outcomes = [True] * c + [False] * (k - c)
        agree = sum(
            all(outcomes[i] for i in subset) or not any(outcomes[i] for i in subset)
            for subset in _subsets(k, n)
        )
        assert spread_probability(c, k, n) == pytest.approx(1 - agree / comb(k, n))


def _subsets(k: int, n: int):
    return [s for s in product(range(k), repeat=n) if list(s) == sorted(set(s))]


def test_beyond_k_spread_is_the_plug_in_binomial_and_matches_the_issue_figures():
    assert spread_probability(1, 4, 8) == pytest.approx(1 - 0.25**8 - 0.75**8)
    assert round(1 - 0.02**8 - 0.98**8, 2) == 0.15  # issue 37: 0.15 at 2%, 0.34 at 5%
    assert round(1 - 0.05**8 - 0.95**8, 2) == 0.34
    assert spread_probability(4, 8, 16) == pytest.approx(1 - 2 * 0.5**16)


def test_the_verdicts_follow_the_stated_thresholds():
    assert judge(result(success=0.01)).verdict == "warm start needed"
    low = judge(result(success=0.1))
    assert low.verdict == "low base rate: oversample 2" and "oversample = 2" in low.advice[0]
    assert judge(result(success=0.5)).verdict == "ready: 8 x 8"
    assert judge(result(success=0.95)).verdict == "saturated"
    few = judge(result(success=0.3, spread_share=0.1))
    assert any("oversample = 2" in line for line in few.advice)
    lazy = judge(result(success=0.3, no_error_share=0.8))
    assert any("no_error verdicts" in line for line in lazy.advice)


def test_the_command_probes_the_auditor_offline_and_writes_its_verdict(tmp_path, capsys):
    out = tmp_path / "probe"
    code = main(["--run", "binary-01", "--model", "auditor", "--k", "2", "--scenarios", "3",
                 "--out", str(out), "--concurrency", "2"])  # fmt: skip
    printed = capsys.readouterr().out

    assert code == 0
    saved = json.loads((out / "probe.json").read_text())
    assert saved["scenarios"] == 3 and saved["episodes"] == 6 and saved["k"] == 2
    assert saved["format_error_rate"] == 0.0 and saved["success"] > 0.5
    assert "probe of auditor: 3 train scenarios x k=2" in printed and "verdict:" in printed
    assert (out / "episodes.jsonl").is_file()  # the eval run it played, resumable


def test_a_probe_of_one_sample_is_one_line_and_status_2(tmp_path, capsys):
    code = main(["--run", "binary-01", "--model", "auditor", "--k", "1", "--out", str(tmp_path)])
    assert code == 2
    assert (
        capsys.readouterr().err.strip() == "error: --k must be at least 2: spread needs two samples"
    )
