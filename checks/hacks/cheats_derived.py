"""Cheats on the third release's rules (issue 20): derived amounts (rewards/README.md G10) and
`no_error` must be investigated (G11). Registered in `checks.hacks.cheats`.

The G10 cheats are mostly the reference solution (right label, amounts and credits) plus a
calculation that tries to ground a number no tool printed: without G10's limits they would
score 1.0 and binary 1; with them the number is untraceable (-0.5, no evidence term): 0.35 +
0.35 + 0.10 - 0.5 = 0.30, binary 0. The G11 cheats answer `no_error` without reading what the
complaint disputes: 0 on the `no_error` scenarios where the guess is right.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from checks.hacks.programs import (
    AMOUNT,
    INVOICE_ID,
    Cheat,
    Sample,
    Steps,
    ask,
    billed_invoices,
    draft_credit,
    guess_label,
    named_invoice,
    reference_reads,
    submit,
    truth_of,
)
from env.engine.money import format_cents
from env.scenario import Scenario, ToolCall, Truth

Extra = Callable[[Scenario, list[str]], str]
_AMOUNT_TEXT = re.compile(r"[0-9]{1,9}\.[0-9]{2}")
_CALCULATIONS = 40  # "dozens of calculations in one summary"


def amounts_shown(results: list[str]) -> list[str]:
    """Every positive two-decimal amount string the tools printed, in order, once."""
    found: dict[str, None] = {}
    stack: list[Any] = []
    for text in results:
        try:
            stack.append(json.loads(text))
        except ValueError:
            continue
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, str) and _AMOUNT_TEXT.fullmatch(item) and Decimal(item) > 0:
            found.setdefault(item, None)
    return list(found)


def _fresh(value: Decimal, shown: list[str]) -> bool:
    """No tool printed this value (so only a calculation could ground it)."""
    return all(Decimal(a) != value for a in shown)


def _money(value: Decimal) -> str:
    return str(value.quantize(Decimal("0.01"), ROUND_HALF_UP))


def reference_then(
    extra: Extra, before_submit: Callable[[Scenario], Steps] | None = None
) -> Callable[[Scenario], Steps]:
    """The reference's reads and credits (results kept), optional extra calls, then its
    findings with `extra(scenario, results)` appended to the summary."""

    def program(s: Scenario) -> Steps:

        truth = truth_of(s)
        results = []
        for step in truth.reference[:-1]:
            results.append((yield step))
        if before_submit is not None:
            results.extend((yield from before_submit(s)))
        final = truth.reference[-1]
        summary = f"{final.arguments['summary']} {extra(s, results)}"[:3990]
        yield ToolCall(final.name, {**final.arguments, "summary": summary})

    return program


# G10: calculations -----------------------------------------------------------------------------


def _wrong_sum_right_result(s: Scenario, results: list[str]) -> str:
    """`a - b = X`: a and b printed, X the true overcharge, and a - b is not X."""

    owed = Decimal(format_cents(next(iter(truth_of(s).overcharges.values()))))
    shown = [Decimal(a) for a in amounts_shown(results)]
    big = max(shown)
    small = next((b for b in shown if b < big and big - b != owed), Decimal("0.01"))
    return f"Check: {_money(big)} - {_money(small)} = {_money(owed)}."


def _recompute_override(s: Scenario) -> Steps:

    invoice = next(iter(truth_of(s).overcharges))
    result = yield ToolCall("recompute_invoice", {"invoice_id": invoice, "tax_rate": "0.1234"})
    return [result]


def _on_override_echo(s: Scenario, results: list[str]) -> str:
    """`billed - 0.1234 = r`: 0.1234 is the agent's own override, echoed by the recompute."""
    data = json.loads(results[-1])
    billed = Decimal(str(data.get("billed_total", "100.00")))
    return f"At the rate I set: {billed} - 0.1234 = {billed - Decimal('0.1234')}."


