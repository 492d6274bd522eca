"""constraints/gpu-py311.txt: the GPU install resolves against it, every package pinned.

The slow test asks the package index, as `pip install --dry-run --report` for Linux x86_64 and
Python 3.11 (nothing is installed; with `fast-deps` pip reads only each wheel's metadata by
range requests where the index allows). It skips when the index cannot be reached.
    python -m pytest tests/train/test_gpu_constraints.py -m slow -p no:cacheprovider
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CONSTRAINTS = REPO / "constraints" / "gpu-py311.txt"
GPU_EXTRAS = ("agent", "train", "dev")  # docs/gpu.md: pip install -e '.[agent,train,dev]'
SOURCE_ONLY = {"causal-conv1d"}  # built against the installed torch: docs/gpu.md's second step
# manylinux tags from glibc 2.34 (ART's vLLM runtime needs it) down to 2.17
PLATFORMS = [f"manylinux_2_{minor}_x86_64" for minor in range(34, 16, -1)] + [
    "manylinux2014_x86_64"
]
UNREACHABLE = re.compile(
    r"NewConnectionError|ConnectTimeout|ReadTimeout|Temporary failure in name resolution|"
    r"Network is unreachable|Connection refused|Could not fetch URL|ProxyError|SSLError",
)


def normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def pins() -> dict[str, str]:
    found = {}
    for line in CONSTRAINTS.read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, sep, version = line.partition("==")
            assert sep and version and not re.search(r"[<>=!~;, ]", version), line
            found[normalise(name)] = version
    return found


def gpu_requirements() -> list[str]:
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    extras = project["optional-dependencies"]
    return list(project["dependencies"]) + [req for extra in GPU_EXTRAS for req in extras[extra]]


def pip(*args: str, timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pip", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_every_line_is_one_exact_pin_and_the_open_ends_are_closed():
    pinned = pins()
    assert pinned["openpipe-art"] == "0.5.18"
    assert pinned["torch"] == "2.10.0" and pinned["transformers"] == "5.2.0"  # ART's own pins
    for name in ("peft", "bitsandbytes", "xformers", "datasets", "huggingface-hub", "openai"):
        assert name in pinned, name  # what ART 0.5.18 leaves open
    for name in ("flash-linear-attention", "fla-core", "causal-conv1d"):  # the GDN kernels
        assert name in pinned, name
    # fla issue #640: 0.4.1's backward tile is miscompiled on H100/H200 by Triton 3.4-3.7.0
    assert pinned["fla-core"] == pinned["flash-linear-attention"] == "0.4.2"
    assert int(pinned["polars"].split(".")[0]) < 2 and int(pinned["openai"].split(".")[0]) < 3


def test_the_extras_name_the_kernels_that_the_constraints_pin():
    requirements = " ".join(gpu_requirements())
    assert "flash-linear-attention==0.4.2" in requirements and "openpipe-art[backend]==0.5.18" in (
        requirements
    )
    assert "causal-conv1d" not in requirements  # cannot build in pip's isolated build env


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_the_gpu_install_resolves_against_the_constraints(tmp_path):
    probe = pip(
        "index", "versions", "openpipe-art", "--retries", "0", "--timeout", "20", timeout=120
    )
    if probe.returncode != 0 or "0.5.18" not in probe.stdout:
        tail = (probe.stderr.strip().splitlines() or ["no answer"])[-1]
        pytest.skip(f"the package index is unreachable here: {tail}")
    report = tmp_path / "report.json"
    platform_args = [arg for tag in PLATFORMS for arg in ("--platform", tag)]
    done = pip(
        "install",
        "--dry-run",
        "--ignore-installed",
        "--report",
        str(report),
        "--target",
        str(tmp_path / "target"),
        "--python-version",
        "3.11",
        "--implementation",
        "cp",
        "--abi",
        "cp311",
        *platform_args,
        "--only-binary=:all:",
        "--use-feature=fast-deps",
        "--retries",
        "2",
        "-c",
        str(CONSTRAINTS),
        *gpu_requirements(),
        timeout=1700,
    )
    if done.returncode != 0 and UNREACHABLE.search(done.stderr):
        pytest.skip(f"the package index went away mid-resolve: {done.stderr.strip()[-300:]}")
    assert done.returncode == 0, f"the GPU install does not resolve: {done.stderr[-3000:]}"
    installed = {
        normalise(item["metadata"]["name"]): item["metadata"]["version"]
        for item in json.loads(report.read_text(encoding="utf-8"))["install"]
    }
    pinned = pins()
    unpinned = sorted(set(installed) - set(pinned))
    assert not unpinned, f"not pinned in {CONSTRAINTS.name} (re-pin, see its header): {unpinned}"
    assert all(installed[name] == pinned[name] for name in installed)
    assert set(pinned) - set(installed) == SOURCE_ONLY  # nothing stale is left pinned
