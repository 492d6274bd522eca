"""The eval, heldout and eval-twins sets, frozen by content hashes in `env/data/manifest.json`.

A change to the generator that moves one eval scenario must be seen, not silently shift every
reported number, so `--check` regenerates both sets and compares field by field; it also checks
the split invariants (eval composition, held-out class never in train, disjoint name pools).
Run: `python -m checks.manifest --check` (exit 1 on any mismatch); `--write` rewrites the file.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from env.cli import EXIT_FAILED, Parser, map_seeds, positive_int, run_command
from env.generation.builder import data
from env.generation.generator import GENERATOR_VERSION, generate
from env.generation.splits import SPLITS, split_seeds
from env.labels import DIFFICULTIES, FAULT_LABELS, HELDOUT_LABEL
from env.ledger_env import open_database
from env.versions import generator_hash, tool_contract_hash

# the data stays with the generator it pins; only this check lives in checks/
MANIFEST_PATH = Path(str(resources.files("env").joinpath("data/manifest.json")))
FROZEN_SPLITS = ("eval", "heldout", "eval-twins")
ENTRY_FIELDS = ("scenario_id", "label", "difficulty", "database_sha256", "complaint_sha256")
TRAIN_CHECKED = 5000
EVAL_FAULTED, EVAL_NO_ERROR, MIN_PER_CLASS = 80, 20, 6


@dataclass(frozen=True)
class ScenarioFacts:
    """What the manifest pins of one scenario, plus the customer's name for the pool check."""

    split: str
    seed: int
    scenario_id: str
    label: str
    difficulty: str
    database_sha256: str
    complaint_sha256: str
    customer_name: str
    company: str

    def entry(self) -> dict[str, Any]:
        facts = asdict(self)
        return {key: facts[key] for key in ("split", "seed", *ENTRY_FIELDS)}


@dataclass(frozen=True)
class Mismatch:
    seed: int | str
    field: str
    expected: object
    got: object


def scenario_facts(split: str, seed: int) -> ScenarioFacts:
    scenario = generate.__wrapped__(split, seed)  # uncached: a check must regenerate
    connection = open_database(scenario.database)
    try:
        name, company = connection.execute(
            "SELECT name, company FROM customers WHERE id = ?", (scenario.customer_id,)
        ).fetchone()
    finally:
        connection.close()
    return ScenarioFacts(
        split=split,
        seed=seed,
        scenario_id=scenario.scenario_id,
        label=scenario._truth.label,
        difficulty=scenario.difficulty,
        database_sha256=hashlib.sha256(scenario.database).hexdigest(),
        complaint_sha256=hashlib.sha256(scenario.complaint.encode("utf-8")).hexdigest(),
        customer_name=name,
        company=company,
    )


def frozen_facts() -> list[ScenarioFacts]:
    return [
        f for split in FROZEN_SPLITS for f in map_seeds(scenario_facts, split, split_seeds(split))
    ]


def build_manifest(facts: list[ScenarioFacts]) -> dict[str, Any]:
    return {
        "generator_version": GENERATOR_VERSION,
        "generator_hash": generator_hash(),
        "tool_contract_hash": tool_contract_hash(),
        "scenarios": [f.entry() for f in facts],
    }


def write_manifest(manifest: dict[str, Any], path: Path = MANIFEST_PATH) -> None:
    path.write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")


def compare(expected: dict[str, Any], got: dict[str, Any]) -> list[Mismatch]:
    """Every difference that matters; the generator hash is only reported (it covers all of
    env/**/*.py, so a comment edit moves it without moving a single scenario)."""
    problems = []
    for name in ("generator_version", "tool_contract_hash"):
        if expected.get(name) != got[name]:
            problems.append(Mismatch("-", name, expected.get(name), got[name]))
    old = {(e["split"], e["seed"]): e for e in expected.get("scenarios", [])}
    new = {(e["split"], e["seed"]): e for e in got["scenarios"]}
    for key in sorted(old.keys() | new.keys()):
        seed = f"{key[0]}/{key[1]}"
        if key not in new:
            problems.append(Mismatch(seed, "presence", "in manifest", "not generated"))
        elif key not in old:
            problems.append(Mismatch(seed, "presence", "absent", "generated"))
        else:
            for name in ENTRY_FIELDS:
                if old[key].get(name) != new[key][name]:
                    problems.append(Mismatch(seed, name, old[key].get(name), new[key][name]))
    return problems