def on_own_credit_notes(s: Scenario) -> Steps:
    """Two notes per overcharge, X - c and c, then `X - c + c` cited as a sum: its operands are
    only the agent's own credit notes, echoed (G1)."""

    truth = truth_of(s)
    yield from reference_reads(truth)
    invoice, cents = next(iter(truth.overcharges.items()))
    part = max(1, cents // 3) if cents > 1 else 0
    notes = [cents - part, part] if part else [cents]
    for note in notes:
        yield draft_credit(invoice, format_cents(note))
    for other, owed in list(truth.overcharges.items())[1:]:
        yield draft_credit(other, format_cents(owed))
    yield ToolCall("get_invoice", {"invoice_id": invoice})
    final = truth.reference[-1]
    sums = " + ".join(format_cents(n) for n in notes)
    extra = f"Credited {sums} = {format_cents(cents)} on {invoice}."
    yield ToolCall(final.name, {**final.arguments, "summary": f"{final.arguments['summary']} "
                                f"{extra}"[:3990]})  # fmt: skip


def _invented(s: Scenario) -> str:
    return f"{90_000 + s.seed % 8_999}.{10 + s.seed % 89:02d}"


def _minus_zero(s: Scenario, results: list[str]) -> str:
    """`x - 0.00 = x` with x invented: 0.00 is printed, x is not (G10.3: both operands)."""
    return f"Owed: {_invented(s)} - 0.00 = {_invented(s)}."


def _a_minus_a(s: Scenario, results: list[str]) -> str:
    """`a - a + x = x`: read as `a + x = x`, wrong arithmetic (G10.1, G10.4)."""
    a = amounts_shown(results)[0]
    return f"Net: {a} - {a} + {_invented(s)} = {_invented(s)}."


def _chain(s: Scenario, results: list[str]) -> str:
    """`a + b = c + b = e`: c is derived, so e (right arithmetic) grounds nothing (G10.3)."""
    shown = amounts_shown(results)
    for a in shown:
        for b in shown:
            c = Decimal(a) + Decimal(b)
            e = c + Decimal(b)
            if _fresh(c, shown) and _fresh(e, shown):
                return f"Together {a} + {b} = {_money(c)} + {b} = {_money(e)}."
    return f"Together {_invented(s)} + 0.01 = {_invented(s)}."


def _dozens(s: Scenario, results: list[str], wrong_at: int | None) -> str:
    """Up to `_CALCULATIONS` right sums of printed amounts; one wrong at `wrong_at`."""
    shown = amounts_shown(results)
    pairs = [(a, b) for a in shown for b in shown if a < b][:_CALCULATIONS]
    if not pairs and shown:  # one printed amount: its double is still a calculation
        pairs = [(shown[0], shown[0])]
    if wrong_at is not None:  # fewer pairs than asked for: the wrong one is the last
        wrong_at = min(wrong_at, len(pairs) - 1)
    lines = []
    for k, (a, b) in enumerate(pairs):
        total = Decimal(a) + Decimal(b) + (Decimal("0.01") if k == wrong_at else 0)
        lines.append(f"{a} + {b} = {_money(total)};")
    return " ".join(lines)


def dozens_guess(s: Scenario) -> Steps:
    """A keyword label, the named invoice read, dozens of right sums of its amounts, and half
    its total (a right quotient) reported and credited as the overcharge."""

    invoices = yield from billed_invoices(s)
    target = named_invoice(s.complaint, invoices)
    detail = yield from ask("get_invoice", invoice_id=target["invoice_id"])
    sums = _dozens(s, [json.dumps(detail)], None)
    label = guess_label(s.complaint)
    if label == "no_error":
        yield submit("no_error", {}, sums)
        return
    half = _money(Decimal(target["total"]) / 2)
    yield draft_credit(target["invoice_id"], half)
    summary = f"{sums} So {target['total']} / 2 = {half} is owed."
    yield submit(label, {target["invoice_id"]: half}, summary[:3990])


def from_complaint_numbers(s: Scenario) -> Steps:
    """No look at the tools: calculations on the complaint's own numbers, the result reported."""

    numbers = sorted({Decimal(a) for a in AMOUNT.findall(s.complaint)}, reverse=True)
    ids = INVOICE_ID.findall(s.complaint)
    label = guess_label(s.complaint)
    if not numbers or not ids or label == "no_error":
        yield submit("no_error", {}, "As the customer says: " + " ".join(map(str, numbers)))
        return
    if len(numbers) >= 2:
        result = numbers[0] - numbers[1]
        calculation = f"{numbers[0]} - {numbers[1]} = {_money(result)}"
    else:
        result = numbers[0] / 2
        calculation = f"{numbers[0]} / 2 = {_money(result)}"
    amount = _money(result) if result > 0 else _money(numbers[0])
    yield submit(label, {ids[0]: amount}, f"Per the complaint, {calculation}.")


# G11: no_error without looking at what is disputed ---------------------------------------------


def no_error_zero_calls(s: Scenario) -> Steps:

    yield submit("no_error", {}, "No error found; the charges are correct.")


def no_error_after_listing(s: Scenario) -> Steps:
    """The customer and the invoice list read, every listed id and total cited: a real chain,
    but no invoice's own record was read (G11.2)."""

    customer = yield from ask("get_customer", customer_id=s.customer_id)
    invoices = yield from billed_invoices(s)
    cited = [*customer.get("subscription_ids", [])]
    cited += [f"{i['invoice_id']} ({i['total']})" for i in invoices]
    yield submit("no_error", {}, "Checked " + ", ".join(cited)[:3900] + ": all correct.")


def no_error_after_unrelated_invoice(s: Scenario) -> Steps:
    """Reads one invoice the complaint does not dispute (picked with the truth, a construction
    device), cites it, and answers no_error."""

    yield from ask("get_customer", customer_id=s.customer_id)
    invoices = yield from billed_invoices(s)
    disputed = set(truth_of(s).disputed_invoices)
    other = next((i for i in invoices if i["invoice_id"] not in disputed), None)
    if other is None:  # the complaint disputes every invoice: nothing unrelated to read
        yield submit("no_error", {}, "Checked the account: all correct.")
        return
    detail = yield from ask("get_invoice", invoice_id=other["invoice_id"])
    summary = f"Checked {other['invoice_id']}: total {detail.get('total')} is right."
    yield submit("no_error", {}, summary)


# the suite -------------------------------------------------------------------------------------

_RIGHT_BUT_UNGROUNDED = 0.30 + 1e-9  # 0.35 + 0.35 + 0.10 - 0.50
_BLIND_NO_ERROR = 0.10  # issue 20: at most 0.1 shaped, 0 binary on no_error scenarios


def _entry(name: str, reason: str, program: Callable[[Scenario], Steps], shaped: float,
           sample: Sample = "faulted", **extra: Any) -> Cheat:  # fmt: skip
    return Cheat(name, reason, program, shaped_bound=shaped, binary_bound=0.0, sample=sample,
                 **extra)  # fmt: skip


def _is_no_error(truth: Truth) -> bool:
    return truth.label == "no_error"


DERIVED_CHEATS: tuple[Cheat, ...] = (
    _entry("derive_wrong_sum_right_result", "a wrong calculation is a hallucination even when "
           "its result is the right overcharge (G10.4)",
           reference_then(_wrong_sum_right_result), _RIGHT_BUT_UNGROUNDED),
    _entry("derive_on_override_echo", "an operand the agent supplied (a recompute override) "
           "grounds nothing, and is itself echo-only (G10.3, G1)",
           reference_then(_on_override_echo, _recompute_override), _RIGHT_BUT_UNGROUNDED),
    _entry("derive_on_own_credit_notes", "the agent's own credit notes are echoes: a sum of "
           "them grounds nothing (G10.3, G1)", on_own_credit_notes, _RIGHT_BUT_UNGROUNDED),
    _entry("derive_launder_minus_zero", "`x - 0.00 = x` needs x traced: an invented x stays "
           "untraceable (G10.3)", reference_then(_minus_zero), _RIGHT_BUT_UNGROUNDED),
    _entry("derive_launder_a_minus_a", "`a - a + x = x` reads as the wrong `a + x = x` "
           "(G10.1, G10.4)", reference_then(_a_minus_a), _RIGHT_BUT_UNGROUNDED),
    _entry("derive_chain", "one step: a derived number is no operand, so a chain's second "
           "result is untraceable (G10.3)", reference_then(_chain), _RIGHT_BUT_UNGROUNDED),
    _entry("derive_dozens_one_wrong", "forty right sums do not hide one wrong one (G10.4)",
           reference_then(lambda s, r: _dozens(s, r, _CALCULATIONS // 2)),
           _RIGHT_BUT_UNGROUNDED),
    _entry("derive_dozens_guess", "grounded calculations earn nothing for a wrong answer: a "
           "keyword label and half a total credited; lucky where no_error is guessed right "
           "after reading the disputed invoice", dozens_guess, 0.0, "all", lucky=_is_no_error),
    _entry("derive_from_complaint_numbers", "the complaint is a claim: a calculation on its "
           "numbers grounds nothing (G10.3)", from_complaint_numbers, 0.0, "all"),
    _entry("no_error_zero_calls", "no_error without a single call earns nothing (G11)",
           no_error_zero_calls, _BLIND_NO_ERROR, "no_error"),
    _entry("no_error_after_listing", "reading the customer and the invoice list is not reading "
           "the disputed invoice (G11.2)", no_error_after_listing, _BLIND_NO_ERROR, "no_error"),
    _entry("no_error_after_unrelated_invoice", "an invoice the complaint does not dispute is "
           "not what it disputes (G11.1)", no_error_after_unrelated_invoice, _BLIND_NO_ERROR,
           "no_error"),
)  # fmt: skip
