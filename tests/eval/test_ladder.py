"""The difficulty ladder holds its shape: shallow rungs score less where the world asks for depth.

The rungs play a subset of eval (the first scenarios of each level, and eval's `no_error`
scenarios, or `eval-twins` where that split exists) through `eval.run.evaluate` and are graded
by `eval.grader`, as `python -m eval.ladder` does.
"""

from __future__ import annotations

import contextlib
import json
import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent.ladder import LADDER, complaint_label
from agent.registry import BUILTINS, build_policy, resolve_model
from env.generation.generator import generate
from env.generation.splits import SPLITS, split_assignment, split_seeds
from env.labels import DIFFICULTIES
from env.ledger_env import DEFAULT_TOOL_BUDGET, LedgerEnv
from eval.ladder import (
    TWINS,
    TWINS_ABSENT,
    Played,
    main,
    measure,
    play,
    render_markdown,
    twin_classes,
)
from tests.agent.test_auditor import _RESULTS, _mutated

PER_LEVEL = 10  # eval scenarios of each level, in seed order
NO_ERROR = 10  # no_error scenarios for the credit check
REPO = Path(__file__).resolve().parents[2]
SHALLOW = ("complaint-guess", "one-look", "signal-only")
CREDITING = ("one-look", "signal-only")  # the shallow rungs that draft credit notes


def _level_seeds() -> list[int]:
    seeds: list[int] = []
    for level in DIFFICULTIES:
        same = [s for s in split_seeds("eval") if split_assignment("eval", s).difficulty == level]
        seeds += same[:PER_LEVEL]
    return sorted(seeds)


def _no_error_scenarios() -> tuple[str, list]:
    """Twins of eval's faulted scenarios where the split exists, else eval's no_error ones."""
    if TWINS in SPLITS:  # twins of faulted eval scenarios first (a twin has its eval seed)
        eval_seeds = set(split_seeds("eval"))
        seeds = split_seeds(TWINS)
        faulted = [s for s in seeds if s in eval_seeds]
        faulted = [s for s in faulted if split_assignment("eval", s).label != "no_error"]
        return TWINS, [generate(TWINS, s) for s in (faulted or seeds)[:NO_ERROR]]
    seeds = [s for s in split_seeds("eval") if split_assignment("eval", s).label == "no_error"]
    return "eval", [generate("eval", s) for s in seeds[:NO_ERROR]]


def _results(tmp: str) -> dict[str, dict[str, dict]]:
    levels = [generate("eval", seed) for seed in _level_seeds()]
    split, no_error = _no_error_scenarios()
    classes = twin_classes(no_error) if split == TWINS else {}
    out: dict[str, dict[str, dict]] = {"levels": {}, "no_error": {}}
    for rung in (r.name for r in LADDER):
        lines = play(rung, "eval", levels, Path(tmp) / f"{rung}-levels")
        out["levels"][rung] = measure(Played(rung, "eval", tuple(lines), {}))
        lines = play(rung, split, no_error, Path(tmp) / f"{rung}-no-error")
        out["no_error"][rung] = measure(Played(rung, split, tuple(lines), classes))
    return out


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, dict]]:
    return _results(str(tmp_path_factory.mktemp("ladder")))


def _at(block: dict, level: str) -> float:
    return float(block["by_level"][level]["estimate"])


def test_shallow_rungs_score_lower_at_l2_and_l3_than_at_l1_or_than_the_auditor(results):
    auditor = results["levels"]["auditor"]
    for rung in SHALLOW:
        block = results["levels"][rung]
        for level in ("L2", "L3"):
            assert _at(block, level) < max(_at(block, "L1"), _at(auditor, level) - 0.5), (
                rung,
                level,
            )


def test_the_signal_without_its_separator_is_enough_at_l1_only(results):
    block = results["levels"]["signal-only"]
    assert _at(block, "L1") >= 0.25
    for level in ("L2", "L3"):
        assert _at(block, level) <= _at(block, "L1") - 0.2, level


def test_the_auditor_solves_what_the_shallow_rungs_miss(results):
    auditor = results["levels"]["auditor"]
    assert all(_at(auditor, level) >= 0.9 for level in DIFFICULTIES)
    for rung in SHALLOW:
        assert results["levels"][rung]["pass1"]["estimate"] <= 0.5, rung


def test_crediting_shallow_rungs_score_zero_where_nothing_is_owed_yet_they_credit(results):
    for rung in CREDITING:
        wrongly = results["no_error"][rung]["pass1_where_no_error_credited"]
        assert wrongly["n"] == 0 or wrongly["estimate"] == 0.0, rung
    signal = results["no_error"]["signal-only"]["no_error_credited"]
    assert signal["count"] >= NO_ERROR // 4  # a rung fooled by the look-alikes, not a vacuum
    assert results["no_error"]["auditor"]["no_error_credited"]["count"] == 0


def test_the_auditor_without_credit_notes_is_right_only_where_nothing_is_owed(results):
    levels = results["levels"]["auditor-no-credit"]["by_class"]
    assert all(block["estimate"] == 0.0 for name, block in levels.items() if name != "no_error")
    assert results["no_error"]["auditor-no-credit"]["pass1"]["estimate"] == 1.0


