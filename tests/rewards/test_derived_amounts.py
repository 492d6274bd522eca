"""Derived amounts (rewards/README.md G10): a written calculation grounds its result, in both
readers (`rewards.derived` for the reward, `eval.grounding.derive` for the grader).

Examples run the reader on tool outputs shaped as the tools print them, then on a real eval
episode played through `LedgerEnv`, where the true overcharge is printed by no read but is the
difference of two printed amounts; a property test holds the two readers to the same statuses
on generated calculations.
"""

from __future__ import annotations

import json
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from env.engine.money import format_cents
from env.episode import EpisodeRecord, record_episode
from env.generation.generator import generate
from env.generation.splits import split_seeds
from env.ledger_env import LedgerEnv, ToolRecord
from env.scenario import Scenario, reveal_truth
from eval.grader import grade_episode
from rewards.reward import RewardConfig, compute_reward
from tests.rewards.test_numbers_properties import amount_notation, verdicts

_PAYMENTS = json.dumps(
    {
        "customer_id": "CUS-QQQQ1",
        "payments": [
            {"payment_id": "PAY-7F3K2Q", "invoice_id": "INV-7F3K2Q", "amount": "1027.03"},
            {"payment_id": "PAY-8G4L3R", "invoice_id": "INV-7F3K2Q", "amount": "400.00"},
        ],
    }
)


def _shown(*outputs: str) -> list[ToolRecord]:
    return [ToolRecord("list_payments", '{"customer_id": "CUS-QQQQ1"}', o, False) for o in outputs]


def _statuses(summary: str, records: list[ToolRecord] | None = None) -> tuple[list, bool]:
    """The citations' (raw, status), the same in both readers, and the shared verdict."""
    ours, theirs, reward_ok, grader_ok = verdicts(summary, records or _shown(_PAYMENTS))
    assert ours == theirs, summary
    assert reward_ok == grader_ok, summary
    return [(raw, status) for raw, _, status in ours], reward_ok


def test_the_design_example_1027_03_minus_400_00_is_627_03_grounded_in_both_readers() -> None:
    statuses, grounded = _statuses("Paid 1027.03 − 400.00 = 627.03 too much.")
    assert statuses == [("1027.03", "evidence"), ("400.00", "evidence"), ("627.03", "derived")]
    assert grounded


def test_the_design_example_with_a_wrong_result_is_a_hallucination_in_both_readers() -> None:
    statuses, grounded = _statuses("Paid 1027.03 − 400.00 = 600.00 too much.")
    assert statuses[-1] == ("600.00", "untraceable") and not grounded


@pytest.mark.parametrize(
    "written",
    [
        "1027.03 - 400.00 = 627.03",
        "$1,027.03 − $400.00 = $627.03",
        "USD1027.03 - 400.00USD = 627.03 USD",
        "1 027,03 − 400,00 = 627,03",
        "400.00 + 1027.03=1427.03",
        "400.00 x 3 = 1200.00",
        "3 × $400.00 = $1,200.00",
        "400.00 * 12 = 4800.00",
        "1027.03 / 3 = 342.34",
        "1027.03 ÷ 2 = 513.52",
        "400.00 - 1027.03 = -627.03",
    ],
)
def test_a_right_calculation_on_shown_amounts_grounds_its_result_in_any_notation(
    written: str,
) -> None:
    statuses, grounded = _statuses(f"Worked out: {written}.")
    assert statuses[-1][1] == "derived" and grounded, statuses


@pytest.mark.parametrize(
    ("written", "why"),
    [
        ("1027.03 / 3 = 342.35", "a quotient rounds half up to the cent"),
        ("1027.03 ÷ 2 = 513.51", "513.515 rounds half up to 513.52"),
        ("400.00 x 3 = 1200.01", "a product is exact"),
        ("400.00 − 1027.03 = 627.03", "the sign is read"),
        ("400.00 / 0 = 0.00", "no division by zero"),
    ],
)
def test_a_wrong_calculation_makes_its_result_untraceable(written: str, why: str) -> None:
    statuses, grounded = _statuses(f"Worked out: {written}.")
    assert statuses[-1][1] == "untraceable" and not grounded, why


def test_a_wrong_result_stays_untraceable_even_where_a_tool_printed_it() -> None:
    # 1027.03 is printed, but it is also the result of a wrong calculation: a hallucination
    # wherever it is cited (G10.4)
    statuses, grounded = _statuses("Paid 1027.03; 1027.03 - 400.00 = 1027.03.")
    assert statuses == [("1027.03", "untraceable"), ("400.00", "evidence")]
    assert not grounded


