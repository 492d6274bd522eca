"""Hand-made episode lines in the shape of the log contract (/work/notes/contracts.md).

The harness adds `transcript`, `findings`, `end_reason` and the grader `grounded_success` and
`number_trace`; until a log carries them, these lines do (`ContractLine` accepts the extra
fields, and keeps working once `EpisodeLine` declares them). Each line is built to trip one
report screen, so a test can say which.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import ConfigDict

from eval.episode_log import EpisodeLine
from eval.report.load import RunData

PAID = {
    "root_cause": 0.35,
    "amounts": 0.35,
    "action": 0.1,
    "evidence": 0.2,
    "false_reversal": 0.0,
    "hallucination": 0.0,
    "extra_invoices": 0.0,
    "tool_cost": 0.0,
}
INVOICE = {"invoice_id": "INV-AB12CD", "total": "120.00", "lines": [{"amount": "12.40"}]}


class ContractLine(EpisodeLine):
    """An episode line that may carry the contract's newer fields."""

    model_config = ConfigDict(extra="allow")


def grade(success: bool, **fields: Any) -> dict[str, Any]:
    base = {
        "success": success,
        "submitted": True,
        "truncated": False,
        "reported_label": "duplicate_payment",
        "label_correct": success,
        "invoices_correct": success,
        "amounts_correct": success,
        "credits_correct": success,
        "database_clean": True,
        "false_reversal": False,
        "hallucinated_numbers": False,
        "tool_calls": 2,
        "credits": {"INV-AB12CD": 1240} if success else {},
        "over_credited": {},
        "untraceable": [],
        "changed_tables": [],
    }
    return {**base, **fields}


def transcript(summary: str, output: str = json.dumps(INVOICE)) -> list[dict[str, Any]]:
    submitted = {
        "root_cause": "duplicate_payment",
        "affected_invoices": [{"invoice_id": "INV-AB12CD", "overcharge_amount": "12.40"}],
        "summary": summary,
    }
    return [
        {"role": "system", "content": "You are BillSleuth."},
        {"role": "user", "content": "I was charged twice for INV-AB12CD. <b>not html</b>"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "name": "get_invoice", "arguments": '{"invoice_id": "INV-AB12CD"}'}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "name": "get_invoice", "content": output},
        {
            "role": "assistant",
            "content": "Submitting.",
            "tool_calls": [
                {"id": "c2", "name": "submit_findings", "arguments": json.dumps(submitted)}
            ],
        },
        {
            "role": "tool",
            "tool_call_id": "c2",
            "name": "submit_findings",
            "content": '{"accepted": true}',
        },
    ]


def line(scenario: str, sample: int = 0, *, success: bool = True, **fields: Any) -> ContractLine:
    label = fields.pop("label", "duplicate_payment")
    return ContractLine(
        scenario_id=scenario,
        sample=sample,
        split="eval",
        seed=fields.pop("seed", 0),
        label=label,
        difficulty=fields.pop("difficulty", "L1"),
        policy="fixture",
        success=success,
        reward_total=fields.pop("reward_total", 1.0 if success else 0.0),
        reward_terms=fields.pop("reward_terms", PAID if success else {}),
        tool_calls=fields.pop("tool_calls", 2),
        **fields,
    )


def traced(summary: str) -> list[dict[str, Any]]:
    return (
        [
            {
                "text": "INV-AB12CD",
                "where": "invoice_id",
                "value": "INV-AB12CD",
                "status": "evidence",
                "sources": [0],
            },
            {
                "text": "12.40",
                "where": "amount",
                "value": "12.40",
                "status": "evidence",
                "sources": [0],
            },
            {
                "text": "99.99",
                "where": "summary",
                "value": "99.99",
                "status": "untraceable",
                "sources": [],
            },
        ]
        if "99.99" in summary
        else []
    )


def contract_lines() -> list[ContractLine]:
    good_summary = "Charged twice: INV-AB12CD shows 12.40 twice; also 99.99 from nowhere."
    copied = json.dumps({"invoice": INVOICE, "note": "x" * 200})
    return [
        # grounded success with a full transcript and number trace
        line(
            "s1",
            findings=None,
            transcript=transcript(good_summary),
            end_reason="submitted",
            grade=grade(True, grounded_success=True, number_trace=traced(good_summary)),
        ),
        # high reward but a failed grade
        line(
            "s2",
            success=False,
            reward_total=0.9,
            reward_terms={**PAID, "action": 0.0},
            grade=grade(False, grounded_success=False),
            label="coupon_not_applied",
        ),
        # binary reward (all terms paid) while the grader says not grounded
        line(
            "s3",
            success=True,
            grade=grade(True, grounded_success=False),
            label="proration_error",
            difficulty="L2",
        ),
        # the same findings on two different scenarios, one summary copied from tool output
        line(
            "s4",
            success=False,
            transcript=transcript(copied, copied),
            grade=grade(False, grounded_success=False),
            label="no_error",
            findings={"root_cause": "no_error", "affected_invoices": [], "summary": copied},
        ),
        line(
            "s5",
            success=False,
            grade=grade(False, grounded_success=False, credits={"I": 5}),
            label="no_error",
            difficulty="L3",
            findings={"root_cause": "no_error", "affected_invoices": [], "summary": copied},
        ),
        # ran out of tool budget
        line(
            "s6",
            success=False,
            tool_calls=40,
            end_reason="tool_budget",
            grade=grade(False, grounded_success=False),
            label="timezone_period_boundary",
        ),
        # an error line: no grade
        line("s7", success=False, error="ValueError: boom", reward_total=None),
    ]


def contract_run(directory: Path, name: str = "fixture") -> RunData:
    config = {"model": name, "kind": "program", "split": "eval", "k": 1}
    return RunData(name=name, path=directory, config=config, lines=list(contract_lines()))
