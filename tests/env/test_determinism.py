"""The generator is a pure function of (split, seed), and each split draws names from its pool.

`generate` is cached, so determinism is checked on the uncached function (`__wrapped__`) and
in a fresh Python process with another PYTHONHASHSEED. Labels whose fault builder is not
written yet are skipped by name; everything that exists is checked.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from env.generation.generator import generate
from env.generation.splits import split_assignment
from env.scenario import Scenario
from tests.env.conftest import available_seeds, builder_available, query

ROOT = Path(__file__).resolve().parents[2]
POOLS_FILE = ROOT / "env" / "generation" / "data" / "name_pools.json"
POOLS = json.loads(POOLS_FILE.read_text(encoding="utf-8"))
SEEDS = {
    "train": range(1_000_000, 1_000_400),
    "val": range(200_000, 200_100),
    "eval": range(100_000, 100_100),
    "heldout": range(300_000, 300_050),
}
POOL_OF_SPLIT = {"train": "train", "val": "val", "eval": "eval", "heldout": "eval"}


def seeds_or_skip(split: str, limit: int) -> list[int]:
    seeds = available_seeds(split, SEEDS[split], limit)
    if not seeds:
        missing = sorted({split_assignment(split, s).label for s in SEEDS[split]})
        missing = [label for label in missing if not builder_available(label)]
        pytest.skip(
            f"no fault builder written yet for any label of split {split!r} "
            f"(missing in env/generation/faults/: {', '.join(missing)})"
        )
    return seeds


def one_seed_per_label(split: str) -> list[int]:
    """The first seed of each label that has a builder, so every written fault is covered."""
    chosen: dict[str, int] = {}
    for seed in seeds_or_skip(split, len(SEEDS[split])):
        chosen.setdefault(split_assignment(split, seed).label, seed)
    return sorted(chosen.values())


def _sha(scenario: Scenario) -> str:
    return hashlib.sha256(scenario.database + scenario.complaint.encode("utf-8")).hexdigest()


@pytest.mark.parametrize("split", ["train", "eval"])
def test_the_same_split_and_seed_give_byte_identical_scenarios(split: str) -> None:
    for seed in one_seed_per_label(split):
        first = generate.__wrapped__(split, seed)
        second = generate.__wrapped__(split, seed)
        assert first is not second
        assert first.database == second.database, (split, seed)
        assert first.complaint == second.complaint
        assert (first.customer_id, first.opened_at, first.difficulty) == (
            second.customer_id,
            second.opened_at,
            second.difficulty,
        )


def test_a_fresh_process_with_another_hash_seed_generates_the_same_bytes() -> None:
    seeds = one_seed_per_label("train")
    expected = [_sha(generate.__wrapped__("train", seed)) for seed in seeds]
    script = (
        "import hashlib, sys\n"
        "from env.generation.generator import generate\n"
        "for seed in map(int, sys.argv[1:]):\n"
        "    s = generate('train', seed)\n"
        "    print(hashlib.sha256(s.database + s.complaint.encode('utf-8')).hexdigest())\n"
    )
    environment = {**os.environ, "PYTHONHASHSEED": "12345", "PYTHONPATH": str(ROOT)}
    output = subprocess.run(
        [sys.executable, "-c", script, *map(str, seeds)],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout.split()
    assert output == expected


def test_different_seeds_give_different_scenarios() -> None:
    scenarios = [generate("train", seed) for seed in seeds_or_skip("train", 8)]
    assert len({s.database for s in scenarios}) == len(scenarios)
    assert len({s.customer_id for s in scenarios}) == len(scenarios)


def _customer_name(scenario: Scenario) -> tuple[str, str, str]:
    ((name, company),) = query(scenario.database, "SELECT name, company FROM customers")
    first, last = name.split(" ", 1)
    return first, last, company


@pytest.mark.parametrize("split", ["train", "val", "eval", "heldout"])
def test_each_split_draws_customer_names_only_from_its_own_pool(split: str) -> None:
    own = POOLS[POOL_OF_SPLIT[split]]
    others = [POOLS[p] for p in POOLS if p != POOL_OF_SPLIT[split]]
    for seed in seeds_or_skip(split, 12):
        first, last, company = _customer_name(generate(split, seed))
        assert first in own["first"] and last in own["last"], (split, seed, first, last)
        adjective, noun = company.split(" ", 1)
        assert adjective in own["company"]["adjectives"] and noun in own["company"]["nouns"]
        for pool in others:
            assert first not in pool["first"] and last not in pool["last"], (split, seed)


def test_the_name_pools_do_not_overlap() -> None:
    for kind in ("first", "last"):
        names = [set(pool[kind]) for pool in POOLS.values()]
        assert sum(len(n) for n in names) == len(set().union(*names)), kind


def test_the_generator_hash_covers_every_env_module_the_generator_imports() -> None:
    """A scenario's bytes come from the modules `env.generation.generator` imports; a result stamped
    with the generator hash must change when any of them does
    (`env.versions.generation_sources`)."""
    code = (
        "import sys, env.generation.generator; "
        "print(' '.join(sorted(m for m in sys.modules if m.startswith('env.'))))"
    )
    root = Path(__file__).resolve().parents[2]
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=root, capture_output=True, text=True, check=True
    ).stdout.split()
    from env.versions import generation_sources

    hashed = {
        p.relative_to(root / "env").with_suffix("").as_posix().removesuffix("/__init__")
        for p in generation_sources()
    }
    imported = {m.removeprefix("env.").replace(".", "/") for m in out}
    assert imported <= hashed, sorted(imported - hashed)
