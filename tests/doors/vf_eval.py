"""Runs verifiers' own eval entry point (`vf-eval doors ...`) against a server on 127.0.0.1.

The command is the installed console script, in a child process bounded in time; the venv's
`bin` leads PATH because the `null` harness runs its chat program with `uv` from there. Returns
the run's traces (`traces.jsonl`), one per rollout. `relay_command` runs the relay the docs
give for servers that end streams without `[DONE]` (`python -m doors.done_relay`). Test support
only.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
API_KEY_VAR = "DOORS_TEST_API_KEY"


def run_vf_eval(
    base_url: str,
    out: Path,
    *,
    limit: int,
    reward: str = "shaped",
    model: str = "scripted",
    concurrency: int = 4,
    timeout_s: float = 600,
    extra: tuple[str, ...] = (),
) -> list[dict[str, Any]]:
    bin_dir = Path(sys.executable).parent
    command = [str(bin_dir / "vf-eval"), "doors", "-m", model, "-n", str(limit)]
    command += ["-c", str(concurrency), "--client.base-url", base_url]
    command += ["--client.api-key-var", API_KEY_VAR, "--env.taskset.task.reward", reward]
    command += ["--no-push", "--no-rich", "-o", str(out), "--run.name", "run", *extra]
    path = f"{bin_dir}{os.pathsep}{os.environ['PATH']}"
    env = {**os.environ, API_KEY_VAR: "sk-local", "PATH": path}
    done = subprocess.run(
        command,
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        timeout=timeout_s,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    lines = (out / "run" / "traces.jsonl").read_text(encoding="utf-8").splitlines()
    return [trace for line in lines for trace in json.loads(line)["traces"]]


def trace_errors(trace: dict[str, Any]) -> list[str]:
    return [f"{error['type']}: {error['message'][:300]}" for error in trace.get("errors", [])]


@contextmanager
def relay_command(upstream: str) -> Iterator[str]:
    """`python -m doors.done_relay --upstream UPSTREAM --port 0` as a child; yields its URL."""
    command = [sys.executable, "-m", "doors.done_relay", "--upstream", upstream, "--port", "0"]
    relay = subprocess.Popen(command, cwd=ROOT, stderr=subprocess.PIPE, text=True)
    try:
        assert relay.stderr is not None
        line = relay.stderr.readline()
        found = re.search(r"relaying at (http://127\.0\.0\.1:\d+/v1) to ", line)
        assert found, f"no URL in the relay's first line: {line!r}"
        yield found.group(1)
    finally:
        relay.terminate()
        relay.wait(timeout=30)
