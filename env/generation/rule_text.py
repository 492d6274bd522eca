"""The rule sentence of a reference summary (world v6, issue 39 item 2): for each invoice the
truth credits, the billing rule the engine applied there and its values, read off the invoice's
correct inputs (`env.engine.rules`). `generator.reference_solution` appends them, so every
reference states what the engine does, whatever words its fault builder chose.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import date

from env.engine.calendar import fx_day, utc_to_local_date
from env.engine.money import format_cents, format_rate
from env.engine.rules import rule_sentence
from env.generation.builder import WorldBuilder
from env.generation.faults.base import FaultOutcome
from env.generation.world import Invoice

Rule = Callable[[WorldBuilder, Invoice, FaultOutcome], str]
TIMEZONE_WHAT = {"cancellation": "the cancellation", "trial_end": "the trial's end"}


def rule_text(b: WorldBuilder, outcome: FaultOutcome, overcharges: dict[str, int]) -> str:
    """One rule sentence per invoice with an overcharge (none for `no_error`)."""
    assert b.draft is not None
    rule = RULES.get(outcome.label)
    if rule is None:
        return ""
    return " ".join(rule(b, b.draft.invoice(i), outcome) for i in overcharges)


def _issue_day(b: WorldBuilder, invoice: Invoice) -> date:
    return utc_to_local_date(invoice.issued_at, b.customer.timezone)


def _end(b: WorldBuilder, invoice: Invoice) -> date:
    """Where the cancellation behind an invoice billed after it took effect."""
    if invoice.correct is not None and invoice.correct.proration_end is not None:
        return invoice.correct.proration_end
    story = next(s for s in b.stories if s.sub.id == invoice.subscription_id)
    assert story.cancel_effective is not None
    return story.cancel_effective


def _duplicate(b: WorldBuilder, invoice: Invoice, _: FaultOutcome) -> str:
    assert b.draft is not None
    net = sum(
        {"succeeded": 1, "refunded": -1}.get(p.status, 0) * p.amount_cents
        for p in b.draft.recorded_payments()
        if p.invoice_id == invoice.id
    )
    total = invoice.billed_amounts().total_cents
    currency = invoice.billed.currency
    return rule_sentence(
        "duplicate_payment", invoice=invoice.id, total=format_cents(total), currency=currency,
        net=format_cents(net),
    )  # fmt: skip


def _tax(b: WorldBuilder, invoice: Invoice, _: FaultOutcome) -> str:
    right = invoice.correct
    assert right is not None
    return rule_sentence(
        "wrong_tax_rate", invoice=invoice.id, jurisdiction=right.tax_jurisdiction,
        day=_issue_day(b, invoice).isoformat(), rate=format_rate(right.tax_rate),
    )  # fmt: skip


def _exempt(b: WorldBuilder, invoice: Invoice, _: FaultOutcome) -> str:
    cert = b.customer.exemption
    assert cert is not None
    where = b.customer.exemption_jurisdiction or b.customer.tax_jurisdiction
    return rule_sentence(
        "tax_exempt_charged", invoice=invoice.id, day=_issue_day(b, invoice).isoformat(),
        certificate=cert[0], valid_from=cert[1], valid_until=cert[2], jurisdiction=where,
    )  # fmt: skip


def _coupon(b: WorldBuilder, invoice: Invoice, _: FaultOutcome) -> str:
    right = invoice.correct
    assert right is not None and right.coupon is not None
    start = invoice.billed.period_start.isoformat()
    return rule_sentence(
        "coupon_not_applied", invoice=invoice.id, start=start, coupon=right.coupon.code
    )


def _seats(b: WorldBuilder, invoice: Invoice, _: FaultOutcome) -> str:
    right = invoice.correct
    assert right is not None
    start = invoice.billed.period_start.isoformat()
    return rule_sentence("seat_count_mismatch", invoice=invoice.id, start=start, seats=right.seats)


def _proration(b: WorldBuilder, invoice: Invoice, _: FaultOutcome) -> str:
    right = invoice.correct
    assert right is not None and right.plan_change_date is not None
    day = right.plan_change_date.isoformat()
    return rule_sentence("proration_error", invoice=invoice.id, day=day)


def _downgrade(b: WorldBuilder, invoice: Invoice, _: FaultOutcome) -> str:
    right = invoice.correct
    assert right is not None
    start = invoice.billed.period_start.isoformat()
    return rule_sentence(
        "downgrade_not_applied", invoice=invoice.id, start=start, plan=right.plan.plan_id
    )


def _after_cancel(b: WorldBuilder, invoice: Invoice, _: FaultOutcome) -> str:
    end = _end(b, invoice).isoformat()
    return rule_sentence("billed_after_cancellation", invoice=invoice.id, end=end)


def _trial(b: WorldBuilder, invoice: Invoice, _: FaultOutcome) -> str:
    story = next(s for s in b.stories if s.sub.id == invoice.subscription_id)
    assert story.trial_end is not None
    day = story.trial_end.isoformat()
    return rule_sentence("trial_period_charged", invoice=invoice.id, day=day)


def _usage(b: WorldBuilder, invoice: Invoice, _: FaultOutcome) -> str:
    """The units as the timeline prints them: one record, or its parts summed ("a + b = c")."""
    assert b.draft is not None
    right = invoice.correct
    assert right is not None and right.usage_units is not None
    sub = b.draft.subscription(invoice.subscription_id)
    start = invoice.billed.period_start.isoformat()
    late = [c[2] for c in sub.usage_corrections if c[1] == start]
    split = right.usage_units_before_change
    if late:
        parts = [right.usage_units - late[0], late[0]]
    elif split is not None and right.previous_plan is not None:
        parts = [split, right.usage_units - split]
    else:
        parts = [right.usage_units]
    units = " + ".join(map(str, parts)) + (f" = {right.usage_units}" if len(parts) > 1 else "")
    label = "usage_overage_miscalculated"
    return rule_sentence(label, invoice=invoice.id, start=start, units=units)


def _fx(b: WorldBuilder, invoice: Invoice, _: FaultOutcome) -> str:
    right = invoice.correct
    assert right is not None
    issued = _issue_day(b, invoice)
    if right.fx_rate_date == issued:
        form, day = "issue_day", issued
    elif right.fx_rate_date == fx_day(issued):
        form, day = "weekend", issued
    else:  # a documented rate lock's date, which get_customer prints
        form, day = "rate_lock", right.fx_rate_date
    return rule_sentence("currency_conversion_error", form, invoice=invoice.id, day=day.isoformat())


def _timezone(b: WorldBuilder, invoice: Invoice, outcome: FaultOutcome) -> str:
    what = TIMEZONE_WHAT.get(outcome.variant, "the plan change")
    right = invoice.correct
    if outcome.variant == "cancellation":
        day = _end(b, invoice)
    elif outcome.variant == "trial_end":
        assert right is not None and right.proration_start is not None
        day = right.proration_start
    else:
        assert right is not None and right.plan_change_date is not None
        day = right.plan_change_date
    return rule_sentence(
        "timezone_period_boundary", invoice=invoice.id, what=what,
        timezone=b.customer.timezone, day=day.isoformat(),
    )  # fmt: skip


RULES: dict[str, Rule] = {
    "duplicate_payment": _duplicate,
    "proration_error": _proration,
    "wrong_tax_rate": _tax,
    "tax_exempt_charged": _exempt,
    "coupon_not_applied": _coupon,
    "seat_count_mismatch": _seats,
    "billed_after_cancellation": _after_cancel,
    "trial_period_charged": _trial,
    "usage_overage_miscalculated": _usage,
    "currency_conversion_error": _fx,
    "downgrade_not_applied": _downgrade,
    "timezone_period_boundary": _timezone,
}
