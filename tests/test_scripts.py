"""Every script under scripts/ imports against the code it measures: a renamed function breaks
it here, not in front of a user (`padding_waste.py` once imported a function the recipe work
had removed)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

SCRIPTS = sorted((Path(__file__).resolve().parents[1] / "scripts").glob("*.py"))


def _load(path: Path) -> ModuleType:
    name = f"script_{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)  # a guarded `main()`: importing runs nothing
    return module


@pytest.mark.parametrize("path", SCRIPTS, ids=[p.name for p in SCRIPTS])
def test_the_script_imports_and_has_a_main(path: Path) -> None:
    assert callable(_load(path).main)


def test_padding_waste_prints_a_step_of_the_default_run(capsys, monkeypatch) -> None:
    module = _load(next(p for p in SCRIPTS if p.name == "padding_waste.py"))
    monkeypatch.setattr(sys, "argv", ["padding_waste.py", "--steps", "1"])
    assert module.main() == 0
    printed = capsys.readouterr().out
    assert "step 1: auditor episode lengths" in printed and "padded share" in printed
