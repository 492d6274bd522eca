"""The Python snippets of a markdown page, run as a reader would run them. Test support only.

A reader copies a fenced ```python block into a file and runs it; so do these tests: each block
runs whole, in a child process (bounded in time) with the repository on PYTHONPATH, so a snippet
that needs an import it does not show, or an `await` outside `asyncio.run`, fails here first.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FENCE = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)


def python_blocks(markdown: str) -> list[str]:
    """Every ```python block of the page, in order."""
    return FENCE.findall(markdown)


def run_snippet(
    code: str, *, cwd: Path = ROOT, timeout_s: float = 300
) -> subprocess.CompletedProcess[str]:
    """`python -c CODE` in `cwd`; the caller asserts on the status and the output."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONUNBUFFERED": "1"}
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout_s,
        check=False,
    )
