"""The report page in a real browser: headless Chromium driven over the DevTools protocol.

Builds a report from small real runs (reference, auditor and a deliberately bad scripted policy
made of reward-hacking cheats, all through the real rollout and grader), opens it from disk and
checks: no console error or uncaught exception, every panel rendered with its figures loaded,
the viewer navigates by keyboard, by link and by filter, and the diagnostics section shows the
bad run's failure clusters (linked into the viewer) and a collapsing diversity curve. Saves a
screenshot under the test's tmp dir (and into $LEDGERGYM_SCREENSHOT_DIR when set). Skips where
no Chromium is installed (Debian: `apt-get install -y chromium`). The websocket client is the
few lines CDP needs.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import shutil
import socket
import struct
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

from agent.program_policy import ProgramPolicy
from env.labels import ROOT_CAUSES
from eval.report.build import write_report
from eval.report.load import RunData, load_run, load_train_metrics
from tests.eval.report_fixtures import contract_run, grade, line

BROWSERS = ("chromium", "chromium-browser", "google-chrome")
LIMIT = 6  # the first eval seeds: four credit cases, the held-out class and a no_error case
SAMPLES = 2
PANELS = (
    "training",
    "before-after",
    "paired",
    "groups",
    "action",
    "confusion",
    "hacking",
    "diagnostics",
    "reading",
    "viewer",
)


def _browser() -> str | None:
    for name in BROWSERS:
        if path := shutil.which(name):
            return path
    return None


class DevTools:
    """A minimal RFC 6455 client for one DevTools target: send a command, wait for its answer."""

    def __init__(self, url: str) -> None:
        host_port, _, path = url.removeprefix("ws://").partition("/")
        host, _, port = host_port.partition(":")
        self.sock = socket.create_connection((host, int(port)), timeout=30)
        key = base64.b64encode(os.urandom(16)).decode()
        request = (
            f"GET /{path} HTTP/1.1\r\nHost: {host_port}\r\nUpgrade: websocket\r\n"
            f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
            "Sec-WebSocket-Version: 13\r\n\r\n"
        )
        self.sock.sendall(request.encode())
        response = b""
        while b"\r\n\r\n" not in response:
            response += self.sock.recv(4096)
        assert response.startswith(b"HTTP/1.1 101"), response[:200]
        self.buffer = response.split(b"\r\n\r\n", 1)[1]
        self.next_id = 0
        self.events: list[dict[str, Any]] = []

    def _read(self, count: int) -> bytes:
        while len(self.buffer) < count:
            chunk = self.sock.recv(1 << 16)
            if not chunk:
                raise ConnectionError("DevTools closed the connection")
            self.buffer += chunk
        data, self.buffer = self.buffer[:count], self.buffer[count:]
        return data

    def _frame(self) -> tuple[int, bool, bytes]:
        first, second = self._read(2)
        length = second & 0x7F
        if length == 126:
            length = struct.unpack(">H", self._read(2))[0]
        elif length == 127:
            length = struct.unpack(">Q", self._read(8))[0]
        return first & 0x0F, bool(first & 0x80), self._read(length)

    def _message(self) -> dict[str, Any]:
        parts = []
        while True:
            opcode, final, payload = self._frame()
            if opcode in (0x9, 0xA):  # ping/pong: not CDP traffic
                continue
            parts.append(payload)
            if final:
                return dict(json.loads(b"".join(parts)))

    def send(self, method: str, **params: Any) -> dict[str, Any]:
        self.next_id += 1
        payload = json.dumps({"id": self.next_id, "method": method, "params": params}).encode()
        mask = os.urandom(4)
        header = bytes([0x81])
        if len(payload) < 126:
            header += bytes([0x80 | len(payload)])
        elif len(payload) < 1 << 16:
            header += bytes([0x80 | 126]) + struct.pack(">H", len(payload))
        else:
            header += bytes([0x80 | 127]) + struct.pack(">Q", len(payload))
        masked = bytes(byte ^ mask[i % 4] for i, byte in enumerate(payload))
        self.sock.sendall(header + mask + masked)
        while True:
            message = self._message()
            if message.get("id") == self.next_id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return dict(message.get("result", {}))
            self.events.append(message)

    def evaluate(self, expression: str) -> Any:
        result = self.send(
            "Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True
        )
        if "exceptionDetails" in result:
            raise AssertionError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def wait_for(self, expression: str, timeout: float = 10.0) -> Any:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = self.evaluate(expression)
            if value:
                return value
            time.sleep(0.05)
        raise AssertionError(f"timed out waiting for {expression}")

    def errors(self) -> list[str]:
        found = []
        for event in self.events:
            method, params = event.get("method"), event.get("params", {})
            if method == "Runtime.exceptionThrown":
                found.append(json.dumps(params["exceptionDetails"])[:500])
            elif method == "Runtime.consoleAPICalled" and params.get("type") == "error":
                found.append(json.dumps(params.get("args"))[:500])
            elif method == "Log.entryAdded" and params["entry"].get("level") == "error":
                found.append(params["entry"].get("text", "")[:500])
        return found

    def close(self) -> None:
        self.sock.close()


# one cheat per scenario of the first LIMIT eval seeds (no_error is the last)
BAD_CHEATS = (
    "stuff_summary",
    "guess_no_error_without_tools",
    "never_credit",
    "tool_spam",
    "guess_no_error_without_tools",
    "credit_full_invoice",
)


def _bad_program(scenario):  # type: ignore[no-untyped-def]
    """A deliberately bad policy: a different reward-hacking cheat per scenario."""
    from checks.hacks.cheats import CHEATS
    from env.generation.splits import split_seeds

    cheats = {cheat.name: cheat for cheat in CHEATS}
    position = split_seeds("eval", LIMIT).index(scenario.seed)
    return cheats[BAD_CHEATS[position]].program(scenario)


def _eval_run(model: str, directory: Path) -> Path:
    """`python -m eval.run --model MODEL --k SAMPLES --limit LIMIT --out DIR`, in process."""
    from eval.run import main

    argv = ["--model", model, "--k", str(SAMPLES), "--limit", str(LIMIT), "--out", str(directory)]
    assert main(argv) == 0
    return directory


def _bad_run(directory: Path) -> Path:
    """The bad policy through `eval.run.evaluate` (the eval/run.py command runs no cheats)."""
    from env.generation.generator import generate
    from env.generation.splits import split_seeds
    from eval.run import evaluate

    policy = ProgramPolicy("bad-cheats", _bad_program)
    scenarios = [generate("eval", seed) for seed in split_seeds("eval", LIMIT)]
    config = {"model": policy.name, "kind": "program", "split": "eval", "k": SAMPLES}
    run = evaluate(policy, scenarios, k=SAMPLES, run_dir=directory, config=config, concurrency=1)
    asyncio.run(run)
    return directory


@pytest.fixture(scope="module")
def report_page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("browser-report")
    runs = [
        _eval_run("reference", root / "reference"),
        _eval_run("auditor", root / "auditor"),
        _bad_run(root / "bad"),
    ]
    metrics = root / "metrics.jsonl"
    rows = [
        {
            "step": step,
            "episodes": 4,
            "reward_mean": 0.1 * step,
            "reward_std": 0.1,
            "terms": {"root_cause": 0.05 * step, "amounts": 0.05 * step},
            "group_reward_std": [0.1, 0.0],
            "zero_variance_group_share": 0.5,
            "tool_calls_mean": 5.0 + step,
            "trl": {"completions/mean_length": 40.0 + step},
            # two groups of four: every rollout its own path at step 1, one path from step 2
            "group_tool_sequences": [
                [f"s{step}g{g}r{r}" if step == 1 else "same" for r in range(4)] for g in range(2)
            ],
        }
        for step in range(1, 5)
    ]
    metrics.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    # the real runs' logs may predate transcripts; the contract-shaped run has them
    loaded = [load_run(path) for path in runs] + [contract_run(root / "fixture")]
    loaded.append(_every_class_run(root / "every-class"))
    return write_report(loaded, [load_train_metrics(metrics)], root / "report")


def _every_class_run(directory: Path) -> RunData:
    """Every root cause reported, and one episode that never submitted: the widest matrix."""
    reported = [*ROOT_CAUSES[1:], ROOT_CAUSES[0]]
    lines = [
        line(f"c{i}", label=true, success=False, grade=grade(False, reported_label=said))
        for i, (true, said) in enumerate(zip(ROOT_CAUSES, reported, strict=True))
    ]
    lines.append(line("c-none", success=False, grade=grade(False, reported_label=None)))
    config = {"model": "every-class", "kind": "program", "split": "eval", "k": 1}
    return RunData("every-class", directory, config, lines)


@pytest.fixture(scope="module")
def browser(request: pytest.FixtureRequest) -> Generator[DevTools, None, None]:
    binary = _browser()
    if binary is None:  # before building the runs: a skip should cost nothing
        pytest.skip("no Chromium installed (Debian: apt-get install -y chromium)")
    report_page: Path = request.getfixturevalue("report_page")
    profile = tempfile.mkdtemp(prefix="report-chromium-")
    process = subprocess.Popen(
        [
            binary,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--remote-debugging-port=0",
            "--window-size=1280,900",
            f"--user-data-dir={profile}",
            "about:blank",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        port = _devtools_port(process, Path(profile))
        targets = json.loads(urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list").read())
        page = next(t for t in targets if t.get("type") == "page")
        tools = DevTools(page["webSocketDebuggerUrl"])
        for domain in ("Runtime", "Log", "Page"):
            tools.send(f"{domain}.enable")
        tools.send("Page.navigate", url=report_page.as_uri())
        tools.wait_for("document.readyState === 'complete' && document.body.dataset.viewerReady")
        yield tools
        tools.close()
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
        shutil.rmtree(profile, ignore_errors=True)


def _devtools_port(process: subprocess.Popen[str], profile: Path) -> int:
    """Chromium writes the port it chose to DevToolsActivePort in the profile."""
    deadline = time.monotonic() + 30
    marker = profile / "DevToolsActivePort"
    while time.monotonic() < deadline:
        if marker.is_file() and marker.read_text().strip():
            return int(marker.read_text().splitlines()[0])
        if process.poll() is not None:
            raise RuntimeError(
                f"chromium exited: {process.stderr.read() if process.stderr else ''}"
            )
        time.sleep(0.05)
    raise RuntimeError("chromium did not open its DevTools port within 30 s")


def test_the_report_opens_with_every_panel_rendered_and_no_console_error(browser):
    for panel in PANELS:
        height = browser.evaluate(f"document.getElementById('{panel}').offsetHeight")
        assert height > 60, f"panel {panel} is empty"
    images = browser.evaluate(
        "Array.from(document.images).map(i => i.complete && i.naturalWidth > 0)"
    )
    assert len(images) >= 5 and all(images)  # the confusion matrices are tables, not images
    assert browser.evaluate("document.querySelectorAll('#confusion table.confusion').length") >= 1
    assert browser.evaluate("document.querySelectorAll('.read-box').length") >= 20
    assert browser.errors() == []


def test_the_viewer_navigates_by_keyboard_link_and_filter(browser):
    first = browser.evaluate("reportViewer.current()")
    browser.evaluate("document.activeElement && document.activeElement.blur()")
    for kind in ("keyDown", "keyUp"):
        browser.send(
            "Input.dispatchKeyEvent",
            type=kind,
            key="ArrowRight",
            code="ArrowRight",
            windowsVirtualKeyCode=39,
        )
    second = browser.evaluate("reportViewer.current()")
    assert second != first
    assert browser.evaluate("document.getElementById('episode').dataset.episode") == second
    target = browser.evaluate("document.querySelector('#reading a.ep-link').getAttribute('href')")
    browser.evaluate(f"location.hash = {json.dumps(target)}")
    browser.wait_for(f"reportViewer.current() === {json.dumps(target.removeprefix('#ep='))}")
    total = browser.evaluate("reportViewer.count()")
    browser.evaluate("""(() => { const s = document.getElementById('filter-outcome');
        s.value = 'failure'; s.dispatchEvent(new Event('change')); })()""")
    failures = browser.evaluate("reportViewer.count()")
    assert 0 < failures < total
    text = browser.evaluate("document.getElementById('episode').textContent")
    assert "failure" in text and "Reward by term" in text and "Grader verdict" in text
    notes = json.loads(browser.evaluate("reportViewer.exportNotes()"))
    assert len(notes["notes"]) >= 20
    assert browser.errors() == []


def test_the_viewer_shows_a_transcript_with_traced_and_untraceable_numbers(browser):
    assert browser.evaluate("reportViewer.show('r3.s1.0')")
    browser.wait_for("reportViewer.current() === 'r3.s1.0'")
    counts = browser.evaluate("""(() => { const box = document.getElementById('episode');
        return [box.querySelectorAll('.num.evidence').length,
                box.querySelectorAll('.num.untraceable').length,
                box.querySelectorAll('details.tool').length,
                box.querySelectorAll('b').length]; })()""")
    assert counts[0] >= 2 and counts[1] == 1 and counts[2] == 2
    # the complaint's markup is text, never HTML
    assert browser.evaluate("document.getElementById('episode').innerHTML.includes('&lt;b&gt;')")
    browser.evaluate("document.querySelector('#episode .num.jump').click()")
    assert browser.evaluate("document.getElementById('tool-r3.s1.0-0').open")
    assert browser.errors() == []


def test_a_screenshot_of_the_report_is_saved(browser, tmp_path):
    browser.evaluate("window.scrollTo(0, 0)")
    shot = base64.b64decode(browser.send("Page.captureScreenshot", format="png")["data"])
    assert shot.startswith(b"\x89PNG")
    path = tmp_path / "report.png"
    path.write_bytes(shot)
    if target := os.environ.get("LEDGERGYM_SCREENSHOT_DIR"):
        Path(target).mkdir(parents=True, exist_ok=True)
        shutil.copy(path, Path(target) / "report.png")


CONTRAST_JS = """(() => {
  const rgb = s => s.match(/[\\d.]+/g).slice(0, 3).map(Number);
  const lum = c => { const [r, g, b] = c.map(v => { v /= 255;
      return v <= 0.04045 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; });
    return 0.2126 * r + 0.7152 * g + 0.0722 * b; };
  return Array.from(document.querySelectorAll('#confusion td.count')).map(td => {
    const style = getComputedStyle(td);
    const [a, b] = [lum(rgb(style.color)), lum(rgb(style.backgroundColor))].sort((x, y) => y - x);
    return [Number(td.dataset.count), (a + 0.05) / (b + 0.05), td.textContent];
  });
})()"""


def test_every_confusion_count_is_readable_on_its_cell_colour(browser):
    """WCAG AA (contrast ratio >= 4.5) on every shade, the darkest included."""
    cells = browser.evaluate(CONTRAST_JS)
    counts = [count for count, _, _ in cells if count]
    assert counts and max(counts) > min(counts)  # some shading to read the counts on
    for count, ratio, text in cells:
        assert text == (str(count) if count else "")
        if count:
            assert ratio >= 4.5, f"count {count}: contrast {ratio:.2f}"


def test_the_diagnostics_show_failure_clusters_linked_into_the_viewer(browser):
    tables = browser.evaluate("""Array.from(
        document.querySelectorAll('#diagnostics table.clusters')).map(t => [
            t.classList.contains('missing-fact'), t.querySelectorAll('tbody tr').length,
            t.querySelectorAll('a.ep-link').length])""")
    assert any(fact and rows >= 1 for fact, rows, _ in tables)  # by first missing fact
    assert any(not fact and rows >= 2 for fact, rows, _ in tables)  # by error class
    assert all(1 <= links <= 2 * rows for _, rows, links in tables)
    # the bad run's failures: its clusters name reference reads, its steps a call number
    text = browser.evaluate("document.getElementById('diagnostics').textContent")
    assert "get_customer(customer)" in text and "false reversal" in text and "call " in text
    target = browser.evaluate(
        "document.querySelector('#diagnostics table.clusters a.ep-link').getAttribute('href')"
    )
    browser.evaluate(f"location.hash = {json.dumps(target)}")
    browser.wait_for(f"reportViewer.current() === {json.dumps(target.removeprefix('#ep='))}")
    assert "failure" in browser.evaluate("document.getElementById('episode').textContent")
    assert browser.errors() == []


def test_the_diversity_curve_is_drawn_with_its_collapse_warning(browser):
    loaded = browser.evaluate("""Array.from(document.querySelectorAll('#diagnostics img.diversity'))
        .map(i => i.complete && i.naturalWidth > 0)""")
    assert loaded == [True]
    warning = browser.evaluate(
        "document.querySelector('#diagnostics .diversity-collapse').textContent"
    )
    assert "collapsed" in warning and "steps 2–4" in warning
    tops = browser.evaluate(
        "Array.from(document.querySelectorAll('header .warning')).map(w => w.textContent)"
    )
    assert any("steps 2–4" in line for line in tops)
    assert browser.errors() == []


FIT_JS = """(() => { const panel = document.getElementById('confusion');
  const edge = panel.getBoundingClientRect().right;
  return Array.from(panel.querySelectorAll('table.confusion')).map(table =>
      [table.querySelectorAll('th.col').length, table.getBoundingClientRect().right - edge]);
})()"""


def test_the_widest_confusion_matrix_fits_a_1400_px_page(browser):
    browser.send(
        "Emulation.setDeviceMetricsOverride", width=1400, height=900, deviceScaleFactor=1,
        mobile=False,
    )  # fmt: skip
    try:
        tables = browser.evaluate(FIT_JS)
    finally:
        browser.send("Emulation.clearDeviceMetricsOverride")
    assert max(columns for columns, _ in tables) == len(ROOT_CAUSES) + 1
    assert all(overflow <= 0 for _, overflow in tables), tables
