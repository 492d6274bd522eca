"""`eval/run.py` end to end, as a subprocess, over the real litellm and openai client paths.

A `ScriptedOpenAIServer` in this process replays each scenario's reference solution (looked up
by the complaint text), with a malformed-arguments call and an unknown tool slipped into some
episodes. The heavy runs import litellm in a child process (several seconds of CPU each).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import ledgergym
from env.generation.generator import generate
from env.generation.splits import split_seeds
from env.scenario import reveal_truth
from eval.episode_log import RunLock, check_run_config
from tests.support.scripted_server import ScriptedOpenAIServer, text_turn, tool_call_turn

REPO = Path(__file__).resolve().parents[2]
LIMIT, K = 6, 2
ALL_PAIRS = {(f"eval-{seed}", sample) for seed in split_seeds("eval", LIMIT) for sample in range(K)}
API_KEYS = ("ANTHROPIC_API_KEY", "DEEPSEEK_API_KEY", "OPENAI_API_KEY")


def scripts() -> dict[str, list[dict[str, Any]]]:
    """Complaint text -> the assistant turns of that scenario's episode."""
    by_complaint = {}
    for index, seed in enumerate(split_seeds("eval", LIMIT)):
        scenario = generate("eval", seed)
        turns = [tool_call_turn(s.name, s.arguments) for s in reveal_truth(scenario).reference]
        if index % 2 == 0:
            turns.insert(0, tool_call_turn("get_customer", '{"customer_id": '))
        if index % 3 == 0:
            turns.insert(0, tool_call_turn("lookup_everything", {"query": "all"}))
        by_complaint[scenario.complaint] = turns
    return by_complaint


def replay_by_complaint(body: dict[str, Any]) -> dict[str, Any]:
    messages = body["messages"]
    complaint = next(m["content"] for m in messages if m["role"] == "user")
    turn = sum(1 for m in messages if m["role"] == "assistant")
    return SCRIPTS[complaint][turn]


SCRIPTS = scripts()


def child_env(**extra: str) -> dict[str, str]:
    """PYTHONPATH: `python eval/run.py` imports the project as installed (pip install -e); this
    stands in for the install when it points at another checkout, as in a git worktree."""
    env = {name: value for name, value in os.environ.items() if name not in API_KEYS}
    return {**env, "PYTHONPATH": str(REPO), "PYTHONUNBUFFERED": "1", **extra}


def command(*args: str | Path) -> list[str]:
    return [sys.executable, str(REPO / "eval" / "run.py"), *map(str, args)]


def run_cli(*args: str | Path, cwd: Path = REPO, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command(*args), cwd=cwd, env=child_env(**env), capture_output=True, text=True, timeout=600
    )


def episodes(run_dir: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run_dir / "episodes.jsonl").read_text().splitlines()]


def summary(run_dir: Path) -> dict[str, Any]:
    return dict(json.loads((run_dir / "summary.json").read_text()))


def assert_all_passed(result: dict[str, Any], scenarios: int, k: int) -> None:
    assert (result["scenarios"], result["episodes"], result["errors"]) == (
        scenarios,
        scenarios * k,
        0,
    )
    assert result["overall"]["pass1"]["estimate"] == 1.0
    assert result["overall"]["passk"]["estimate"] == 1.0
    assert result["false_reversal"]["count"] == result["hallucination"]["count"] == 0


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_a_litellm_run_against_the_scripted_server_passes_every_episode(tmp_path):
    with ScriptedOpenAIServer(replay_by_complaint) as server:
        done = run_cli(
            "--model", "litellm:openai/scripted", "--base-url", server.base_url,
            "--split", "eval", "--limit", LIMIT, "--k", K, "--concurrency", 3,
            "--out", tmp_path, cwd=tmp_path, OPENAI_API_KEY="sk-scripted",
        )  # fmt: skip
        models = {request["model"] for request in server.requests}

    assert done.returncode == 0, done.stderr[-2000:]
    assert_all_passed(summary(tmp_path), LIMIT, K)
    lines = episodes(tmp_path)
    assert {(line["scenario_id"], line["sample"]) for line in lines} == ALL_PAIRS
    assert sum(line["tool_errors"] for line in lines) == 2 * (3 + 2)  # injected, per sample
    assert all(
        line["prompt_tokens"] > 0 and line["policy"] == "litellm:openai/scripted" for line in lines
    )
    assert models == {"scripted"}
    assert summary(tmp_path)["stamp"]["tool_contract"] and "summary.md" in done.stdout
    assert summary(tmp_path)["stamp"]["ledgergym_version"] == ledgergym.__version__


