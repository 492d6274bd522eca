"""The root-cause labels of the contract (design §2). Order is fixed: it is used in tables."""

from __future__ import annotations

from typing import Literal, get_args

RootCause = Literal[
    "duplicate_payment",
    "proration_error",
    "wrong_tax_rate",
    "tax_exempt_charged",
    "coupon_not_applied",
    "seat_count_mismatch",
    "billed_after_cancellation",
    "trial_period_charged",
    "usage_overage_miscalculated",
    "currency_conversion_error",
    "downgrade_not_applied",
    "timezone_period_boundary",
    "no_error",
]

ROOT_CAUSES: tuple[str, ...] = get_args(RootCause)
FAULT_LABELS: tuple[str, ...] = tuple(label for label in ROOT_CAUSES if label != "no_error")
HELDOUT_LABEL = "timezone_period_boundary"
TRAIN_FAULT_LABELS: tuple[str, ...] = tuple(x for x in FAULT_LABELS if x != HELDOUT_LABEL)
DIFFICULTIES: tuple[str, ...] = ("L1", "L2", "L3")