def test_every_rung_is_a_registry_builtin_eval_run_can_name():
    for rung in LADDER:
        assert rung.name in BUILTINS
        target = resolve_model(rung.name)
        assert target.kind == "program"
        assert build_policy(target).name == rung.name


def test_the_complaint_keywords_name_a_class_or_abstain():
    assert complaint_label("We paid INV-AB12CD twice.") == "duplicate_payment"
    assert complaint_label("Our trial was meant to be free.") == "trial_period_charged"
    assert complaint_label("Can you audit our account? Something seems off.") == "no_error"


def test_the_command_prints_the_table_and_writes_json_and_markdown(tmp_path, capsys):
    out = tmp_path / "ladder"
    assert main(["--splits", "heldout", TWINS, "--limit", "2", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    report = json.loads((out / "ladder.json").read_text(encoding="utf-8"))
    assert printed == (out / "ladder.md").read_text(encoding="utf-8")
    assert all(f"`{rung.name}`" in printed for rung in LADDER)
    assert set(report["splits"]["heldout"]) == {rung.name for rung in LADDER}
    if TWINS in SPLITS:
        assert TWINS in report["splits"] and not report["notes"]
    else:
        assert report["notes"] == [TWINS_ABSENT] and TWINS_ABSENT in printed


def _on_a_terminal(*args: str) -> str:
    """`python -m eval.ladder ARGS` with stdout and stderr on one pseudo-terminal, as a person
    runs it (progress bars draw only there); everything the terminal received."""
    main_fd, child_fd = pty.openpty()
    env = {**os.environ, "PYTHONPATH": str(REPO), "COLUMNS": "120"}
    child = subprocess.Popen(
        [sys.executable, "-m", "eval.ladder", *args],
        cwd=REPO, env=env, stdin=child_fd, stdout=child_fd, stderr=child_fd,
    )  # fmt: skip
    os.close(child_fd)
    received = b""
    with contextlib.suppress(OSError):  # EIO: the child closed the terminal
        while chunk := os.read(main_fd, 1 << 16):
            received += chunk
    os.close(main_fd)
    assert child.wait(timeout=600) == 0, received[-2000:]
    return received.decode("utf-8", errors="replace")


def test_on_a_terminal_the_table_is_not_pushed_down_by_finished_progress_bars():
    screen = _on_a_terminal("--splits", "eval", "heldout", "--limit", "2", "--concurrency", "1")
    before, title, _ = screen.partition("# Difficulty ladder")
    assert title, screen[-2000:]
    assert "\n" not in before, f"{before.count(chr(10))} lines before the table: {before!r}"


def test_a_limit_past_a_split_plays_the_whole_split_and_says_so(capsys):
    assert main(["--splits", "heldout", "--limit", "51", "--concurrency", "1"]) == 0
    assert "note: heldout holds 50 scenarios; --limit 51 plays all 50" in capsys.readouterr().err


def test_an_unknown_split_is_one_line(capsys):
    assert main(["--splits", "nowhere"]) == 2
    assert "unknown split 'nowhere'" in capsys.readouterr().err


def test_the_table_carries_the_twins_columns_and_classes_when_twins_were_played(results):
    rungs = [{"name": r.name, "depth": r.depth} for r in LADDER]
    stamp = {"ledgergym_version": "x", "commit": "c", "generator": "g", "tool_contract": "t"}
    stamp |= {"date": "d", "limit": None}
    splits = {"eval": results["levels"], TWINS: results["no_error"]}
    text = render_markdown({"stamp": stamp, "rungs": rungs, "splits": splits, "notes": []})
    assert f"{TWINS} pass^1" in text and "twins credited" in text
    assert f"## {TWINS}: pass^1 per class" in text
    row = next(line for line in text.splitlines() if line.startswith("| `signal-only`"))
    credited = results["no_error"]["signal-only"]["no_error_credited"]
    assert f"{credited['count']}/{credited['n']}" in row


def test_a_twin_is_tallied_under_the_class_of_the_eval_scenario_it_comes_from():
    seeds = [s for s in split_seeds("eval") if split_assignment("eval", s).label != "no_error"]
    scenario = generate("eval", seeds[0])
    assert twin_classes([scenario]) == {
        scenario.scenario_id: split_assignment("eval", seeds[0]).label
    }


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_no_rung_raises_whatever_the_tools_answer(data: st.DataObject) -> None:
    rung = data.draw(st.sampled_from([r for r in LADDER if r.name != "auditor"]))
    scenario = generate("eval", data.draw(st.sampled_from(_level_seeds())))
    env = LedgerEnv(scenario)
    program = rung.program(scenario)
    calls = [next(program)]
    with pytest.raises(StopIteration):
        while len(calls) <= DEFAULT_TOOL_BUDGET:
            real = env.call(calls[-1].name, json.dumps(calls[-1].arguments))
            answer = _mutated(real, data) if data.draw(st.booleans()) else data.draw(_RESULTS)
            calls.append(program.send(answer))
    env.close()
    assert len(calls) <= DEFAULT_TOOL_BUDGET
    assert calls[-1].name == "submit_findings"
