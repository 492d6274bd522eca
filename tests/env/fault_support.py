"""Helpers the generated-fault tests share (tests/env/test_faults_*.py).

Those tests take generated scenarios of one label, replay the reference through `LedgerEnv`
and read the evidence back through a second episode, exactly as an agent would; the seed
search, the episodes and the reference check live here once. Not a test file itself.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from functools import cache
from typing import Any
from zoneinfo import ZoneInfo

from env.engine.money import format_cents
from env.generation.generator import generate
from env.generation.splits import spec, split_assignment
from env.ledger_env import LedgerEnv
from env.scenario import Scenario, reveal_truth
from tests.env.conftest import ok, query

LEVELS = ("L1", "L2", "L3")
PER_LEVEL = 4  # scenarios per label and difficulty unless a test asks for more


@cache
def seeds_for(label: str, difficulty: str, count: int, split: str = "train") -> tuple[int, ...]:
    """The first `count` seeds of the split that it assigns this label and difficulty."""
    found: list[int] = []
    seed = spec(split).first_seed
    while len(found) < count:
        assignment = split_assignment(split, seed)
        if (assignment.label, assignment.difficulty) == (label, difficulty):
            found.append(seed)
        seed += 1
    return tuple(found)


def scenarios(
    label: str, difficulty: str, count: int = PER_LEVEL, split: str = "train"
) -> list[Scenario]:
    return [generate(split, seed) for seed in seeds_for(label, difficulty, count, split)]


def all_levels(label: str, count: int = PER_LEVEL) -> list[Scenario]:
    return [s for level in LEVELS for s in scenarios(label, level, count)]


def local(stamp: str, timezone: str) -> datetime:
    """A timeline's UTC stamp as the customer's wall clock reads it."""
    moment = datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    return moment.astimezone(ZoneInfo(timezone))


class Tools:
    """A fresh episode on the scenario, used only to read what an agent could read.

    Its budget is unlimited so that a test may look at every invoice; the reference itself is
    replayed under the agent's budget by `replay`.
    """

    def __init__(self, scenario: Scenario) -> None:
        self.env = LedgerEnv(scenario, tool_budget=10_000)
        self.customer_id = scenario.customer_id

    def __call__(self, name: str, **arguments: Any) -> dict[str, Any]:
        return ok(self.env, name, **arguments)

    def customer(self) -> dict[str, Any]:
        return self("get_customer", customer_id=self.customer_id)

    def invoice(self, invoice_id: str) -> dict[str, Any]:
        return self("get_invoice", invoice_id=invoice_id)

    def invoices(self) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = self("list_invoices", customer_id=self.customer_id)[
            "invoices"
        ]
        return items

    def timeline(self, subscription_id: str) -> dict[str, Any]:
        return self("get_subscription_timeline", subscription_id=subscription_id)

    def timeline_of(self, invoice: dict[str, Any]) -> dict[str, Any]:
        return self.timeline(invoice["subscription_id"])


def investigate(scenario: Scenario) -> tuple[LedgerEnv, str, dict[str, Any]]:
    """A fresh episode, the customer's timezone and the affected subscription's timeline."""
    env = LedgerEnv(scenario)
    timezone = ok(env, "get_customer", customer_id=scenario.customer_id)["timezone"]
    first = next(iter(reveal_truth(scenario).overcharges))
    sub = ok(env, "get_invoice", invoice_id=first)["subscription_id"]
    return env, timezone, ok(env, "get_subscription_timeline", subscription_id=sub)


def replay(scenario: Scenario) -> LedgerEnv:
    """The reference played through an episode with the agent's budget; no call may fail."""
    episode = LedgerEnv(scenario)
    for step in reveal_truth(scenario).reference:
        result = json.loads(episode.call(step.name, json.dumps(step.arguments)))
        assert "error" not in result, (scenario.scenario_id, step, result)
    return episode


def credit_notes(episode: LedgerEnv) -> dict[str, int]:
    """Credited cents per invoice by this episode, summed as the grader sums them (credit notes
    support issued before the dispute are part of the world, not of the episode)."""
    rows = query(
        episode.final_database(),
        "SELECT invoice_id, SUM(amount_cents) FROM credit_notes WHERE episode_id IS NOT NULL "
        "GROUP BY invoice_id",
    )
    return {invoice_id: int(cents) for invoice_id, cents in rows}


def check_reference(scenario: Scenario, label: str) -> None:
    """The reference credits exactly the truth, submits it, and its outputs show each amount."""
    truth = reveal_truth(scenario)
    assert truth.label == label
    assert truth.overcharges and all(cents > 0 for cents in truth.overcharges.values())
    episode = replay(scenario)
    assert credit_notes(episode) == truth.overcharges
    findings = episode.findings
    assert findings is not None and findings.root_cause == label
    cited = {item.invoice_id: item.overcharge_cents for item in findings.affected_invoices}
    assert cited == truth.overcharges
    outputs = " ".join(episode.tool_outputs)
    for cents in truth.overcharges.values():
        assert f'"{format_cents(cents)}"' in outputs


def unwarranted_overcharge(invoice: dict[str, Any], recompute: Any) -> int:
    """What an invoice for a period nobody owes takes back: its total, or, where it carries the
    proration of a plan change made before that period, all but the closing invoice that bills
    that proration alone (`recompute(proration_end=<period start>)`'s difference) — unless the
    proration only credits (no invoice to go on: the whole total)."""
    inputs, start = invoice["billing_inputs"], invoice["period_start"]
    change = inputs.get("plan_change_date")
    total = int(invoice["total"].replace(".", ""))
    if not (inputs.get("previous_plan") and change and change < start):
        return total
    closing = recompute(proration_end=start)
    if closing["total"].startswith("-") or closing["total"] == "0.00":
        return total
    return int(closing["difference"].replace(".", ""))
