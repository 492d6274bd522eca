"""The billing rule each root cause breaks, in the words a summary states it (design §1.1, §2).

A reference solution (`env.generation`) and the auditor (`agent.audit_checks`) both say, for each
invoice they credit, which rule the one billing engine applies there and with what values:
`rule_sentence` renders it, `parse_rules` reads it back. `tests/env/test_rule_sentences.py`
holds every reference and auditor summary's sentences to the engine: the values must be those
the correct bill records (a counterfactual twin's inputs). A sentence names one invoice.
"""

from __future__ import annotations

import re

PREFIX = "Billing rule:"
# label -> its rule's forms (a sentence reads one of them, placeholders filled)
TEMPLATES: dict[str, tuple[str, ...]] = {
    "duplicate_payment": (
        "{invoice} is paid once: it totals {total} {currency}, and its payments net {net}",
    ),
    "proration_error": (
        "{invoice} prorates an immediate plan change from the local day its money starts, {day}",
    ),
    "wrong_tax_rate": (
        "{invoice} is taxed at the rate in force in {jurisdiction} on its local issue day {day},"
        " {rate}",
    ),
    "tax_exempt_charged": (
        "{invoice}, issued on {day}, is exempt under certificate {certificate}, valid from"
        " {valid_from} until {valid_until} in {jurisdiction}",
    ),
    "coupon_not_applied": ("{invoice}'s period from {start} is discounted by coupon {coupon}",),
    "seat_count_mismatch": (
        "{invoice} bills the seats in force at its period start {start}: {seats}",
    ),
    "billed_after_cancellation": (
        "{invoice} bills nothing from {end}, where the cancellation took effect",
    ),
    "trial_period_charged": ("{invoice} charges from the end of the free trial, {day}",),
    "usage_overage_miscalculated": (
        "{invoice} bills in arrears the usage recorded for the period before {start}:"
        " {units} units",
    ),
    "currency_conversion_error": (
        "{invoice} converts at the USD rate of its local issue day {day}",
        "{invoice} converts at the USD rate of the last business day before its local issue day"
        " {day}",
        "{invoice} converts at the USD rate of its rate lock's date {day}",
    ),
    "downgrade_not_applied": (
        "{invoice} bills the plan a change scheduled at period end put in force at its period"
        " start {start}: {plan}",
    ),
    "timezone_period_boundary": ("{invoice} dates {what} by its local day in {timezone}: {day}",),
}
FORMS = {  # a form's name -> its index in the label's templates
    "issue_day": 0,
    "weekend": 1,
    "rate_lock": 2,
}


def rule_sentence(label: str, form: str = "", **values: object) -> str:
    """The rule `label` breaks, stated for one invoice: "Billing rule: ... ." `form` picks one
    of a label's forms (`FORMS`: the fx rate's day)."""
    template = TEMPLATES[label][FORMS.get(form, 0)]
    return f"{PREFIX} {template.format(**values)}."


DAY = r"\d{4}-\d{2}-\d{2}"
SHAPES = {"invoice": r"INV-[0-9A-Z]+", "day": DAY, "start": DAY, "end": DAY}
SHAPES |= {"valid_from": DAY, "valid_until": DAY}


def _pattern(template: str) -> re.Pattern[str]:
    parts = re.split(r"(\{\w+\})", template)
    regex = "".join(
        f"(?P<{p[1:-1]}>{SHAPES.get(p[1:-1], '.+?')})" if p.startswith("{") else re.escape(p)
        for p in parts
        if p
    )
    return re.compile(re.escape(PREFIX) + " " + regex + r"\.(?:\s|$)")


def parse_rules(summary: str) -> list[tuple[str, int, dict[str, str]]]:
    """Every rule sentence in `summary`: (label, form index, its values by placeholder)."""
    found = []
    for label, templates in TEMPLATES.items():
        for form, template in enumerate(templates):
            for match in _pattern(template).finditer(summary):
                found.append((label, form, match.groupdict()))
    return found
