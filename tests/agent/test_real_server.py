"""`eval/run.py` against a real `transformers serve` on 127.0.0.1 (tiny local model, CPU).

Nothing between the harness and the model is ours: transformers' server renders the chat with
the tiny model's template, generates, parses the tool call (HTTP 500 when it cannot) and
answers over HTTP, through the openai client or litellm. The model's replies are pinned by a
generation config (`tests.support.transformers_server.forced_reply_model`), so every outcome
is deterministic: a valid `submit_findings` call, a malformed call, a server killed mid-run
and a server hung mid-run (SIGSTOP).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent.tiny_model import build_tiny_model
from tests.support.transformers_server import (
    TransformersServer,
    env_corpus,
    forced_reply_model,
    tool_call_text,
)

pytestmark = [
    pytest.mark.filterwarnings("ignore:Pydantic serializer warnings:UserWarning"),
    pytest.mark.timeout(900),  # the module fixture (start, two first loads) on a loaded machine
]
SUBMIT = tool_call_text(
    "submit_findings",
    {"root_cause": "no_error", "affected_invoices": [], "summary": "The charges are correct."},
)
MALFORMED = '<tool_call>\n{"name": "get_customer", "arguments": {"customer_id": \n</tool_call>'
FAST = ("--backoff", "0.05", "--max-tokens", 64, "--temperature", 0, "--k", 1)
LITELLM_KEY = "sk-local"


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("served")
    tiny = build_tiny_model(corpus=env_corpus(), cache_dir=root / "cache")
    return {
        "submit": forced_reply_model(tiny, SUBMIT, root / "submit"),
        "malformed": forced_reply_model(tiny, MALFORMED, root / "malformed"),
    }


@pytest.fixture(scope="module")
def server(models: dict[str, Path]) -> Iterator[TransformersServer]:
    with TransformersServer() as running:
        for path in models.values():
            running.warm(str(path))
        yield running


def run_here(capsys: pytest.CaptureFixture[str], *args: str | Path | int) -> tuple[int, str]:
    from eval.run import main

    code = main([str(arg) for arg in args])
    return code, capsys.readouterr().err


def route(name: str, server: TransformersServer, model: Path) -> tuple[str | Path, ...]:
    if name == "openai":
        return ("--base-url", server.base_url, "--model-name", model)
    return ("--model", f"litellm:openai/{model}", "--base-url", server.base_url)


def episodes(run_dir: Path) -> list[dict[str, Any]]:
    path = run_dir / "episodes.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


@pytest.fixture
def litellm_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", LITELLM_KEY)  # litellm's openai/ provider wants one


@pytest.mark.usefixtures("litellm_key")
@pytest.mark.parametrize("via", ["openai", "litellm"])
def test_tool_calls_parsed_by_the_server_are_run_and_graded(via, server, models, tmp_path, capsys):
    code, stderr = run_here(
        capsys, *route(via, server, models["submit"]), "--limit", 3, "--out", tmp_path, *FAST
    )

    assert code == 0, stderr[-2000:]
    lines = episodes(tmp_path)
    assert len(lines) == 3
    for line in lines:
        assert line["end_reason"] == "submitted" and line["finish_reasons"] == ["tool_calls"]
        assert line["findings"]["root_cause"] == "no_error"
        call = line["transcript"][2]["tool_calls"][0]
        assert call["name"] == "submit_findings"
        assert json.loads(call["arguments"])["summary"] == "The charges are correct."
        assert line["success"] == (line["label"] == "no_error")
        assert line["prompt_tokens"] > 1000 and line["completion_tokens"] > 10  # server's usage


@pytest.mark.usefixtures("litellm_key")
@pytest.mark.parametrize("via", ["openai", "litellm"])
def test_a_call_the_server_cannot_parse_is_an_error_line_after_two_retries(
    via, server, models, tmp_path, capsys
):
    log_before = rejections(server)
    code, stderr = run_here(
        capsys, *route(via, server, models["malformed"]), "--limit", 2, "--out", tmp_path,
        "--server-error-retries", 2, "--concurrency", 1, *FAST,
    )  # fmt: skip

    assert code == 0, stderr[-2000:]
    lines = episodes(tmp_path)
    assert len(lines) == 2
    assert all(line["end_reason"] == "server_error" and not line["success"] for line in lines)
    # transformers serve <= 5.24 answers 500, 5.25 answers 400 (constraints/cpu-py311.txt pins)
    statuses = {line["error"].split(":")[0] for line in lines}
    assert len(statuses) == 1 and statuses <= {"HTTP 400", "HTTP 500"}, statuses
    answered = rejections(server) - log_before
    assert answered == 2 * 3  # each episode: one request and two retries, never resampled
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["planned_episodes"] == summary["recorded_episodes"] == 2
    assert summary["overall"]["pass1"]["estimate"] == 0.0


def rejections(server: TransformersServer) -> int:
    """Requests the server answered with 400 or 500 so far, from its access log."""
    log = server.log_tail(10_000_000)
    return log.count("500 Internal Server Error") + log.count("400 Bad Request")


def stop_after_first_line(run_dir: Path, fault: Any) -> threading.Thread:
    """Calls `fault()` as soon as the run has recorded its first episode (mid-run)."""

    def watch() -> None:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not episodes(run_dir):
            time.sleep(0.02)
        fault()

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    return watcher


@pytest.mark.usefixtures("litellm_key")
@pytest.mark.filterwarnings("ignore:coroutine .* was never awaited:RuntimeWarning")
def test_a_server_killed_mid_run_stops_the_run_and_the_same_command_resumes(
    models, tmp_path, capsys
):
    first = TransformersServer().start()
    args = (*route("litellm", first, models["submit"]), "--limit", 6, "--concurrency", 1,
            "--unreachable-after", 1, "--out", tmp_path, *FAST)  # fmt: skip
    try:
        watcher = stop_after_first_line(tmp_path, first.kill)
        stopped, stopped_err = run_here(capsys, *args)
        watcher.join()
        recorded = len(episodes(tmp_path))
        with TransformersServer(port=first.port):  # restarted on the same address
            resumed, resumed_err = run_here(capsys, *args)
    finally:
        first.close()

    assert stopped == 4, stopped_err[-2000:]
    last = stopped_err.strip().splitlines()[-1]
    assert last.startswith("error: cannot connect to") and "Traceback" not in stopped_err
    assert 1 <= recorded < 6
    assert resumed == 0, resumed_err[-2000:]
    keys = [(line["scenario_id"], line["sample"]) for line in episodes(tmp_path)]
    assert len(keys) == len(set(keys)) == 6
    assert all(line["end_reason"] == "submitted" for line in episodes(tmp_path))


def test_a_server_hung_mid_run_leaves_episodes_incomplete_and_the_run_resumes(
    server, models, tmp_path, capsys
):
    # a 6 s timeout: even a busy machine answers the tiny model within it
    args = (*route("openai", server, models["submit"]), "--limit", 2, "--concurrency", 1,
            "--timeout", 6, "--max-retries", 1, "--episode-retries", 0, "--out", tmp_path,
            *FAST)  # fmt: skip
    try:
        watcher = stop_after_first_line(tmp_path, server.pause)
        hung, hung_err = run_here(capsys, *args)
        watcher.join()
    finally:
        server.resume()
    recorded = len(episodes(tmp_path))
    resumed, resumed_err = run_here(capsys, *args)

    assert hung == 3, hung_err[-2000:]
    assert "timeout" in hung_err and "incomplete" in hung_err and "rerun" in hung_err
    assert recorded == 1
    assert resumed == 0, resumed_err[-2000:]
    assert len(episodes(tmp_path)) == 2
