"""The newest releases, unpinned: what moved against constraints/cpu-py311.txt, and do the tests
that lean on third-party behaviour still pass (scripts/newest_versions.py). Slow: it installs a
whole venv from the package index. Skipped when the index cannot be reached.
    python -m pytest tests/test_newest_versions.py -m slow -s
"""

from __future__ import annotations

import json
import socket
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "scripts"))
import newest_versions  # noqa: E402

# the tests whose outcome depends on how a third-party release behaves (a real server, clients)
BEHAVIOUR_TESTS = [
    "tests/agent/test_real_server.py",
    "tests/agent/test_http_failures.py",
    "tests/eval/test_run_cli.py",
]


def test_the_pin_reader_and_the_drift_name_what_moved():
    pins = newest_versions.read_pins("# header\ntransformers==5.24.0\nTorch==2.13.0\nold==1\n")
    found = newest_versions.drift(
        pins, {"transformers": "5.25.0", "torch": "2.13.0+cpu", "new-pkg": "2", "ledgergym": "7"}
    )

    assert found.moved == {"transformers": ("5.24.0", "5.25.0")}
    assert found.added == {"new-pkg": "2"} and found.removed == {"old": "1"}
    assert newest_versions.render(found)[1] == "  transformers: 5.24.0 -> 5.25.0"


def test_every_line_of_the_constraints_file_is_one_exact_pin():
    text = newest_versions.CONSTRAINTS.read_text(encoding="utf-8")
    lines = [ln for ln in text.splitlines() if ln.strip() and not ln.startswith("#")]
    pins = newest_versions.read_pins(text)

    assert len(pins) == len(lines) > 100
    assert "transformers" in pins and "torch" in pins


@pytest.mark.slow
def test_the_newest_releases_pass_the_behaviour_tests(tmp_path):
    try:
        socket.create_connection(("pypi.org", 443), timeout=5).close()
    except OSError:
        pytest.skip("the package index cannot be reached")
    code = newest_versions.main(["--tests", *BEHAVIOUR_TESTS, "--out", str(tmp_path)])

    report = json.loads((tmp_path / "report.json").read_text())
    assert code == 0, (report["drift"], (tmp_path / "log.txt").read_text()[-3000:])
