"""Load on the session doors: N concurrent clients on loopback, reference episodes, figures.

    python -m doors.bench --door openenv --clients 1,16,64,256 --seconds 20
    python -m doors.bench --door mcp --clients 1,16,64,256 --seconds 20

For each N a fresh server (`doors.openenv_server`, or `doors.mcp_server --http`) is started as
a child process, warmed with one episode, then loaded by N clients in this process for the
given time (`doors.bench_clients`). Printed per N: episodes/s, p50/p99 tool-call latency as
the client saw it, the server's RSS per live session (RSS under load minus RSS after the
warm-up, over N), errors, cross-talk (must be 0) and wrong scores. A benchmark, not a test:
figures depend on the machine (clients and server share its cores).
"""

from __future__ import annotations

import argparse
import asyncio
import re
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from doors.bench_clients import Tally, load, warm_up
from doors.scenario_ids import scenario_argument
from env.cli import Parser, positive_int, run_command
from env.scenario import Scenario
from ledgergym import __version__

ROOT = Path(__file__).resolve().parent.parent
START_S = 180
URL = re.compile(r"at (http://127\.0\.0\.1:\d+(?:/mcp)?)")


def _server_command(door: str, scenario: Scenario, clients: int) -> list[str]:
    if door == "openenv":
        sessions = str(clients + 4)  # the warm-up's session may linger a moment
        return ["doors.openenv_server", "--port", "0", "--max-sessions", sessions]
    return ["doors.mcp_server", "--scenario", scenario.scenario_id, "--http", "--port", "0"]


@contextmanager
def server(door: str, scenario: Scenario, clients: int) -> Iterator[tuple[str, int]]:
    """(url, pid) of a fresh server on a free port of 127.0.0.1; stopped on exit."""
    command = [sys.executable, "-m", *_server_command(door, scenario, clients)]
    process = subprocess.Popen(command, cwd=ROOT, stderr=subprocess.PIPE, text=True)
    timer = threading.Timer(START_S, process.kill)
    timer.start()
    try:
        assert process.stderr is not None
        line = process.stderr.readline()
        timer.cancel()
        found = URL.search(line)
        if found is None:
            raise RuntimeError(f"the {door} server did not start: {line.strip()!r}")
        yield found.group(1), process.pid
    finally:
        timer.cancel()
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def rss_kib(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text(encoding="utf-8")
    found = re.search(r"^VmRSS:\s+(\d+) kB", status, re.MULTILINE)
    return int(found.group(1)) if found else 0


async def _measured(
    door: str, url: str, pid: int, scenario: Scenario, clients: int, seconds: float
) -> tuple[Tally, int]:
    """The load, with the server's RSS sampled through its middle half; (tally, median KiB)."""
    samples: list[int] = []

    async def sample() -> None:
        await asyncio.sleep(seconds / 4)
        while len(samples) < 50:
            samples.append(rss_kib(pid))
            await asyncio.sleep(seconds / 100)

    sampler = asyncio.create_task(sample())
    tally = await load(door, url, scenario, clients, seconds)
    sampler.cancel()
    return tally, int(statistics.median(samples)) if samples else 0


def _quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def one_level(door: str, scenario: Scenario, clients: int, seconds: float) -> str:
    with server(door, scenario, clients) as (url, pid):
        warm = asyncio.run(warm_up(door, url, scenario))
        if not warm.episodes:
            raise RuntimeError(f"the {door} server played no warm-up episode: {warm.first_error}")
        idle = rss_kib(pid)
        started = time.monotonic()
        tally, loaded = asyncio.run(_measured(door, url, pid, scenario, clients, seconds))
        wall = time.monotonic() - started
    per_session = (loaded - idle) / clients
    note = f" (first error: {tally.first_error})" if tally.first_error else ""
    return (
        f"| {door} | {clients} | {tally.episodes} | {tally.episodes / wall:.1f} | "
        f"{1000 * _quantile(tally.step_s, 0.5):.1f} | {1000 * _quantile(tally.step_s, 0.99):.1f} "
        f"| {idle / 1024:.0f} | {per_session:.0f} | {tally.errors} | {tally.cross_talk} | "
        f"{tally.wrong_scores} |{note}"
    )


HEADER = (
    "| door | clients | episodes | episodes/s | p50 call (ms) | p99 call (ms) | idle RSS (MiB) "
    "| RSS per live session (KiB) | errors | cross-talk | wrong scores |\n"
    "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
)


def _levels(text: str) -> list[int]:
    try:
        levels = [int(part) for part in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a comma-separated list") from None
    if not levels or min(levels) < 1:
        raise argparse.ArgumentTypeError("client counts must be at least 1")
    return levels


def _parser() -> argparse.ArgumentParser:
    parser = Parser(prog="python -m doors.bench", description=__doc__.splitlines()[0])
    parser.add_argument("--door", choices=("openenv", "mcp"), required=True)
    parser.add_argument("--clients", type=_levels, default=[1, 16, 64, 256])
    parser.add_argument("--seconds", type=positive_int, default=20, help="load time per level")
    parser.add_argument("--scenario", default="eval-100000", help="one that owes a credit")
    return parser


def _main(argv: Sequence[str] | None) -> int:
    args = _parser().parse_args(argv)
    scenario = scenario_argument(args.scenario)
    print(f"LedgerGym {__version__}, {scenario.scenario_id}, {args.seconds} s per level")
    print(HEADER, flush=True)
    for clients in args.clients:
        print(one_level(args.door, scenario, clients, float(args.seconds)), flush=True)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    return run_command("python -m doors.bench", _main, argv)


if __name__ == "__main__":
    raise SystemExit(main())
