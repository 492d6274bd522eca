"""The reward's per-call cache gives exactly what its reader gives on the whole log.

`rewards.provenance.trace_episode` reads each call once per content (`rewards.output_index`);
these episodes (references, an invoice re-read after the episode's own note, failing calls)
hold the cached evidence to `split_log` + `call_evidence` on the whole log.
"""

from __future__ import annotations

import json

from env.episode import record_episode
from env.generation.generator import generate
from env.generation.splits import split_seeds
from env.ledger_env import LedgerEnv, ToolRecord
from env.scenario import reveal_truth
from rewards import output_index
from rewards.evidence import split_log
from rewards.output_index import evidence_by_call
from rewards.provenance import call_evidence


def _logs() -> list[tuple[ToolRecord, ...]]:
    logs = []
    for seed in split_seeds("eval")[:16]:
        scenario = generate("eval", seed)
        env = LedgerEnv(scenario, episode_id="ep")
        for step in reveal_truth(scenario).reference:
            if step.name == "submit_findings":
                env.call("get_invoice", json.dumps({"invoice_id": "INV-NOPE"}))
                env.call("recompute_invoice", "{not json")
            env.call(step.name, json.dumps(step.arguments))
            if step.name == "draft_credit_note":
                invoice = step.arguments["invoice_id"]
                env.call("get_invoice", json.dumps({"invoice_id": invoice}))
        logs.append(record_episode(env).tool_log)
        env.close()
    return logs


def test_cached_evidence_equals_the_readers_evidence_of_the_whole_log() -> None:
    logs = _logs()
    output_index.forget()
    for replay in range(2):  # first read, then every call from the cache
        for log in logs:
            whole = [call_evidence(parts) for parts in split_log(log)]
            assert evidence_by_call(log, call_evidence) == whole, replay


def test_the_same_output_is_read_again_when_the_own_notes_differ() -> None:
    # G1: an invoice re-read after the episode's own note echoes it; alone, it shows a note
    log = next(log for log in _logs() if any(r.name == "draft_credit_note" for r in log))
    reread = 1 + next(i for i, r in enumerate(log) if r.name == "draft_credit_note")
    alone = evidence_by_call(log[reread : reread + 1], call_evidence)[0]
    in_episode = evidence_by_call(log, call_evidence)[reread]
    assert alone != in_episode
    assert in_episode == [call_evidence(p) for p in split_log(log)][reread]
