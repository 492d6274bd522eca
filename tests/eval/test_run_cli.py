"""`eval/run.py` end to end, as a subprocess, over the real litellm and openai client paths.

A `ScriptedOpenAIServer` in this process replays each scenario's reference solution (looked up
by the complaint text), with a malformed-arguments call and an unknown tool slipped into some
episodes. The heavy runs import art and litellm in a child process (about 10 s of CPU each).
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

from agent.scripted_server import ScriptedOpenAIServer, text_turn, tool_call_turn
from env.generator import generate
from env.scenario import reveal_truth
from env.splits import split_seeds
from eval.episode_log import check_run_config

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
    env = {name: value for name, value in os.environ.items() if name not in API_KEYS}
    return {**env, "PYTHONUNBUFFERED": "1", **extra}


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


@pytest.fixture(scope="module")
def resumed_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """A run over the openai client killed with SIGKILL midway, torn, then resumed."""
    out = tmp_path_factory.mktemp("openai-run")
    path = out / "episodes.jsonl"
    with ScriptedOpenAIServer(replay_by_complaint, latency_s=0.1) as server:
        args = ("--base-url", server.base_url, "--model-name", "scripted", "--limit", LIMIT,
                "--k", K, "--concurrency", 2, "--out", out)  # fmt: skip
        with (out / "killed.err").open("w") as err:
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