@pytest.fixture(scope="module")
def resumed_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """A run over the openai client killed with SIGKILL midway, torn, then resumed."""
    out = tmp_path_factory.mktemp("openai-run") / "run"  # its stderr file beside, not in it
    path = out / "episodes.jsonl"
    with ScriptedOpenAIServer(replay_by_complaint, latency_s=0.1) as server:
        args = ("--base-url", server.base_url, "--model-name", "scripted", "--limit", LIMIT,
                "--k", K, "--concurrency", 2, "--out", out)  # fmt: skip
        with (out.parent / "killed.err").open("w") as err:
            child = subprocess.Popen(command(*args), env=child_env(), stdout=err, stderr=err)
            deadline = time.monotonic() + 300
            while time.monotonic() < deadline and child.poll() is None:
                if path.exists() and path.read_bytes().count(b"\n") >= 2:
                    break
                time.sleep(0.05)
            child.send_signal(signal.SIGKILL)
            child.wait(timeout=30)
        before = path.read_text().splitlines()
        with path.open("a") as torn:  # as if killed in the middle of a write
            torn.write('{"scenario_id": "eval-100004", "sample": 1, "spl')
        server.latency_s = 0.0
        resumed = run_cli(*args)
    yield {"out": out, "before": before, "resumed": resumed}


def test_a_killed_run_resumes_to_completion_without_duplicates_or_losses(resumed_run):
    before, resumed = resumed_run["before"], resumed_run["resumed"]
    after = (resumed_run["out"] / "episodes.jsonl").read_text().splitlines()

    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert 2 <= len(before) < len(ALL_PAIRS), "the kill did not land midway"
    assert "resuming" in resumed.stderr
    assert after[: len(before)] == before  # every complete line survived, in place
    keys = [(json.loads(line)["scenario_id"], json.loads(line)["sample"]) for line in after]
    assert len(keys) == len(set(keys)) and set(keys) == ALL_PAIRS


def test_an_openai_client_run_summary_counts_every_episode(resumed_run):
    result = summary(resumed_run["out"])

    assert_all_passed(result, LIMIT, K)
    assert result["stamp"]["model"] == "scripted" and result["stamp"]["kind"] == "openai"
    assert set(result["by_difficulty"]) <= {"L1", "L2", "L3"}
    assert sum(block["n"] for block in result["by_root_cause"].values()) == LIMIT
    assert (resumed_run["out"] / "summary.md").read_text().startswith("# scripted on eval (k=2)")


def test_a_server_that_refuses_the_model_stops_the_run_and_keeps_what_was_written(
    resumed_run, tmp_path
):
    out = tmp_path / "run"
    shutil.copytree(resumed_run["out"], out)
    written = (out / "episodes.jsonl").read_text()
    stale = ScriptedOpenAIServer(lambda body: text_turn("x"), strict_model=True, model_name="v2")
    with stale:
        args = ["--base-url", stale.base_url, "--model-name", "scripted", "--k", K]
        done = run_cli(*args, "--limit", LIMIT + 1, "--out", out)

    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines()[-1].startswith("error: ")
    assert "does not serve this model" in done.stderr
    assert (out / "episodes.jsonl").read_text() == written


def test_reference_passes_every_sample_and_runs_as_a_module(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "eval.run", "--model", "reference", "--k", "4", "--limit", "20",
         "--out", str(tmp_path)],
        cwd=REPO, env=child_env(), capture_output=True, text=True, timeout=600,
    )  # fmt: skip

    assert done.returncode == 0, done.stderr[-2000:]
    assert_all_passed(summary(tmp_path), 20, 4)


