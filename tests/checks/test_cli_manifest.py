"""`python -m checks.manifest`: the committed manifest matches the generator; drift is named.

`compare` and `composition_problems` are pure functions of manifest dicts and scenario facts,
so each invariant is shown failing on a small bent copy; the command runs in-process through
`main(argv)` (with a short train sample) and once as a real subprocess.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from checks.manifest import (
    MANIFEST_PATH,
    ScenarioFacts,
    compare,
    composition_problems,
    main,
    name_pool_problems,
)
from env.generation.builder import data
from env.labels import HELDOUT_LABEL

ROOT = Path(__file__).resolve().parents[2]
POOLS = data("name_pools.json")


def pool_name(pool: str) -> tuple[str, str]:
    """A (customer, company) pair drawn from one split's name pool."""
    names = POOLS[pool]
    company = names["company"]
    return (
        f"{names['first'][0]} {names['last'][0]}",
        f"{company['adjectives'][0]} {company['nouns'][0]}",
    )


@pytest.fixture(scope="module")
def committed() -> dict[str, object]:
    return json.loads(MANIFEST_PATH.read_text(encoding="utf-8"))


def facts_from(manifest: dict[str, object]) -> list[ScenarioFacts]:
    """Scenario facts as the manifest states them, with names from the right pools."""
    name, company = pool_name("eval")  # heldout draws from the eval pool too
    entries = manifest["scenarios"]
    assert isinstance(entries, list)
    return [ScenarioFacts(**e, customer_name=name, company=company) for e in entries]


def train_facts(count: int) -> list[ScenarioFacts]:
    name, company = pool_name("train")
    return [
        ScenarioFacts("train", 1_000_000 + n, f"train-{n}", "duplicate_payment", "L1",
                      f"{n:064x}", f"{n:064x}", name, company)
        for n in range(count)
    ]  # fmt: skip


def test_the_committed_manifest_freezes_eval_heldout_and_twins(
    committed: dict[str, object],
) -> None:
    entries = committed["scenarios"]
    assert isinstance(entries, list)
    assert [e["split"] for e in entries].count("eval") == 100
    assert [e["split"] for e in entries].count("heldout") == 50
    assert [e["split"] for e in entries].count("eval-twins") == 100
    assert set(entries[0]) == {
        "split",
        "seed",
        "scenario_id",
        "label",
        "difficulty",
        "database_sha256",
        "complaint_sha256",
    }


def test_compare_names_seed_field_expected_and_got(committed: dict[str, object]) -> None:
    got = json.loads(json.dumps(committed))
    got["scenarios"][3]["database_sha256"] = "f" * 64
    got["scenarios"][7]["label"] = "no_error"
    got["tool_contract_hash"] = "000000000000"
    problems = {(m.seed, m.field) for m in compare(committed, got)}
    first, second = committed["scenarios"][3], committed["scenarios"][7]  # type: ignore[index]
    assert problems == {
        (f"eval/{first['seed']}", "database_sha256"),
        (f"eval/{second['seed']}", "label"),
        ("-", "tool_contract_hash"),
    }


def test_compare_only_reports_a_new_generator_hash(committed: dict[str, object]) -> None:
    got = {**committed, "generator_hash": "something else"}
    assert compare(committed, got) == []


def test_compare_names_scenarios_that_appear_or_vanish(committed: dict[str, object]) -> None:
    got = {**committed, "scenarios": committed["scenarios"][1:]}  # type: ignore[index]
    [missing] = compare(committed, got)
    assert (missing.field, missing.expected, missing.got) == (
        "presence",
        "in manifest",
        "not generated",
    )


def test_the_committed_composition_holds(committed: dict[str, object]) -> None:
    assert composition_problems(facts_from(committed), train_facts(20)) == []


def test_a_held_out_label_in_train_is_an_invariant_problem(committed: dict[str, object]) -> None:
    train = train_facts(5)
    train[2] = replace(train[2], label=HELDOUT_LABEL)
    problems = composition_problems(facts_from(committed), train)
    assert problems == [f"train seeds hold {HELDOUT_LABEL}: [1000002]"]


def test_two_train_seeds_with_one_database_are_an_invariant_problem(
    committed: dict[str, object],
) -> None:
    train = train_facts(5)
    train[4] = replace(train[4], database_sha256=train[0].database_sha256)
    problems = composition_problems(facts_from(committed), train)
    assert problems == ["train: 5 seeds but 4 distinct databases"]


def test_a_thin_eval_class_is_an_invariant_problem(committed: dict[str, object]) -> None:
    facts = facts_from(committed)
    wrong = [n for n, f in enumerate(facts) if f.label == "wrong_tax_rate"]
    for n in wrong[:2]:
        facts[n] = replace(facts[n], label="no_error")
    problems = composition_problems(facts, train_facts(3))
    assert f"eval has {len(wrong) - 2} x wrong_tax_rate, fewer than 6" in problems
    assert "eval has 78 faulted and 22 no_error" in problems


def test_a_name_from_another_pool_is_reported() -> None:
    train_name, _ = pool_name("train")
    _, eval_company = pool_name("eval")
    eval_fact = ScenarioFacts("eval", 100_000, "eval-100000", "no_error", "L1", "a", "b",
                              train_name, eval_company)  # fmt: skip
    assert name_pool_problems([eval_fact]) == [
        f"eval-100000: customer {train_name!r} is not from its pool"
    ]


def test_check_passes_on_the_committed_manifest(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--check", "--train-limit", "30"]) == 0
    assert "0 mismatches" in capsys.readouterr().out


def test_check_prints_every_mismatch_of_a_bent_manifest(
    tmp_path: Path, committed: dict[str, object], capsys: pytest.CaptureFixture[str]
) -> None:
    bent = json.loads(json.dumps(committed))
    entry = bent["scenarios"][0]
    entry["complaint_sha256"] = "0" * 64
    path = tmp_path / "manifest.json"
    path.write_text(json.dumps(bent), encoding="utf-8")
    assert main(["--check", "--train-limit", "10", "--path", str(path)]) == 1
    out = capsys.readouterr().out
    expected = (
        f"MISMATCH seed eval/{entry['seed']} complaint_sha256: expected '{'0' * 64}', "
        f"got '{committed['scenarios'][0]['complaint_sha256']}'"  # type: ignore[index]
    )
    assert expected in out and "1 mismatches" in out


def test_write_then_check_agree(tmp_path: Path) -> None:
    path = tmp_path / "manifest.json"
    assert main(["--write", "--check", "--train-limit", "10", "--path", str(path)]) == 0
    assert len(json.loads(path.read_text(encoding="utf-8"))["scenarios"]) == 250


def test_a_bad_train_limit_is_one_line_and_status_two(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--check", "--train-limit", "-3"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "must be at least 1, got -3" in err


def test_the_module_runs_as_a_command() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "checks.manifest", "--check", "--train-limit", "20"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 invariant problems" in done.stdout
