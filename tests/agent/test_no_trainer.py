"""ART's types stay on the ART training path: the rollout, eval, the env, the rewards and the
gates import no `art`, in a fresh interpreter (this test session has ART's guards installed)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

EVERY_MODULE = """
import importlib, pkgutil, sys
for package in ("agent", "eval", "env", "rewards", "checks"):
    for info in pkgutil.walk_packages(importlib.import_module(package).__path__, package + "."):
        if not info.name.endswith("__main__"):
            importlib.import_module(info.name)
art = sorted(name for name in sys.modules if name == "art" or name.startswith("art."))
assert not art, f"imported {art}"
"""


def python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=300
    )


def test_the_rollout_and_the_eval_run_do_not_import_art():
    done = python("import agent.rollout, eval.run, sys; assert 'art' not in sys.modules")
    assert done.returncode == 0, done.stderr[-2000:]


def test_no_module_of_agent_eval_env_rewards_or_checks_imports_art():
    done = python(EVERY_MODULE)
    assert done.returncode == 0, done.stderr[-2000:]
