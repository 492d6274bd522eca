"""`python -m eval.run` under Ctrl-C, on a folder it should not write into, and its defaults.

The Ctrl-C tests send a real SIGINT to a real `python -m eval.run` child playing against the
scripted OpenAI server over the openai client. The server sends the signal itself, while it
holds the first request of the third episode, so the moment is exact: two episodes are in
flight (concurrency 2) and every first request that reaches the server afterwards would be an
episode started after the signal.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from env.generation.generator import generate
from env.generation.splits import split_seeds
from eval.episode_log import RUN_CONFIG
from tests.eval.test_run_cli import (
    REPO,
    child_env,
    episodes,
    replay_by_complaint,
    run_cli,
    summary,
)
from tests.support.scripted_server import ScriptedOpenAIServer

LIMIT = 6  # episodes planned (k 1)
SIGNAL_AT = 3  # the signal goes out while the server holds this episode's first request
BY_COMPLAINT = {generate("eval", s).complaint: f"eval-{s}" for s in split_seeds("eval", LIMIT)}
ALL_IDS = sorted(BY_COMPLAINT.values())


class SignalDesk:
    """A responder that replays each scenario and records when each episode's first request
    came; at the first request of episode `SIGNAL_AT` it sends the child SIGINT, and with
    `twice`, from the next request on, the server answers nothing more (the test then sends the
    second SIGINT once the child has said it heard the first: two signals that arrive before
    Python runs its handler are one, as POSIX does not queue them)."""

    def __init__(self, server_ref: dict[str, ScriptedOpenAIServer], twice: bool = False) -> None:
        self.server_ref = server_ref
        self.twice = twice
        self.child: subprocess.Popen[str] | None = None
        self.firsts: list[tuple[float, str]] = []  # (monotonic time, complaint)
        self.signals: list[float] = []
        self.lock = threading.Lock()

    def _signal(self) -> None:
        assert self.child is not None
        self.signals.append(time.monotonic())
        os.kill(self.child.pid, signal.SIGINT)

    def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        messages = body["messages"]
        complaint = next(m["content"] for m in messages if m["role"] == "user")
        with self.lock:
            if not any(m["role"] == "assistant" for m in messages):
                self.firsts.append((time.monotonic(), complaint))
                if len(self.firsts) == SIGNAL_AT and not self.signals:
                    self._signal()
            elif self.twice and self.signals:
                self.server_ref["server"].hang()  # in-flight episodes can only end cancelled
        return replay_by_complaint(body)


def _start(server: ScriptedOpenAIServer, out: Path, desk: SignalDesk) -> subprocess.Popen[str]:
    args = ["--base-url", server.base_url, "--model-name", "scripted", "--limit", str(LIMIT),
            "--k", "1", "--concurrency", "2", "--out", str(out)]  # fmt: skip
    child = subprocess.Popen(
        [sys.executable, "-m", "eval.run", *args],
        cwd=REPO, env=child_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    desk.child = child
    return child


def _recorded(out: Path) -> list[str]:
    return [line["scenario_id"] for line in episodes(out)]


def test_the_first_ctrl_c_starts_no_episode_keeps_what_finished_and_the_rerun_resumes(tmp_path):
    out = tmp_path / "run"
    refs: dict[str, ScriptedOpenAIServer] = {}
    desk = SignalDesk(refs)
    with ScriptedOpenAIServer(desk, latency_s=0.05) as server:
        refs["server"] = server
        child = _start(server, out, desk)
        _, stderr = child.communicate(timeout=600)
    [signalled] = desk.signals
    started_after = [c for t, c in desk.firsts if t > signalled]
    started = sorted(BY_COMPLAINT[c] for _, c in desk.firsts)

    assert child.returncode == 130, stderr[-2000:]
    assert started_after == [], f"{len(started_after)} episode(s) started after Ctrl-C"
    assert len(started) == SIGNAL_AT
    assert sorted(_recorded(out)) == started  # those in flight finished and were kept
    assert all(line["error"] is None for line in episodes(out))
    assert "Traceback" not in stderr and "Ctrl-C: starting no new episode" in stderr
    last = stderr.strip().splitlines()[-1]
    assert last.startswith(f"interrupted: {SIGNAL_AT} of {LIMIT} episodes kept ({out}")
    assert last.endswith("rerun the same command to resume")
    kept = summary(out)
    assert (kept["recorded_episodes"], kept["planned_episodes"]) == (SIGNAL_AT, LIMIT)
    before = (out / "episodes.jsonl").read_text().splitlines()

    with ScriptedOpenAIServer(replay_by_complaint) as server:
        args = ("--base-url", server.base_url, "--model-name", "scripted", "--limit", LIMIT,
                "--k", 1, "--concurrency", 2, "--out", out)  # fmt: skip
        resumed = run_cli(*args)

    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert f"resuming {out}: {SIGNAL_AT} episodes done, {LIMIT - SIGNAL_AT} to run" in (
        resumed.stderr
    )
    after = (out / "episodes.jsonl").read_text().splitlines()
    assert after[:SIGNAL_AT] == before and sorted(_recorded(out)) == ALL_IDS


def test_a_second_ctrl_c_drops_the_episodes_in_flight_and_exits_at_once(tmp_path):
    out = tmp_path / "run"
    refs: dict[str, ScriptedOpenAIServer] = {}
    desk = SignalDesk(refs, twice=True)
    with ScriptedOpenAIServer(desk, latency_s=0.05) as server:
        refs["server"] = server
        child = _start(server, out, desk)
        lines: list[str] = []
        heard = threading.Event()

        def read() -> None:
            assert child.stderr is not None
            for line in child.stderr:
                lines.append(line)
                if "Ctrl-C: starting no new episode" in line:
                    heard.set()

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        assert child.stdout is not None  # drained too, so a full pipe never blocks the child
        threading.Thread(target=child.stdout.read, daemon=True).start()
        assert heard.wait(timeout=120), "".join(lines)[-2000:]
        second = time.monotonic()
        os.kill(child.pid, signal.SIGINT)  # the second Ctrl-C: the server never answers again
        child.wait(timeout=120)
        ended = time.monotonic()
        reader.join(timeout=10)
        stderr = "".join(lines)
    third = BY_COMPLAINT[desk.firsts[SIGNAL_AT - 1][1]]

    assert child.returncode == 130, stderr[-2000:]
    assert ended - second < 60
    assert "Traceback" not in stderr
    recorded = _recorded(out)
    assert third not in recorded and 1 <= len(recorded) < SIGNAL_AT
    assert (
        stderr.strip()
        .splitlines()[-1]
        .startswith(f"interrupted: {len(recorded)} of {LIMIT} episodes kept")
    )
    assert summary(out)["recorded_episodes"] == len(recorded)


def test_ctrl_c_stops_a_scripted_policy_that_never_yields_between_episodes(tmp_path):
    """The auditor plays each episode without waiting on anything: asyncio's own Ctrl-C handling
    ran every queued episode before stopping (all 100). Now the count stops where it was."""
    out = tmp_path / "run"
    path = out / "episodes.jsonl"
    child = subprocess.Popen(
        [sys.executable, "-m", "eval.run", "--model", "auditor", "--out", str(out)],
        cwd=REPO, env=child_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and child.poll() is None:
        if path.exists() and (seen := path.read_bytes().count(b"\n")) >= 3:
            child.send_signal(signal.SIGINT)
            break
        time.sleep(0.01)
    _, stderr = child.communicate(timeout=300)

    assert child.returncode == 130, stderr[-2000:]
    recorded = len(episodes(out))
    assert seen <= recorded <= seen + 2, f"{recorded} recorded, {seen} when Ctrl-C was sent"
    assert stderr.strip().splitlines()[-1].startswith(f"interrupted: {recorded} of 100 episodes")
    assert "Traceback" not in stderr


# ---- --out on a folder that holds something else ---------------------------------------------


def test_out_on_a_folder_holding_other_files_is_refused_in_one_line_and_nothing_written(tmp_path):
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "README.md").write_text("mine\n")
    (folder / "notes").mkdir()

    done = run_cli("--model", "auditor", "--limit", 1, "--out", folder)

    assert done.returncode == 2, done.stderr[-2000:]
    assert done.stderr.strip().splitlines() == [done.stderr.strip()]
    assert done.stderr.startswith(f"error: --out {folder} is not empty (README.md, notes)")
    assert sorted(p.name for p in folder.iterdir()) == ["README.md", "notes"]


def test_a_run_folder_of_the_same_run_resumes_and_an_empty_folder_is_used(tmp_path):
    folder = tmp_path / "run"
    folder.mkdir()  # empty: fine

    first = run_cli("--model", "auditor", "--limit", 1, "--out", folder)
    again = run_cli("--model", "auditor", "--limit", 2, "--out", folder)

    assert first.returncode == again.returncode == 0, again.stderr[-2000:]
    assert f"resuming {folder}: 1 episodes done, 1 to run" in again.stderr
    assert len(episodes(folder)) == 2


# ---- defaults that fit the policy --------------------------------------------------------------


def test_a_scripted_policy_plays_one_sample_by_default_and_a_model_four(tmp_path):
    scripted = run_cli("--model", "auditor", "--limit", 2, "--out", tmp_path / "auditor")
    with ScriptedOpenAIServer(replay_by_complaint) as server:
        model = run_cli("--base-url", server.base_url, "--model-name", "scripted", "--limit", 1,
                        "--out", tmp_path / "model")  # fmt: skip

    assert scripted.returncode == model.returncode == 0, model.stderr[-2000:]
    config = json.loads((tmp_path / "auditor" / RUN_CONFIG).read_text())
    assert config["k"] == 1 and len(episodes(tmp_path / "auditor")) == 2
    assert json.loads((tmp_path / "model" / RUN_CONFIG).read_text())["k"] == 4
    assert len(episodes(tmp_path / "model")) == 4


def test_a_limit_past_the_split_plays_the_whole_split_and_says_so(tmp_path):
    done = run_cli("--model", "complaint-guess", "--split", "heldout", "--limit", 80,
                   "--out", tmp_path)  # fmt: skip

    assert done.returncode == 0, done.stderr[-2000:]
    assert "note: heldout holds 50 scenarios; --limit 80 plays all 50" in done.stderr
    assert summary(tmp_path)["planned_episodes"] == 50
