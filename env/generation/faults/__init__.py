"""The registry of scenario builders: one per root-cause label (design §2).

Each builder takes a seeded `WorldBuilder` and returns a `FaultOutcome`; the generator turns
that into a scenario with its truth and reference solution. The table below reads as the index
of `env/generation/faults/`: label -> the function in its module that builds it.
"""

from __future__ import annotations

from collections.abc import Callable

from env.generation.builder import WorldBuilder
from env.generation.faults.base import FaultOutcome
from env.generation.faults.lifecycle import (
    billed_after_cancellation,
    seat_count_mismatch,
    trial_period_charged,
)
from env.generation.faults.no_error import no_error
from env.generation.faults.payments import duplicate_payment
from env.generation.faults.plan_changes import downgrade_not_applied, proration_error
from env.generation.faults.pricing import (
    coupon_not_applied,
    currency_conversion_error,
    usage_overage_miscalculated,
)
from env.generation.faults.tax import tax_exempt_charged, wrong_tax_rate
from env.generation.faults.timezone import timezone_period_boundary

Builder = Callable[[WorldBuilder], FaultOutcome]

BUILDERS: dict[str, Builder] = {
    "duplicate_payment": duplicate_payment,
    "proration_error": proration_error,
    "downgrade_not_applied": downgrade_not_applied,
    "seat_count_mismatch": seat_count_mismatch,
    "billed_after_cancellation": billed_after_cancellation,
    "trial_period_charged": trial_period_charged,
    "wrong_tax_rate": wrong_tax_rate,
    "tax_exempt_charged": tax_exempt_charged,
    "coupon_not_applied": coupon_not_applied,
    "usage_overage_miscalculated": usage_overage_miscalculated,
    "currency_conversion_error": currency_conversion_error,
    "timezone_period_boundary": timezone_period_boundary,
    "no_error": no_error,
}


def builder_for(label: str) -> Builder:
    return BUILDERS[label]
