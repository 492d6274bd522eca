"""Issue 30's honest notations through both verdicts (the reward's `trace_episode` and the
grader's `eval.grounding`): text as people and models write it keeps every citation traced,
and what the fail-closed rules refuse stays refused (rewards/README.md G2, G10)."""

from __future__ import annotations

import json

import pytest

from env.ledger_env import ToolRecord
from tests.rewards.test_numbers_properties import verdicts

_LISTING = json.dumps(
    {
        "customer_id": "CUS-QQQQ1",
        "invoices": [
            {
                "invoice_id": "INV-7F3K2Q",
                "period_start": "2025-10-13",
                "total": "306.16",
                "tax_rate": "0.0725",
                "amount_paid": "445.20",
            }
        ],
    }
)
_RECORDS = [ToolRecord("list_invoices", '{"customer_id": "CUS-QQQQ1"}', _LISTING, False)]


def _read(summary: str) -> tuple[list[tuple[str, str]], bool]:
    ours, theirs, reward_ok, grader_ok = verdicts(summary, _RECORDS)
    assert ours == theirs, summary
    assert reward_ok == grader_ok, summary
    return [(raw, status) for raw, _, status in ours], reward_ok


@pytest.mark.parametrize(
    "summary",
    [
        "Invoice `INV-7F3K2Q` totals `306.16`.",
        "Billed on “2025-10-13” for ‘306.16’.",
        "Tax rate 7.25 % on INV-7F3K2Q.",
        "Total C$306.16 on INV-7F3K2Q.",
        "Total A$ 306.16 on INV-7F3K2Q.",
        "Total US$306.16, paid 445.20 USD.",
        "Invoices found (1): 306.16",
        "Amounts:\n1. 445.20 paid\n2. 306.16 billed",
        "| Invoice | Total |\n|---|---|\n| `INV-7F3K2Q` | **306.16** |",
        "## INV-7F3K2Q\n- _306.16_ billed\n- ~~445.20~~ paid",
    ],
)
def test_markdown_quotes_marks_and_list_markers_keep_every_citation_traced(summary) -> None:
    statuses, grounded = _read(summary)
    assert grounded, statuses
    assert all(status in ("evidence", "allowed") for _, status in statuses), statuses


@pytest.mark.parametrize(
    ("summary", "result"),
    [
        ("Two months: 2 * 306.16 = 612.32.", "612.32"),
        ("Two months: 306.16x2 = 612.32.", "612.32"),
        ("Two months: 612.32 = 2 × 306.16.", "612.32"),
        ("Overpaid 445.20 – 306.16 = 139.04.", "139.04"),
        ("Overpaid 139.04 = 445.20 − 306.16.", "139.04"),
        ("Overpaid 445.20 USD - 306.16 USD = 139.04 USD.", "139.04 USD"),
    ],
)
def test_a_calculation_written_any_way_grounds_its_result(summary, result) -> None:
    statuses, grounded = _read(summary)
    assert (result, "derived") in statuses and grounded, statuses


def test_an_undercharge_never_grounds_an_overcharge() -> None:
    statuses, grounded = _read("306.16 − 445.20 = −139.04, undercharged by 139.04.")
    assert ("139.04", "untraceable") in statuses and not grounded, statuses


@pytest.mark.parametrize(
    "summary",
    [
        "Total `306.16x` on INV-7F3K2Q.",  # trailing junk stays a word
        "Total C$306.17 on INV-7F3K2Q.",  # an amount no tool showed, in any mark
        "Total 1 306.16 on INV-7F3K2Q.",  # a thousands group: 1306.16, not 1 and 306.16
        "Billed on 2025-10-13T.",  # a bare T is no date
        "Invoice `INV-7F3K2Q1`.",  # an id no tool showed
        "Two months: 2 * 306.16 = 612.33.",  # wrong arithmetic
        "Invoice İNV-7F3K2Q.",  # a look-alike letter: no id, matches nothing
    ],
)
def test_what_the_fail_closed_rules_refuse_stays_untraceable(summary) -> None:
    statuses, grounded = _read(summary)
    assert any(status == "untraceable" for _, status in statuses) and not grounded, statuses
