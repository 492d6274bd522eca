"""compare.py prints the paired figures when it is given run directories with their episodes."""

from __future__ import annotations

import shutil
from pathlib import Path

from eval import compare
from eval.episode_log import EpisodeLog, read_episodes
from eval.summary import summarize, write_summary
from tests.eval.report_fixtures import grade, line


def _run(directory: Path, successes: list[bool]) -> Path:
    log = EpisodeLog(directory / "episodes.jsonl")
    for index, success in enumerate(successes):
        log.append(line(f"s{index}", success=success, grade=grade(success)))
    log.close()
    lines = read_episodes(directory / "episodes.jsonl")
    write_summary(directory, summarize(lines, k=1, stamp={"model": directory.name}))
    return directory


def test_compare_adds_the_paired_bootstrap_and_mcnemar_for_run_directories(tmp_path, capsys):
    before = _run(tmp_path / "before", [True, False, False, False, False, False])
    after = _run(tmp_path / "after", [True, True, True, True, True, False])
    assert compare.main([str(before), str(after)]) == 0
    out = capsys.readouterr().out
    assert "| overall (n=6/6) pass^1 |" in out  # the unpaired table is still there
    assert "Paired over 6 shared scenarios" in out
    assert "pass^1 difference +0.667" in out
    assert "only by fixture (before) 0, only by fixture (after) 4" in out and "p = 0.125" in out


def test_compare_of_bare_summaries_says_why_there_are_no_paired_figures(tmp_path, capsys):
    for name in ("a", "b"):
        run = _run(tmp_path / name, [True, False])
        (tmp_path / "copies").mkdir(exist_ok=True)
        shutil.copy(run / "summary.json", tmp_path / "copies" / f"{name}.json")
    assert (
        compare.main([str(tmp_path / "copies" / "a.json"), str(tmp_path / "copies" / "b.json")])
        == 0
    )
    assert "No paired figures:" in capsys.readouterr().out
