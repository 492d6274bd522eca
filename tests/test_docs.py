"""The docs hold together: every "design §N" the code cites exists, the README stays an index,
and no relative link in the README or docs/ points at a missing file.

Why: the design is cited from docstrings and comments all over the tree; a renumbered or
dropped section would leave those citations dangling without any other test noticing.
Run: `python -m pytest tests/test_docs.py -q`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DESIGN = ROOT / "docs" / "design.md"
README_MAX_LINES = 150

SCANNED_SUFFIXES = {".py", ".md", ".toml"}
SKIPPED_DIRS = {"__pycache__", "node_modules", "results", "outputs", "exports"}
_SECTION = r"\d+(?:\.\d+)*"
# "design §1.2", "Design §5", and ranges such as "design §5–6" (each end must resolve)
CITATION = re.compile(rf"design\s+§\s*({_SECTION})(?:\s*[–-]\s*({_SECTION}))?", re.IGNORECASE)
HEADING = re.compile(rf"^#+\s.*?§({_SECTION})\b", re.MULTILINE)
# [text](target) and ![alt](target); a title after the target ("...") is ignored
LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
EXTERNAL = re.compile(r"^[a-z][a-z0-9+.-]*:", re.IGNORECASE)  # http:, https:, mailto:, ...


def scanned_files() -> Iterator[Path]:
    """Source and docs of the repository: *.py, *.md, *.toml and everything under .ci/;
    hidden folders other than .ci (.venv, .git, caches) and generated output are skipped."""
    for path in sorted(ROOT.rglob("*")):
        parts = path.relative_to(ROOT).parts
        folders = parts[:-1]
        if any(
            (part.startswith(".") and part != ".ci")
            or part in SKIPPED_DIRS
            or part.endswith(".egg-info")
            for part in folders
        ):
            continue
        if not path.is_file() or parts[-1].startswith("."):
            continue
        if path.suffix in SCANNED_SUFFIXES or folders[:1] == (".ci",):
            yield path


def design_sections() -> set[str]:
    return set(HEADING.findall(DESIGN.read_text(encoding="utf-8")))


def citations() -> Iterator[tuple[str, int, str]]:
    """(file, line, section) for every design citation outside docs/design.md itself."""
    for path in scanned_files():
        if path == DESIGN:
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        for number, line in enumerate(text.splitlines(), start=1):
            for match in CITATION.finditer(line):
                for section in match.groups():
                    if section:
                        yield path.relative_to(ROOT).as_posix(), number, section


def linked_docs() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def test_every_design_citation_in_the_tree_names_a_section_heading_of_docs_design_md() -> None:
    sections = design_sections()
    found = list(citations())
    dangling = [
        f"{where}:{line}: design §{section}"
        for where, line, section in found
        if section not in sections
    ]
    assert found, "no design citations found: the scan is broken"
    assert not dangling, (
        f"{len(dangling)} citation(s) name no heading of docs/design.md "
        f"(headings have §{', §'.join(sorted(sections))}):\n" + "\n".join(dangling)
    )


def test_the_design_document_numbers_the_six_sections_the_code_was_written_against() -> None:
    assert {"1", "1.1", "1.2", "2", "3", "4", "5", "6"} <= design_sections()


def test_the_readme_is_an_index_of_at_most_150_lines() -> None:
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_MAX_LINES, (
        f"README.md has {len(lines)} lines; keep it an index (≤ {README_MAX_LINES}) and move "
        "depth to docs/ or a folder's README"
    )


def test_every_relative_link_in_the_readme_and_docs_points_at_an_existing_file() -> None:
    missing = []
    for doc in linked_docs():
        text = doc.read_text(encoding="utf-8")
        for match in LINK.finditer(text):  # the whole text: link text may wrap across lines
            target = match.group(1)
            if EXTERNAL.match(target) or target.startswith("#"):
                continue
            if not (doc.parent / target.split("#", 1)[0]).exists():
                line = text.count("\n", 0, match.start(1)) + 1
                missing.append(f"{doc.relative_to(ROOT).as_posix()}:{line}: {target}")
    assert not missing, f"{len(missing)} link(s) point at nothing:\n" + "\n".join(missing)


def _install_args(line: str) -> list[str]:
    """What follows `pip install` on a line, without -q (the README's line is run verbatim)."""
    words = line.replace("python -m pip", "pip").split("&&")
    torch = next(part for part in words if "torch==" in part).split()
    return [word for word in torch[torch.index("install") + 1 :] if word != "-q"]


def test_the_readme_and_ci_install_torch_by_the_same_cpu_index_line() -> None:
    """The README promises a CPU torch on any machine, and .ci/run checks that promise
    (`torch.version.cuda is None`) only if it runs the README's line."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    line = next(x for x in readme.splitlines() if "pip install" in x and "torch==" in x)
    args = _install_args(line)
    assert "--index-url" in args and "https://download.pytorch.org/whl/cpu" in args
    assert "--no-deps" in args  # only torch is asked of that index: no wait per dependency
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").replace("\\\n", " ")
    ci_line = next(x for x in ci.splitlines() if "pip install" in x and "torch==" in x)
    assert _install_args(ci_line) == args
    assert "torch.version.cuda" in ci