def composition_problems(frozen: list[ScenarioFacts], train: list[ScenarioFacts]) -> list[str]:
    """The split invariants of design §6, checked on what was actually generated."""
    problems = []
    evals = [f for f in frozen if f.split == "eval"]
    labels = Counter(f.label for f in evals)
    faulted = sum(n for label, n in labels.items() if label != "no_error")
    if len(evals) != EVAL_FAULTED + EVAL_NO_ERROR:
        problems.append(f"eval has {len(evals)} scenarios, not {EVAL_FAULTED + EVAL_NO_ERROR}")
    if faulted != EVAL_FAULTED or labels["no_error"] != EVAL_NO_ERROR:
        problems.append(f"eval has {faulted} faulted and {labels['no_error']} no_error")
    problems += [
        f"eval has {labels[label]} x {label}, fewer than {MIN_PER_CLASS}"
        for label in FAULT_LABELS
        if labels[label] < MIN_PER_CLASS
    ]
    missing = sorted(set(DIFFICULTIES) - {f.difficulty for f in evals})
    if missing:
        problems.append(f"eval lacks difficulties {missing}")
    held = [f for f in frozen if f.split == "heldout"]
    if len(held) != 50 or any(f.label != HELDOUT_LABEL for f in held):
        other = Counter(f.label for f in held if f.label != HELDOUT_LABEL)
        problems.append(f"heldout has {len(held)} scenarios, other labels: {dict(other)}")
    twins = {f.seed: f for f in frozen if f.split == "eval-twins"}
    if sorted(twins) != sorted(f.seed for f in evals) or any(
        t.label != "no_error" for t in twins.values()
    ):
        problems.append("eval-twins is not one no_error twin of each eval seed")
    problems += [
        f"eval-twins {f.seed}: difficulty {twins[f.seed].difficulty} != {f.difficulty}"
        for f in evals
        if f.seed in twins and twins[f.seed].difficulty != f.difficulty
    ]
    leaked = [f.seed for f in train if f.label == HELDOUT_LABEL]
    if leaked:
        problems.append(f"train seeds hold {HELDOUT_LABEL}: {leaked[:10]}")
    distinct = len({f.database_sha256 for f in train})
    if distinct != len(train):
        problems.append(f"train: {len(train)} seeds but {distinct} distinct databases")
    problems += name_pool_problems([*frozen, *train])
    return problems


def name_pool_problems(facts: list[ScenarioFacts]) -> list[str]:
    pools = data("name_pools.json")
    problems = []
    for f in facts:
        pool = pools[SPLITS[f.split].name_pool]
        first, _, last = f.customer_name.partition(" ")
        adjective, _, noun = f.company.partition(" ")
        if first not in pool["first"] or last not in pool["last"]:
            problems.append(f"{f.scenario_id}: customer {f.customer_name!r} is not from its pool")
        if adjective not in pool["company"]["adjectives"] or noun not in pool["company"]["nouns"]:
            problems.append(f"{f.scenario_id}: company {f.company!r} is not from its pool")
    return problems


def _main(argv: Sequence[str] | None) -> int:
    parser = Parser(prog="python -m checks.manifest", description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="rewrite env/data/manifest.json")
    parser.add_argument("--check", action="store_true", help="compare (the default)")
    parser.add_argument("--train-limit", type=positive_int, default=TRAIN_CHECKED)
    parser.add_argument("--path", type=Path, default=MANIFEST_PATH, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    facts = frozen_facts()
    got = build_manifest(facts)
    if args.write:
        write_manifest(got, args.path)
        print(f"wrote {len(facts)} scenarios to {args.path}")
        if not args.check:
            return 0
    if not args.path.exists():
        print(f"no manifest at {args.path}; run with --write")
        return EXIT_FAILED
    expected = json.loads(args.path.read_text(encoding="utf-8"))
    mismatches = compare(expected, got)
    for m in mismatches:
        print(f"MISMATCH seed {m.seed} {m.field}: expected {m.expected!r}, got {m.got!r}")
    if expected.get("generator_hash") != got["generator_hash"]:
        print(f"note: generator hash {expected.get('generator_hash')} -> {got['generator_hash']}")
    train = map_seeds(scenario_facts, "train", split_seeds("train", args.train_limit))
    val = map_seeds(scenario_facts, "val", split_seeds("val"))
    problems = composition_problems(facts, train) + name_pool_problems(val)
    for problem in problems:
        print(f"INVARIANT {problem}")
    print(
        f"{len(facts)} frozen scenarios, {len(mismatches)} mismatches; "
        f"{len(train)} train + {len(val)} val checked, {len(problems)} invariant problems"
    )
    return EXIT_FAILED if mismatches or problems else 0


def main(argv: Sequence[str] | None = None) -> int:
    return run_command("python -m checks.manifest", _main, argv)


if __name__ == "__main__":
    sys.exit(main())
