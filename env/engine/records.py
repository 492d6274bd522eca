"""How billing inputs are recorded on an invoice row, and read back for `recompute_invoice`.

The recorded inputs are a JSON object of plain strings and numbers (amounts as two-decimal
strings, rates as exact decimal strings), so the agent sees exactly what the engine used.
"""

from __future__ import annotations

import json
from datetime import date
from functools import lru_cache
from typing import Any

from env.engine.billing import BillingInputs, CouponTerms, PlanTerms
from env.engine.money import format_cents, format_rate, parse_amount, parse_rate


def plan_to_json(plan: PlanTerms) -> dict[str, Any]:
    return {
        "plan_id": plan.plan_id,
        "plan_name": plan.name,
        "unit_price": format_cents(plan.unit_price_cents),
        "pricing": "per_seat" if plan.per_seat else "flat",
        "included_units": plan.included_units,
        "overage_unit_price": format_cents(plan.overage_unit_price_cents),
    }


def plan_from_json(data: dict[str, Any]) -> PlanTerms:
    return PlanTerms(
        plan_id=data["plan_id"],
        name=data["plan_name"],
        unit_price_cents=parse_amount(data["unit_price"]),
        per_seat=data["pricing"] == "per_seat",
        included_units=int(data["included_units"]),
        overage_unit_price_cents=parse_amount(data["overage_unit_price"]),
    )


def coupon_to_json(coupon: CouponTerms) -> dict[str, Any]:
    return {
        "coupon_code": coupon.code,
        "percent_off": None if coupon.percent_off is None else format_rate(coupon.percent_off),
        "amount_off": None
        if coupon.amount_off_cents is None
        else format_cents(coupon.amount_off_cents),
    }


def coupon_from_json(data: dict[str, Any]) -> CouponTerms:
    return CouponTerms(
        code=data["coupon_code"],
        percent_off=None if data["percent_off"] is None else parse_rate(data["percent_off"]),
        amount_off_cents=None if data["amount_off"] is None else parse_amount(data["amount_off"]),
    )


def _iso(value: date | None) -> str | None:
    return None if value is None else value.isoformat()


def _day(value: str | None) -> date | None:
    return None if value is None else date.fromisoformat(value)


def inputs_to_json(inputs: BillingInputs) -> str:
    return json.dumps(inputs_to_dict(inputs), separators=(",", ":"))


def inputs_to_dict(inputs: BillingInputs) -> dict[str, Any]:
    return {
        "period_start": inputs.period_start.isoformat(),
        "period_end": inputs.period_end.isoformat(),
        "plan": plan_to_json(inputs.plan),
        "seats": inputs.seats,
        "previous_plan": None
        if inputs.previous_plan is None
        else plan_to_json(inputs.previous_plan),
        "previous_seats": inputs.previous_seats,
        "plan_change_date": _iso(inputs.plan_change_date),
        "proration_start": _iso(inputs.proration_start),
        "proration_end": _iso(inputs.proration_end),
        "coupon": None if inputs.coupon is None else coupon_to_json(inputs.coupon),
        "usage_units": inputs.usage_units,
        "usage_units_before_change": inputs.usage_units_before_change,
        "usage_start": _iso(inputs.usage_start),
        "scheduled_from_plan": None
        if inputs.scheduled_from_plan is None
        else plan_to_json(inputs.scheduled_from_plan),
        "tax_jurisdiction": inputs.tax_jurisdiction,
        "tax_rate": format_rate(inputs.tax_rate),
        "tax_exempt": inputs.tax_exempt,
        "currency": inputs.currency,
        "fx_rate": format_rate(inputs.fx_rate),
        "fx_rate_date": inputs.fx_rate_date.isoformat(),
    }


@lru_cache(maxsize=8192)  # BillingInputs is frozen: every episode of a scenario shares one parse
def inputs_from_json(text: str) -> BillingInputs:
    data = json.loads(text)
    return BillingInputs(
        period_start=date.fromisoformat(data["period_start"]),
        period_end=date.fromisoformat(data["period_end"]),
        plan=plan_from_json(data["plan"]),
        seats=int(data["seats"]),
        previous_plan=None
        if data["previous_plan"] is None
        else plan_from_json(data["previous_plan"]),
        previous_seats=data["previous_seats"],
        plan_change_date=_day(data["plan_change_date"]),
        proration_start=_day(data["proration_start"]),
        proration_end=_day(data["proration_end"]),
        coupon=None if data["coupon"] is None else coupon_from_json(data["coupon"]),
        usage_units=data["usage_units"],
        usage_units_before_change=data.get("usage_units_before_change"),
        usage_start=_day(data.get("usage_start")),
        scheduled_from_plan=None
        if data.get("scheduled_from_plan") is None
        else plan_from_json(data["scheduled_from_plan"]),
        tax_jurisdiction=data["tax_jurisdiction"],
        tax_rate=parse_rate(data["tax_rate"]),
        tax_exempt=bool(data["tax_exempt"]),
        currency=data["currency"],
        fx_rate=parse_rate(data["fx_rate"]),
        fx_rate_date=date.fromisoformat(data["fx_rate_date"]),
    )
