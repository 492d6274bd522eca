"""The registry of scenario builders: one per root-cause label (design §2).

Each builder takes a seeded `WorldBuilder` and returns a `FaultOutcome`; the generator turns
that into a scenario with its truth and reference solution. Builders are named here as
"module:function" and imported on first use, so the table reads as the index of `env/faults/`.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from importlib import import_module

from env.builder import WorldBuilder
from env.faults.base import FaultOutcome

Builder = Callable[[WorldBuilder], FaultOutcome]

BUILDER_PATHS: dict[str, str] = {
    "duplicate_payment": "payments:duplicate_payment",
    "proration_error": "plan_changes:proration_error",
    "downgrade_not_applied": "plan_changes:downgrade_not_applied",
    "seat_count_mismatch": "lifecycle:seat_count_mismatch",
    "billed_after_cancellation": "lifecycle:billed_after_cancellation",
    "trial_period_charged": "lifecycle:trial_period_charged",
    "wrong_tax_rate": "tax:wrong_tax_rate",
    "tax_exempt_charged": "tax:tax_exempt_charged",
    "coupon_not_applied": "pricing:coupon_not_applied",
    "usage_overage_miscalculated": "pricing:usage_overage_miscalculated",
    "currency_conversion_error": "pricing:currency_conversion_error",
    "timezone_period_boundary": "timezone:timezone_period_boundary",
    "no_error": "no_error:no_error",
}


@cache
def builder_for(label: str) -> Builder:
    module, function = BUILDER_PATHS[label].split(":")
    builder: Builder = getattr(import_module(f"env.faults.{module}"), function)
    return builder