USER_MISTAKES = {
    "unknown alias": (["--model", "gpt-17"], "unknown model 'gpt-17'; known: claude-sonnet"),
    "missing key": (["--model", "claude-sonnet"], "ANTHROPIC_API_KEY"),
    "unreachable endpoint": (
        ["--base-url", f"http://127.0.0.1:{closed_port()}/v1", "--model-name", "m"],
        "cannot reach http://127.0.0.1:",
    ),
    "open-ended split": (["--model", "reference", "--split", "train"], "pass a limit"),
}


@pytest.mark.parametrize("mistake", list(USER_MISTAKES))
def test_a_user_mistake_exits_2_with_one_line_and_no_traceback(mistake, tmp_path):
    args, expected = USER_MISTAKES[mistake]
    done = run_cli(*args, "--out", tmp_path / "run")

    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [done.stderr.strip()]
    assert done.stderr.startswith("error: ") and expected in done.stderr
    assert not (tmp_path / "run").exists()


def test_resuming_with_another_k_is_refused_in_one_line(tmp_path):
    check_run_config(tmp_path, {"model": "reference", "split": "eval", "k": 2})

    done = run_cli("--model", "reference", "--k", 3, "--limit", 1, "--out", tmp_path)

    assert done.returncode == 2
    assert done.stderr.strip() == done.stderr.strip().splitlines()[0]
    assert "k 2 -> 3" in done.stderr and "--force" in done.stderr


# ---- failure semantics over real HTTP (eval/README.md): every planned episode ends graded,
# as an error line, or incomplete; short timeouts and backoffs keep these fast.
FAST = ("--backoff", "0.02", "--unreachable-after", "0.5")


def run_here(capsys: pytest.CaptureFixture[str], *args: str | Path | int) -> tuple[int, str]:
    """`eval/run.py` in this process (litellm stays imported): (exit status, stderr)."""
    from eval.run import main

    code = main([str(arg) for arg in args])
    return code, capsys.readouterr().err


def test_malformed_calls_returned_as_text_are_graded_and_identical_samples_are_flagged(
    tmp_path, capsys
):
    with ScriptedOpenAIServer(replay_by_complaint, malformed_calls="text") as server:
        code, stderr = run_here(
            capsys, "--base-url", server.base_url, "--model-name", "scripted", "--limit", LIMIT,
            "--k", K, "--out", tmp_path, *FAST,
        )  # fmt: skip

    assert code == 0, stderr[-2000:]
    result, lines = summary(tmp_path), episodes(tmp_path)
    assert result["planned_episodes"] == result["recorded_episodes"] == LIMIT * K
    assert result["graded_episodes"] == LIMIT * K and result["errors"] == 0
    malformed = [line for line in lines if line["end_reason"] == "text_reply"]
    assert len(malformed) == K * len(range(0, LIMIT, 2))  # the scripts that start malformed
    assert all("<tool_call>" in line["transcript"][-1]["content"] for line in malformed)
    passed = [line for line in lines if line["success"]]
    assert passed and all(line["findings"]["root_cause"] == line["label"] for line in passed)
    assert result["identical_samples"] and "pass^k is then pass^1" in stderr
    assert "pass^k is then pass^1" in (tmp_path / "summary.md").read_text()


