"""Lent connections and the read memo change nothing an episode shows: same answers, same bytes.

`env.connection_pool` lends a connection again only for an image with the same schema pages,
and `env.read_memo` answers a repeated read until the episode's first write. Each test plays
through `LedgerEnv.call`, as the agent does, and compares with what a connection of its own
(`open_database`) gives.
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from env.connection_pool import ConnectionPool, SchemaPages
from env.generation.generator import generate
from env.generation.splits import split_seeds
from env.ledger_env import LedgerEnv, open_database
from env.read_memo import MAX_CALLS, ReadMemo, memo_for
from env.scenario import Scenario, reveal_truth
from env.tool_specs import dispatch
from env.tools import BillingTools
from tests.env.conftest import MARCH, ok


def _tampered(image: bytes, *statements: str) -> bytes:
    connection = open_database(image)
    try:
        for statement in statements:
            connection.execute(statement)
        return connection.serialize()
    finally:
        connection.close()


def _replay(scenario: Scenario, episode_id: str) -> tuple[list[str], bytes]:
    env = LedgerEnv(scenario, episode_id=episode_id)
    outputs = [env.call(s.name, json.dumps(s.arguments)) for s in reveal_truth(scenario).reference]
    image = env.final_database()
    env.close()
    return outputs, image


def _alone(scenario: Scenario, episode_id: str) -> tuple[list[str], bytes]:
    """The reference on a connection of its own, through the same dispatch, no memo."""
    connection = open_database(scenario.database)
    tools = BillingTools(connection, episode_id=episode_id, now=scenario.opened_at)
    outputs = []
    for step in reveal_truth(scenario).reference:
        result = dispatch(tools, step.name, json.dumps(step.arguments))
        outputs.append(json.dumps(result, ensure_ascii=False))
    image = connection.serialize()
    connection.close()
    return outputs, image


def _with_notes() -> list[Scenario]:
    found = []
    for seed in split_seeds("eval"):
        scenario = generate("eval", seed)
        steps = reveal_truth(scenario).reference
        if sum(s.name == "draft_credit_note" for s in steps) >= 1:
            found.append(scenario)
        if len(found) == 4:
            return found
    raise LookupError("no eval reference drafts a credit note")


def test_replayed_episodes_show_the_same_outputs_and_leave_the_same_bytes() -> None:
    # the third replay runs on lent connections and answers its reads from the memo
    for scenario in _with_notes():
        alone = _alone(scenario, "ep-1")
        for _ in range(3):
            assert _replay(scenario, "ep-1") == alone


def test_an_insert_prepared_in_an_earlier_episode_is_not_reused() -> None:
    # a reused INSERT statement lays index cells out differently: same rows, other bytes
    scenario = _with_notes()[0]
    images = {_replay(scenario, "same-id")[1] for _ in range(4)}
    assert images == {_alone(scenario, "same-id")[1]}


def test_a_connection_is_lent_again_for_an_image_with_the_same_schema() -> None:
    pool = ConnectionPool()
    first, second = (generate("eval", seed).database for seed in split_seeds("eval")[:2])
    connection = pool.borrow(first)
    pool.give_back(connection)
    again = pool.borrow(second)
    assert again is connection
    assert (
        again.execute("SELECT COUNT(*) FROM invoices").fetchone()[0]
        == (open_database(second).execute("SELECT COUNT(*) FROM invoices").fetchone()[0])
    )
    pool.give_back(again)


def test_an_image_whose_schema_differs_under_the_same_cookie_gets_a_new_connection() -> None:
    # SQLite keeps a parsed schema while the schema cookie is unchanged: this image would be
    # read with the old schema on a lent connection
    image = generate("eval", split_seeds("eval")[0]).database
    cookie = open_database(image).execute("PRAGMA schema_version").fetchone()[0]
    sneaky = _tampered(
        image, "ALTER TABLE credit_notes ADD COLUMN extra TEXT", f"PRAGMA schema_version = {cookie}"
    )
    assert SchemaPages.of(sneaky) != SchemaPages.of(image)
    pool = ConnectionPool()
    parsed = pool.borrow(image)
    parsed.execute("SELECT * FROM credit_notes").fetchall()  # the schema is parsed now
    pool.give_back(parsed)
    connection = pool.borrow(sneaky)
    assert connection is not parsed
    columns = [d[0] for d in connection.execute("SELECT * FROM credit_notes").description]
    assert columns[-1] == "extra"
    pool.give_back(connection)


def test_a_closed_episode_answers_errors_even_for_a_read_the_memo_holds(
    hand_scenario: Scenario,
) -> None:
    arguments = json.dumps({"invoice_id": MARCH})
    live = LedgerEnv(hand_scenario)
    assert "error" not in json.loads(live.call("get_invoice", arguments))
    live.close()
    closed = LedgerEnv(hand_scenario)
    closed.close()
    assert "error" in json.loads(closed.call("get_invoice", arguments))
    # the closed episode's connection went back to the pool: another episode may hold it now
    other = LedgerEnv(hand_scenario)
    try:
        closed.final_database()
    except sqlite3.ProgrammingError:
        pass
    else:
        raise AssertionError("a closed episode still reads a database")
    other.close()


def test_after_its_first_write_an_episode_reads_its_own_database(hand_scenario: Scenario) -> None:
    first = LedgerEnv(hand_scenario)
    assert ok(first, "get_invoice", invoice_id=MARCH)["credit_notes"] == []
    ok(first, "draft_credit_note", invoice_id=MARCH, amount="5.00", reason="duplicate")
    notes = ok(first, "get_invoice", invoice_id=MARCH)["credit_notes"]
    assert [n["amount"] for n in notes] == ["5.00"]
    second = LedgerEnv(hand_scenario)  # the memo still answers with the pristine invoice
    assert ok(second, "get_invoice", invoice_id=MARCH)["credit_notes"] == []
    first.close()
    second.close()


def test_the_memo_is_keyed_by_the_image_bytes_not_the_scenario_id(
    hand_scenario: Scenario,
) -> None:
    changed = _tampered(hand_scenario.database, "UPDATE customers SET name = 'Someone Else'")
    assert memo_for(changed) is not memo_for(hand_scenario.database)
    assert memo_for(bytes(bytearray(hand_scenario.database))) is memo_for(hand_scenario.database)


def test_a_memo_stops_growing_at_its_bound() -> None:
    memo = ReadMemo()
    answer: Any = ("{}", False)
    for n in range(MAX_CALLS + 10):
        memo.put("get_invoice", json.dumps({"invoice_id": f"INV-{n}"}), answer)
    assert memo.get("get_invoice", json.dumps({"invoice_id": "INV-0"})) == answer
    assert memo.get("get_invoice", json.dumps({"invoice_id": f"INV-{MAX_CALLS}"})) is None