def test_a_product_or_quotient_needs_a_small_count() -> None:
    for written in ("400.00 x 13 = 5200.00", "400.00 x 1 = 400.01", "400.00 / 20.00 = 20.00"):
        statuses, _ = _statuses(f"Worked out: {written}.")
        assert statuses[-1][1] == "untraceable", (written, statuses)
    statuses, _ = _statuses("Worked out: 400.00 x $3 = 1200.00.")  # $3 is money, not a count
    assert statuses[-1] == ("1200.00", "untraceable")


def test_a_count_operand_grounds_nothing_except_as_the_n_of_a_product() -> None:
    statuses, _ = _statuses("Worked out: 400.00 - 3 = 397.00.")
    assert statuses[-1] == ("397.00", "untraceable")
    statuses, _ = _statuses("Worked out: 3 x 4 = 12.00.")
    assert statuses[-1] == ("12.00", "untraceable")


def test_a_derived_number_is_no_operand_one_step_only() -> None:
    statuses, grounded = _statuses("1027.03 - 400.00 = 627.03 - 400.00 = 227.03.")
    assert statuses == [
        ("1027.03", "evidence"),
        ("400.00", "evidence"),
        ("627.03", "derived"),
        ("227.03", "untraceable"),
    ]
    assert not grounded


def test_an_operand_only_echoed_back_from_the_agents_argument_grounds_nothing() -> None:
    echo = ToolRecord(
        "recompute_invoice",
        '{"invoice_id": "INV-7F3K2Q", "fx_rate": "1.5123"}',
        json.dumps(
            {"invoice_id": "INV-7F3K2Q", "assumptions": {"fx_rate": "1.5123"}, "total": "1027.03"}
        ),
        False,
    )
    statuses, grounded = _statuses("So 1027.03 - 1.5123 = 1025.5177.", [echo])
    assert statuses == [
        ("1027.03", "evidence"),
        ("1.5123", "echo_only"),
        ("1025.5177", "untraceable"),
    ]
    assert not grounded


def test_a_calculation_written_result_first_or_with_three_operands_grounds_nothing() -> None:
    statuses, _ = _statuses("Then 627.03 = 1027.03 - 400.00.")
    assert statuses[0] == ("627.03", "untraceable")
    statuses, _ = _statuses("Then 1027.03 - 1027.03 + 400.00 = 400.00.")  # reads 1027.03 + 400
    assert statuses[-1] == ("400.00", "untraceable")


def test_an_operator_glued_to_its_operands_is_one_word_not_a_calculation() -> None:
    statuses, grounded = _statuses("Paid 1027.03−400.00 = 627.03.")
    assert statuses == [("1027.03-400.00", "untraceable"), ("627.03", "untraceable")]
    assert not grounded


# a real episode ---------------------------------------------------------------------------------


def _reads(scenario: Scenario) -> list[Any]:
    """The reference's reads, without the recompute that prints the difference."""
    skip = ("draft_credit_note", "submit_findings", "recompute_invoice")
    return [step for step in reveal_truth(scenario).reference if step.name not in skip]


def _amounts(outputs: list[str]) -> set[Decimal]:
    found: set[Decimal] = set()
    stack: list[Any] = [json.loads(o) for o in outputs]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, str) and item.count(".") == 1 and item.replace(".", "").isdigit():
            found.add(Decimal(item))
    return found


@pytest.fixture(scope="module")
def unprinted() -> tuple[Scenario, str, Decimal, Decimal, Decimal]:
    """An eval scenario with one overcharge that none of the reads prints but that is the
    difference of two amounts they print: (scenario, invoice, a, b, a - b)."""
    for seed in split_seeds("eval"):
        scenario = generate("eval", seed)
        truth = reveal_truth(scenario)
        if len(truth.overcharges) != 1:
            continue
        ((invoice, cents),) = truth.overcharges.items()
        env = LedgerEnv(scenario)
        outputs = [env.call(step.name, json.dumps(step.arguments)) for step in _reads(scenario)]
        env.close()
        shown, owed = _amounts(outputs), Decimal(cents) / 100
        if owed in shown:
            continue
        for a in sorted(shown):
            if a - owed in shown:
                return scenario, invoice, a, a - owed, owed
    raise AssertionError("no eval scenario with an unprinted overcharge")