@pytest.mark.filterwarnings("ignore:Pydantic serializer warnings:UserWarning")
@pytest.mark.parametrize(("mode", "status"), [("http500", "500"), ("http400", "400")])
def test_a_server_that_rejects_malformed_calls_records_error_lines_over_litellm(
    mode, status, tmp_path, capsys, monkeypatch
):
    """transformers serve answers an unparseable call with 500 (<= 5.24) or 400 (5.25)."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-scripted")
    with ScriptedOpenAIServer(replay_by_complaint, malformed_calls=mode) as server:
        server.fail_next(2, 503)
        code, stderr = run_here(
            capsys, "--model", "litellm:openai/scripted", "--base-url", server.base_url,
            "--limit", LIMIT, "--k", 1, "--concurrency", 1, "--server-error-retries", 1,
            "--no-transcript", "--out", tmp_path, *FAST,
        )  # fmt: skip

    assert code == 0, stderr[-2000:]
    lines = episodes(tmp_path)
    errors = [line for line in lines if line["error"]]
    assert len(lines) == LIMIT and len(errors) == len(range(0, LIMIT, 2))
    assert all(line["end_reason"] == "server_error" for line in errors)
    assert all(e["error"].startswith(f"HTTP {status}: ") for e in errors)
    assert "HTTP 503" in lines[0]["retry_causes"] and "retrying eval-" in stderr
    assert all(line["transcript"] is None and line["reply_digest"] for line in lines)
    result = summary(tmp_path)
    assert result["errors"] == len(errors) and result["incomplete_episodes"] == 0
    assert result["overall"]["pass1"]["estimate"] == pytest.approx(1 - len(errors) / LIMIT)


def test_a_hung_server_leaves_the_episode_incomplete_with_no_run_json(tmp_path, capsys):
    out = tmp_path / "run"
    with ScriptedOpenAIServer(replay_by_complaint) as server:
        server.hang()
        code, stderr = run_here(
            capsys, "--base-url", server.base_url, "--model-name", "scripted", "--limit", 1,
            "--k", 1, "--timeout", "0.3", "--max-retries", 1, "--episode-retries", 0,
            "--out", out, *FAST,
        )  # fmt: skip
        server.release()

    assert code == 3, stderr[-2000:]
    assert "retrying eval-100000 turn 1: timeout" in stderr
    assert "1 of 1 episodes are incomplete" in stderr and "rerun" in stderr
    assert not out.exists()  # no run.json, nothing to refuse a corrected command


@pytest.mark.filterwarnings("ignore:Pydantic serializer warnings:UserWarning")
@pytest.mark.filterwarnings("ignore:coroutine .* was never awaited:RuntimeWarning")  # cancelled
def test_a_server_killed_mid_run_stops_the_run_and_the_same_command_resumes(
    tmp_path, capsys, monkeypatch
):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-scripted")
    first = len(SCRIPTS[generate("eval", split_seeds("eval", 1)[0]).complaint])
    server = ScriptedOpenAIServer(replay_by_complaint, die_after=first + 1).start()
    args = ("--model", "litellm:openai/scripted", "--base-url", server.base_url,
            "--limit", 3, "--k", 1, "--concurrency", 1, "--out", tmp_path, *FAST)  # fmt: skip
    try:
        stopped, stopped_err = run_here(capsys, *args)
        recorded = len(episodes(tmp_path))
        server.die_after = None
        server.start()  # the same port, as a restarted server
        resumed, resumed_err = run_here(capsys, *args)
    finally:
        server.stop()

    assert stopped == 4, stopped_err[-2000:]
    last = stopped_err.strip().splitlines()[-1]
    assert last.startswith("error: cannot connect to") and "refused" in last
    assert 1 <= recorded < 3
    assert resumed == 0, resumed_err[-2000:]
    keys = [(line["scenario_id"], line["sample"]) for line in episodes(tmp_path)]
    assert len(keys) == len(set(keys)) == 3


def test_out_pointing_at_a_file_or_an_unwritable_path_is_one_line(tmp_path):
    a_file = tmp_path / "taken"
    a_file.write_text("not a run")
    for out, expected in ((a_file, "is a file"), (a_file / "run", "cannot write")):
        done = run_cli("--model", "reference", "--k", 1, "--limit", 1, "--out", out)

        assert done.returncode == 2, done.stderr[-2000:]
        assert done.stderr.strip().splitlines() == [done.stderr.strip()]
        assert expected in done.stderr and "Traceback" not in done.stderr
    assert a_file.read_text() == "not a run"


def test_negative_episode_retries_are_refused():
    done = run_cli("--model", "reference", "--episode-retries", "-1")

    assert done.returncode == 2 and "--episode-retries must be at least 0" in done.stderr


def test_a_second_writer_of_the_same_run_directory_is_refused(tmp_path):
    with RunLock(tmp_path):
        done = run_cli("--model", "reference", "--k", 1, "--limit", 1, "--out", tmp_path)

    assert done.returncode == 2
    assert "is being written by another run (pid" in done.stderr
    assert not (tmp_path / "episodes.jsonl").exists()
