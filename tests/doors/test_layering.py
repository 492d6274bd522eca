"""doors/ sits above eval: it may import env, rewards and eval, and nothing product-side imports it.

Runs without the doors' extras (it reads source text only).
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PRODUCT = ("env", "rewards", "agent", "eval", "training")
DOORS_MAY_IMPORT = {"doors", "env", "rewards", "eval"}


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


def test_no_product_module_imports_doors():
    sources = [ROOT / "train.py", *(p for d in PRODUCT for p in (ROOT / d).rglob("*.py"))]
    importers = [str(p.relative_to(ROOT)) for p in sources if "doors" in _imports(p)]
    assert importers == []


def test_doors_import_only_env_rewards_and_eval_of_the_product():
    product = {*PRODUCT, "checks", "experiments", "tests"}
    for path in (ROOT / "doors").rglob("*.py"):
        reached = _imports(path) & product
        assert reached <= DOORS_MAY_IMPORT, f"{path.name} imports {sorted(reached)}"
