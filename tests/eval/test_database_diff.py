"""The grader's database diff: the fast path (only credit_notes read) equals the full diff.

`eval.database_diff` skips reading every table when every page outside credit_notes' b-tree
roots is byte-identical; these tests hold both paths to the same `DatabaseDiff` on honest
episodes (fast path taken) and on tampered images (whatever path they take).
"""

from __future__ import annotations

import json

import pytest

from env.generation.generator import generate
from env.generation.splits import split_seeds
from env.ledger_env import LedgerEnv, open_database
from env.scenario import Scenario, reveal_truth
from eval import database_diff
from eval.database_diff import diff_databases


def _full(initial: bytes, final: bytes) -> database_diff.DatabaseDiff:
    return database_diff._compare(
        database_diff._initial_snapshot(initial), database_diff._snapshot(final)
    )


def _final(scenario: Scenario, episode_id: str = "ep") -> bytes:
    env = LedgerEnv(scenario, episode_id=episode_id)
    for step in reveal_truth(scenario).reference:
        env.call(step.name, json.dumps(step.arguments))
    image = env.final_database()
    env.close()
    return image


def _tampered(image: bytes, *statements: str) -> bytes:
    connection = open_database(image)
    try:
        for statement in statements:
            connection.execute(statement)
        return connection.serialize()
    finally:
        connection.close()


@pytest.fixture(scope="module")
def scenarios() -> list[Scenario]:
    return [generate("eval", seed) for seed in split_seeds("eval")[:12]]


def test_reference_episodes_take_the_fast_path_and_agree_with_the_full_diff(
    scenarios: list[Scenario],
) -> None:
    for scenario in scenarios:
        final = _final(scenario)
        assert database_diff._layout(scenario.database).holds_for(final)
        assert diff_databases(scenario.database, final) == _full(scenario.database, final)


def test_an_untouched_image_is_no_change(scenarios: list[Scenario]) -> None:
    image = scenarios[0].database
    assert diff_databases(image, image) == database_diff.DatabaseDiff((), (), ())


@pytest.mark.parametrize(
    "statements",
    [
        ("UPDATE invoices SET total_cents = total_cents - 1",),
        ("UPDATE customers SET notes = 'changed'",),
        ("DELETE FROM payments",),
        ("DROP TABLE disputes",),
        ("CREATE TABLE extra (x)",),
        ("DELETE FROM credit_notes",),
        ("INSERT INTO credit_notes VALUES ('CN-9', 'INV-X', 5, 'USD', 'r', 'issued', NULL, 't')",),
        ("ALTER TABLE credit_notes ADD COLUMN memo TEXT",),
        ("ALTER TABLE credit_notes RENAME TO notes_old",),
        ("UPDATE credit_notes SET amount_cents = amount_cents + 1",),
        ("VACUUM",),
    ],
)
def test_a_tampered_image_gets_the_same_diff_as_the_full_comparison(
    scenarios: list[Scenario], statements: tuple[str, ...]
) -> None:
    for scenario in scenarios[:4]:
        for base in (scenario.database, _final(scenario)):
            final = _tampered(base, *statements)
            assert diff_databases(scenario.database, final) == _full(scenario.database, final)


def test_many_notes_that_outgrow_their_root_pages_still_agree(scenarios: list[Scenario]) -> None:
    scenario = scenarios[0]
    rows = ", ".join(
        f"('CN-{n:04d}', 'INV-X', {n}, 'USD', '{'long reason ' * 20}', 'draft', 'ep', 't')"
        for n in range(1, 200)
    )
    final = _tampered(scenario.database, f"INSERT INTO credit_notes VALUES {rows}")
    diff = diff_databases(scenario.database, final)
    assert diff == _full(scenario.database, final)
    assert len(diff.added_notes) == 199
