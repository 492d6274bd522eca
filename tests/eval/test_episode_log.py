"""The run directory: durable JSONL lines, repair of a torn last line, and run.json checks."""

from __future__ import annotations

from pathlib import Path

import pytest

from eval.episode_log import EpisodeLine, EpisodeLog, RunLogError, check_run_config, read_episodes


def line(sample: int) -> EpisodeLine:
    return EpisodeLine(
        scenario_id="eval-100000",
        sample=sample,
        split="eval",
        seed=100000,
        label="no_error",
        difficulty="L1",
        policy="test",
        success=True,
    )


def write(path: Path, count: int) -> None:
    log = EpisodeLog(path)
    for sample in range(count):
        log.append(line(sample))
    log.close()


CONFIG = {"model": "m", "split": "eval", "k": 4, "tool_contract": "t1", "generator": "g1"}


def test_appended_lines_read_back_in_order(tmp_path):
    write(tmp_path / "episodes.jsonl", 3)

    assert [item.key for item in read_episodes(tmp_path / "episodes.jsonl")] == [
        ("eval-100000", 0),
        ("eval-100000", 1),
        ("eval-100000", 2),
    ]


def test_a_torn_last_line_is_dropped_and_the_file_rewritten_without_it(tmp_path):
    path = tmp_path / "episodes.jsonl"
    write(path, 2)
    complete = path.read_bytes()
    with path.open("ab") as out:
        out.write(line(2).model_dump_json().encode()[:40])

    assert len(read_episodes(path)) == 2
    assert path.read_bytes() == complete


def test_a_last_line_missing_only_its_newline_is_kept(tmp_path):
    path = tmp_path / "episodes.jsonl"
    path.write_text(line(0).model_dump_json() + "\n" + line(1).model_dump_json())

    assert len(read_episodes(path)) == 2
    assert path.read_text().endswith("}\n")


def test_a_corrupt_line_in_the_middle_is_refused_not_dropped(tmp_path):
    path = tmp_path / "episodes.jsonl"
    path.write_text(line(0).model_dump_json() + "\n{oops\n" + line(1).model_dump_json() + "\n")

    with pytest.raises(RunLogError, match="line 2"):
        read_episodes(path)
    assert path.read_text().count("\n") == 3


def test_a_missing_log_is_an_empty_run(tmp_path):
    assert read_episodes(tmp_path / "episodes.jsonl") == []


def test_resuming_with_another_k_is_refused_in_one_line(tmp_path):
    check_run_config(tmp_path, CONFIG)

    with pytest.raises(RunLogError, match=r"k 4 -> 2") as refused:
        check_run_config(tmp_path, {**CONFIG, "k": 2})
    assert "\n" not in str(refused.value)


def test_force_replaces_the_run_config(tmp_path):
    check_run_config(tmp_path, CONFIG)

    assert check_run_config(tmp_path, {**CONFIG, "model": "other"}, force=True) == []
    assert check_run_config(tmp_path, {**CONFIG, "model": "other"}) == []


def test_a_changed_generator_only_warns(tmp_path):
    check_run_config(tmp_path, CONFIG)

    (warning,) = check_run_config(tmp_path, {**CONFIG, "generator": "g2"})
    assert "generator g1" in warning and "g2" in warning