def _episode(scenario: Scenario, invoice: str, amount: Decimal, summary: str) -> EpisodeRecord:
    env = LedgerEnv(scenario, episode_id="ep-derived")
    for step in _reads(scenario):
        env.call(step.name, json.dumps(step.arguments))
    money = format_cents(int(amount * 100))
    note = {"invoice_id": invoice, "amount": money, "reason": "Verified overcharge"}
    env.call("draft_credit_note", json.dumps(note))
    findings = {
        "root_cause": reveal_truth(scenario).label,
        "affected_invoices": [{"invoice_id": invoice, "overcharge_amount": money}],
        "summary": summary,
    }
    env.call("submit_findings", json.dumps(findings))
    record = record_episode(env)
    env.close()
    return record


def _both(scenario: Scenario, record: EpisodeRecord) -> tuple[float, float, bool]:
    truth = reveal_truth(scenario)
    shaped = compute_reward(truth, record).total
    binary = compute_reward(truth, record, RewardConfig(variant="binary")).total
    return shaped, binary, grade_episode(truth, record, scenario.database).grounded_success


def test_an_overcharge_no_tool_printed_is_grounded_by_a_written_subtraction(unprinted) -> None:
    scenario, invoice, a, b, owed = unprinted
    record = _episode(scenario, invoice, owed, f"Billed {a}, due {b}: {a} - {b} = {owed}.")
    assert _both(scenario, record) == (1.0, 1.0, True)


def test_the_same_overcharge_without_its_calculation_is_untraceable(unprinted) -> None:
    scenario, invoice, a, b, owed = unprinted
    record = _episode(scenario, invoice, owed, f"Billed {a}, due {b}; {owed} too much.")
    # 0.35 + 0.35 + 0.10 - 0.50: right, but the amount is traced nowhere
    assert _both(scenario, record) == (0.3, 0.0, False)


def test_the_same_overcharge_with_a_wrong_calculation_is_a_hallucination(unprinted) -> None:
    scenario, invoice, a, b, owed = unprinted
    wrong = f"{a} - {b - Decimal('0.01')} = {owed}"
    record = _episode(scenario, invoice, owed, f"Billed {a}: {wrong}.")
    assert _both(scenario, record) == (0.3, 0.0, False)


# the two readers agree on generated calculations ----------------------------------------------


@st.composite
def calculation(draw: st.DrawFn, shown: tuple[int, int]) -> str:
    """`a op b = c` on shown or invented amounts, counts or non-counts, right or wrong."""
    a = shown[0] if draw(st.booleans()) else draw(st.integers(1, 9_999_999))
    op = draw(st.sampled_from(["-", "\u2212", "+", "x", "\u00d7", "*", "/", "\u00f7"]))
    if op in ("-", "\u2212", "+"):
        b = shown[1] if draw(st.booleans()) else draw(st.integers(1, 9_999_999))
        c = Decimal(a - b if op != "+" else a + b) / 100
        right = draw(amount_notation(b))
    else:
        n = draw(st.sampled_from([1, 2, 3, 7, 12, 13]))
        product = op in ("x", "\u00d7", "*")
        exact = Decimal(a * n) / 100 if product else Decimal(a) / 100 / n
        c = exact if product else exact.quantize(Decimal("0.01"), ROUND_HALF_UP)
        right = draw(st.sampled_from([str(n), f"{n}.00", f"${n}"]))
    c += draw(st.sampled_from([Decimal(0), Decimal(0), Decimal("0.01")]))
    result = draw(amount_notation(int(abs(c) * 100)))
    sign = "-" if c < 0 else ""
    return f"{draw(amount_notation(a))} {op} {right} = {sign}{result}"


@settings(max_examples=150, deadline=None, derandomize=True)
@given(st.data(), st.integers(100, 9_999_999), st.integers(100, 9_999_999))
def test_the_reward_and_the_grader_read_every_calculation_alike(
    data: st.DataObject, first: int, second: int
) -> None:
    shown = json.dumps({"total": format_cents(first), "paid": format_cents(second)})
    pieces = [data.draw(calculation((first, second))) for _ in range(data.draw(st.integers(1, 3)))]
    summary = " ; ".join(pieces)
    ours, theirs, reward_ok, grader_ok = verdicts(summary, _shown(shown))
    assert ours == theirs, summary
    assert reward_ok == grader_ok, summary
