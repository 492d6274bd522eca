"""One version for the package: ledgergym.__version__, read by pyproject, heading CHANGELOG.md.

The changelog's newest numbered release is the version the code carries (an unreleased entry may
head it); every release after the first says whether its scores are comparable with the one
before (CHANGELOG.md's rules).
"""

from __future__ import annotations

import itertools
import re
import tomllib
from pathlib import Path

import ledgergym
from eval.summary import render_markdown, summarize

ROOT = Path(__file__).resolve().parent.parent
RELEASE = re.compile(r"^## (\d+\.\d+\.\d+) — (.*)$", re.MULTILINE)


def _releases() -> list[tuple[str, str]]:
    return RELEASE.findall((ROOT / "CHANGELOG.md").read_text(encoding="utf-8"))


def test_pyproject_reads_its_version_from_the_package() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert "version" not in project["project"] and "version" in project["project"]["dynamic"]
    dynamic = project["tool"]["setuptools"]["dynamic"]["version"]
    assert dynamic == {"attr": "ledgergym.__version__"}
    assert "ledgergym*" in project["tool"]["setuptools"]["packages"]["find"]["include"]


def test_the_newest_release_in_the_changelog_is_the_package_version() -> None:
    # an entry still being written ("## 9.1.0 — unreleased — ...") may head the changelog; the
    # package carries the newest release, and is bumped when that entry is released
    releases = [r for r in _releases() if not r[1].startswith("unreleased")]
    assert re.fullmatch(r"\d+\.\d+\.\d+", ledgergym.__version__)
    assert releases[0][0] == ledgergym.__version__


def test_releases_are_newest_first_and_each_says_whether_scores_are_comparable() -> None:
    releases = _releases()
    versions = [tuple(int(part) for part in v.split(".")) for v, _ in releases]
    assert versions == sorted(versions, reverse=True) and len(set(versions)) == len(versions)
    for (version, heading), (before, _) in itertools.pairwise(releases):
        major, previous = int(version.split(".")[0]), int(before.split(".")[0])
        expected = "NOT comparable" if major != previous else "comparable"
        assert f"scores {expected} with {before}" in heading, version


def test_a_summary_prints_the_version_its_stamp_carries() -> None:
    stamp = {"model": "m", "split": "eval", "ledgergym_version": ledgergym.__version__}
    text = render_markdown(summarize([], k=1, stamp=stamp))
    assert f"LedgerGym {ledgergym.__version__}, commit" in text
