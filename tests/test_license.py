"""LedgerGym is Apache-2.0, and everything that states a license says so.

Why: the repository, its package metadata, the dataset card `python -m env.export` writes, the
environment card and the adapter's model card each travel on their own (PyPI, the Hugging Face
Hub); a card that says `unknown` or another license is a legal statement, not a typo.
Run: `python -m pytest tests/test_license.py -q`.
"""

from __future__ import annotations

import hashlib
import tomllib
from pathlib import Path

from env.export import dataset_card, scenario_row
from env.generation.generator import generate

ROOT = Path(__file__).resolve().parent.parent
COPYRIGHT = "Copyright 2026 The LedgerGym Authors"
# sha256 of apache.org's LICENSE-2.0.txt (http:// links, as Debian's common-licenses copy)
APACHE_2_SHA256 = "cfc7749b96f63bd31c3c42b5c471bf756814053e847c10f3eb003417bc523d30"


def _yaml_header(card: str) -> list[str]:
    """The lines between a card's opening and closing `---`."""
    lines = card.splitlines()
    assert lines[0] == "---", "a Hub card starts with its YAML header"
    return lines[1 : lines.index("---", 1)]


def test_the_license_file_is_the_whole_apache_2_text_under_the_projects_copyright():
    first, text = (ROOT / "LICENSE").read_text(encoding="utf-8").split("\n", 1)
    assert first == COPYRIGHT
    assert hashlib.sha256(text.encode("utf-8")).hexdigest() == APACHE_2_SHA256, (
        "LICENSE must hold the Apache License 2.0 verbatim after its copyright line"
    )


def test_the_package_metadata_declares_apache_2_by_its_spdx_id_and_ships_the_file():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["license"] == "Apache-2.0"
    assert project["license-files"] == ["LICENSE"]


def test_the_readme_and_the_environment_card_name_the_license_and_link_the_file():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    card = (ROOT / "env" / "CARD.md").read_text(encoding="utf-8")
    assert "Apache-2.0" in readme and "(LICENSE)" in readme
    assert "License: Apache-2.0" in card and "(../LICENSE)" in card


def test_the_exported_dataset_card_says_apache_2_in_its_header_and_its_text():
    card = dataset_card("eval", [scenario_row(generate("eval", 100000))])
    assert "license: apache-2.0" in _yaml_header(card)
    assert "License: Apache-2.0" in card and "unknown" not in card


def test_the_adapters_model_card_says_apache_2_in_its_header():
    from training.art.export import model_card
    from training.runs import load_run_config

    card = model_card(load_run_config("binary-01"), 3, history=[])
    assert "license: apache-2.0" in _yaml_header(card)
