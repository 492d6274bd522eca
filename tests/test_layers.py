"""Imports only point down the layers, and no modules import each other (design: style guide).

Layers, lowest first: ledgergym (the version only) < env < rewards < agent < eval < training <
train.py; doors/ and billsleuth/ (other interfaces), checks/ (the CI gates) and experiments/
(research) sit above all and nothing else may import them; eval and rewards never import each
other (the grader's verdict and the training reward stay independent; only checks/agreement
compares them). Every .py is parsed with `ast`, imports inside functions and
under TYPE_CHECKING included, so a lazy import cannot hide an edge. Inside env/ the three rooms
(env/README.md, "Layout") point down too: the billing engine imports no other env module, scenario
generation never imports the episode runtime, and the runtime reaches generation only through
its one entry point, `env.generation.generator`.
Run: `python -m pytest tests/test_layers.py -q`.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("ledgergym", "env", "rewards", "agent", "eval", "training")
PACKAGES += ("doors", "billsleuth", "checks", "experiments")
TOP = ("doors", "billsleuth", "checks", "experiments")
RANK = {"ledgergym": -1, "env": 0, "rewards": 1, "agent": 2, "eval": 3, "training": 4, "train": 5}
RANK |= dict.fromkeys(TOP, 6)
APART = {frozenset({"eval", "rewards"})}  # neither may import the other, whatever the order

# env/'s rooms: the billing engine (what bills), scenario generation (what builds worlds) and the
# episode runtime (what an agent touches: every other env module), beside the types all three share
ENGINE, GENERATION, RUNTIME, SHARED = "env.engine", "env.generation", "env", "shared"
SHARED_MODULES = ("env.scenario", "env.labels", "env.cli")  # the scenario type, labels, plumbing
ENTRY = "env.generation.generator"  # `generate(split, seed)`: the runtime's one door to generation

Edge = tuple[str, str]  # (importing module, imported module), dotted names


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def project_files() -> dict[str, Path]:
    files = {module_name(p): p for pkg in PACKAGES for p in sorted((ROOT / pkg).rglob("*.py"))}
    files["train"] = ROOT / "train.py"
    return files


def _resolve(name: str, modules: dict[str, Path]) -> str | None:
    """The deepest project module `name` names: `env.cli.Parser` -> `env.cli`."""
    while name:
        if name in modules:
            return name
        name = name.rpartition(".")[0]
    return None


def _imported_names(tree: ast.AST, module: str, is_package: bool) -> Iterator[str]:
    package = module if is_package else module.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: climb level-1 packages above this module's package
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            # `from pkg import sub` imports the submodule pkg.sub when there is one
            yield from (f"{base}.{alias.name}" for alias in node.names)


def import_edges() -> list[Edge]:
    modules = project_files()
    edges: set[Edge] = set()
    for module, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for name in _imported_names(tree, module, path.name == "__init__.py"):
            target = _resolve(name, modules)
            if target is not None and target != module:
                edges.add((module, target))
    return sorted(edges)


def layer(module: str) -> str:
    return module.split(".")[0]


def breaks_layers(edge: Edge) -> bool:
    low, high = layer(edge[1]), layer(edge[0])
    if low == high:
        return False
    if frozenset({low, high}) in APART:
        return True
    if low in TOP:
        return high not in TOP
    return RANK[low] > RANK[high]


def room(module: str) -> str | None:
    """Which of env/'s rooms a module lives in; None outside env/."""
    if module in SHARED_MODULES:
        return SHARED
    for name in (ENGINE, GENERATION):
        if module == name or module.startswith(name + "."):
            return name
    return RUNTIME if module == "env" or module.startswith("env.") else None


def breaks_rooms(edge: Edge) -> bool:
    """The engine imports nothing else of env/; the shared types only the engine; generation
    never the runtime; the runtime not generation, except its entry point."""
    source, target = room(edge[0]), room(edge[1])
    if source is None or target is None or source == target or target == ENGINE:
        return False
    if source == RUNTIME and target == GENERATION:
        return edge[1] != ENTRY
    return target != SHARED or source == ENGINE


