"""The run directory: durable JSONL lines, repair of a torn last line, and run.json checks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent.messages import transcript
from eval.episode_log import (
    EpisodeLine,
    EpisodeLog,
    RunLock,
    RunLogError,
    check_run_config,
    read_episodes,
)


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


def test_readers_see_each_scenario_sample_once_and_the_file_keeps_every_line(tmp_path):
    path = tmp_path / "episodes.jsonl"
    write(path, 2)
    log = EpisodeLog(path)
    log.append(line(0).model_copy(update={"success": False}))  # a second writer's duplicate
    log.close()

    lines = read_episodes(path)
    assert [item.key for item in lines] == [("eval-100000", 0), ("eval-100000", 1)]
    assert lines[0].success  # the first line written wins
    assert path.read_text().count("\n") == 3


def test_run_json_is_written_with_the_first_line_not_before(tmp_path):
    log = EpisodeLog(tmp_path / "run" / "episodes.jsonl", CONFIG)
    assert not (tmp_path / "run").exists()

    log.append(line(0))
    log.close()

    assert json.loads((tmp_path / "run" / "run.json").read_text())["k"] == 4
    assert check_run_config(tmp_path / "run", CONFIG, write=False) == []


def test_a_second_lock_on_a_run_directory_is_refused_in_one_line(tmp_path):
    with RunLock(tmp_path), pytest.raises(RunLogError, match="being written by another run"):
        RunLock(tmp_path).__enter__()
    with RunLock(tmp_path):  # released: free again
        pass


def test_a_reader_never_repairs_a_torn_line_under_a_live_writer(tmp_path):
    path = tmp_path / "episodes.jsonl"
    write(path, 1)
    with path.open("ab") as out:
        out.write(line(1).model_dump_json().encode()[:40])  # being written right now
    torn = path.read_bytes()

    with RunLock(tmp_path):
        assert len(read_episodes(path)) == 1
        assert path.read_bytes() == torn
    assert len(read_episodes(path)) == 1
    assert path.read_bytes() != torn


def test_a_lock_on_a_new_directory_leaves_nothing_behind_when_unused(tmp_path):
    with RunLock(tmp_path / "new"):
        assert (tmp_path / "new").is_dir()

    assert not (tmp_path / "new").exists()


def test_the_transcript_is_capped_per_message_and_as_a_whole_and_names_tool_results():
    call = {"id": "c1", "type": "function", "function": {"name": "get_invoice", "arguments": "{}"}}
    messages = [
        {"role": "system", "content": "s"},
        {"role": "user", "content": "x" * 5000},
        {"role": "assistant", "content": "", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": "{}"},
    ]

    entries, truncated = transcript(messages)
    assert truncated and len(entries[1]["content"]) == 4000
    assert entries[2]["tool_calls"] == [{"id": "c1", "name": "get_invoice", "arguments": "{}"}]
    tool = {"role": "tool", "content": "{}", "tool_call_id": "c1", "name": "get_invoice"}
    assert entries[3] == tool
    head, cut = transcript(messages, total_chars=4100)
    assert cut and [e["role"] for e in head] == ["system", "user"]
    assert transcript(messages[:1]) == ([{"role": "system", "content": "s"}], False)


def test_invalid_utf8_in_a_run_file_is_a_one_line_error(tmp_path):
    path = tmp_path / "episodes.jsonl"
    path.write_bytes(line(0).model_dump_json().encode() + b"\n\xff\xfe{\n")

    with pytest.raises(RunLogError, match="line 2 is not an episode line"):
        read_episodes(path)


def test_the_summary_counts_a_duplicated_episode_once_and_says_what_was_planned(tmp_path):
    from eval.summary import identical_samples_note, summarize

    same = [line(0).model_copy(update={"reply_digest": "a"}) for _ in range(2)]
    lines = [*same, line(1).model_copy(update={"reply_digest": "a", "end_reason": "submitted"})]

    summary = summarize(lines, k=2, stamp={}, planned=4)
    assert (summary["episodes"], summary["recorded_episodes"], summary["planned_episodes"]) == (
        2,
        2,
        4,
    )
    assert summary["incomplete_episodes"] == 2
    assert summary["identical_samples"] and "pass^1" in identical_samples_note(summary)
    varied = [lines[0], line(1).model_copy(update={"reply_digest": "b"})]
    assert not summarize(varied, k=2, stamp={})["identical_samples"]
    assert not summarize(lines, k=1, stamp={})["identical_samples"]
