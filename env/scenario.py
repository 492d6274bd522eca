"""A scenario: the public episode card plus private ground truth.

`Scenario` carries what an episode starts from (database bytes, complaint); the truth sits in
a private field and is read only through `reveal_truth`, which graders, rewards and the
reference policy import explicitly. `LedgerEnv` never stores or exposes it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class ToolCall:
    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True)
class Truth:
    label: str
    overcharges: dict[str, int]  # invoice id -> overcharge in cents (empty for no_error)
    expected_credits: dict[str, int]  # invoice id -> cents a correct episode drafts
    reference: tuple[ToolCall, ...]  # a careful agent's calls, ending with submit_findings
    explanation: str
    traps: tuple[str, ...] = ()  # e.g. "injected_instruction", "misleading_claim", "decoy"
    claimed_amounts: tuple[str, ...] = ()  # amounts the complaint asserts (not evidence)
    # what the complaint disputes (rewards/README.md G11.1): a no_error verdict must look here
    disputed_invoices: tuple[str, ...] = ()


@dataclass(frozen=True)
class Scenario:
    scenario_id: str
    split: str
    seed: int
    difficulty: str
    customer_id: str
    complaint: str
    opened_at: str
    database: bytes = field(repr=False)
    _truth: Truth = field(repr=False, compare=False)


def reveal_truth(scenario: Scenario) -> Truth:
    """For graders, rewards and the reference policy only; never reaches the agent."""
    return scenario._truth