def cycles(edges: list[Edge]) -> list[list[str]]:
    """Every strongly connected group of two or more modules (Tarjan), each as one cycle."""
    graph: dict[str, list[str]] = {}
    for source, target in edges:
        graph.setdefault(source, []).append(target)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    groups: list[list[str]] = []

    def visit(node: str) -> None:  # recursion depth is bounded by the module count (~200)
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in graph.get(node, []):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(_cycle_through(sorted(group), graph))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return groups


def _cycle_through(group: list[str], graph: dict[str, list[str]]) -> list[str]:
    """One closed path inside a strongly connected group, from its first module back to it."""
    members, start = set(group), group[0]
    paths = {start: [start]}
    frontier = [start]
    while frontier:  # breadth first: the shortest way back to `start`
        node = frontier.pop(0)
        for nxt in sorted(graph.get(node, [])):
            if nxt == start:
                return [*paths[node], start]
            if nxt in members and nxt not in paths:
                paths[nxt] = [*paths[node], nxt]
                frontier.append(nxt)
    return group  # unreachable for a strongly connected group


def test_every_import_points_down_the_layers() -> None:
    wrong = [f"{a} -> {b}" for a, b in import_edges() if breaks_layers((a, b))]
    assert not wrong, "imports that run up the layers:\n" + "\n".join(wrong)


def test_env_rooms_point_down_generation_only_through_its_entry_point() -> None:
    edges = import_edges()
    wrong = [f"{a} -> {b}" for a, b in edges if breaks_rooms((a, b))]
    assert not wrong, "imports across env/'s rooms:\n" + "\n".join(wrong)
    # the rooms are real: each holds modules and the allowed edges between them occur
    assert ("env.generation.story", "env.engine.billing") in edges
    assert ("env.tools", "env.engine.billing") in edges
    assert ("env.ledger_env", "env.scenario") in edges
    assert ("env.versions", ENTRY) in edges


def test_no_modules_import_each_other() -> None:
    found = [" -> ".join(cycle) for cycle in cycles(import_edges())]  # one cycle per tangle
    assert not found, "import cycles:\n" + "\n".join(found)


def test_the_walker_sees_imports_inside_functions() -> None:
    edges = import_edges()
    assert ("eval.report.__main__", "eval.report.build") in edges  # inside main()
    assert ("checks.hacks.__main__", "checks.hacks.check") in edges


def test_relative_imports_resolve_against_the_importing_module() -> None:
    tree = ast.parse("from . import load\nfrom ..stats import mean\nfrom .paired import x")
    names = set(_imported_names(tree, "eval.report.build", is_package=False))
    assert names == {"eval.report.load", "eval.stats.mean", "eval.report.paired.x"}
    package = set(_imported_names(ast.parse("from . import build"), "eval.report", True))
    assert package == {"eval.report.build"}


def test_the_rules_catch_an_upward_import_an_apart_pair_and_a_cycle() -> None:
    assert breaks_layers(("env.generation.world", "agent.policy"))
    assert breaks_layers(("eval.grader", "rewards.reward"))
    assert breaks_layers(("training.runs", "checks.bench"))
    assert not breaks_layers(("checks.agreement", "rewards.reward"))
    assert not breaks_layers(("train", "training.runs"))
    assert not breaks_layers(("env.versions", "ledgergym"))
    assert breaks_layers(("ledgergym", "env.versions"))
    assert cycles([("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")]) == [["a", "b", "c", "a"]]


def test_the_room_rules_catch_each_crossing_and_allow_the_entry_point() -> None:
    assert breaks_rooms(("env.tools", "env.generation.builder"))  # a tool walking into generation
    assert breaks_rooms(("env.generation.story", "env.tools"))  # generation using the runtime
    assert breaks_rooms(("env.engine.billing", "env.labels"))  # the engine importing anything
    assert breaks_rooms(("env.engine.billing", "env.generation.world"))
    assert breaks_rooms(("env.scenario", "env.ledger_env"))
    assert not breaks_rooms(("env.versions", ENTRY))
    assert not breaks_rooms(("env.generation.complaints", "env.labels"))
    assert not breaks_rooms(("env.tools", "env.engine.money"))
    assert not breaks_rooms(("checks.invariants", "env.generation.builder"))  # above env: any
