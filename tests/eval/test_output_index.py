"""The grader's per-call cache gives exactly the views its reader gives on the whole log.

`eval.grounding.call_views` reads each call once per content (`eval.grounding.output_index`),
one call at a time: the reader must judge every call on its own. These episodes hold it to that:
references, a re-read invoice that shows the episode's own credit note, errors and overrides.
"""

from __future__ import annotations

import json

from env.episode import record_episode
from env.generation.generator import generate
from env.generation.splits import split_seeds
from env.ledger_env import LedgerEnv, ToolRecord
from env.scenario import reveal_truth
from eval.grounding import output_index
from eval.grounding.trace import call_views, read_calls


def _logs() -> list[tuple[tuple[ToolRecord, ...], set[str]]]:
    """Reference episodes, each invoice re-read after its note, and two calls that fail."""
    logs = []
    for seed in split_seeds("eval")[:16]:
        scenario = generate("eval", seed)
        env = LedgerEnv(scenario, episode_id="ep")
        own = set()
        for step in reveal_truth(scenario).reference:
            if step.name == "submit_findings":
                env.call("get_invoice", json.dumps({"invoice_id": "INV-NOPE"}))
                env.call("recompute_invoice", "{not json")
            result = json.loads(env.call(step.name, json.dumps(step.arguments)))
            if step.name == "draft_credit_note" and "credit_note" in result:
                own.add(result["credit_note"]["credit_note_id"])
                invoice = step.arguments["invoice_id"]
                env.call("get_invoice", json.dumps({"invoice_id": invoice}))
        logs.append((record_episode(env).tool_log, own))
        env.close()
    return logs


def test_cached_views_equal_the_readers_views_of_the_whole_log() -> None:
    logs = _logs()
    assert any(own for _, own in logs), "no episode drafted a credit note"
    output_index.forget()
    for replay in range(2):  # first read, then every call from the cache
        for log, own in logs:
            assert call_views(log, own) == read_calls(log, own), replay


def test_the_same_call_with_other_own_notes_is_read_again() -> None:
    log, own = next((log, own) for log, own in _logs() if own)
    assert call_views(log, own) == read_calls(log, own)
    assert call_views(log, set()) == read_calls(log, set())
    assert call_views(log, set()) != call_views(log, own)
