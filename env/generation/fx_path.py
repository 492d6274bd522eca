"""A currency's USD rate over time (world v6, design §1.1): a path, not a draw per day.

Rates are published Monday to Friday. Each scenario's non-USD currency follows one
mean-reverting walk over business days around its base rate (a few tenths of a percent a day,
about one percent away from the base on a typical day, never outside the table's usual band of
+-4 %), so two days a week apart differ by what real rates move in a week, not by a fresh draw
(`checks.realism.fx_moves` holds the bound). A look-alike or a fault that needs a day with an
unusually high rate raises the path around that day (`raise_to`), ramping up and down over
enough business days to stay within the daily bound; the rates of days already recorded never
change. The walk draws from its own stream, seeded by one draw of the scenario's rng.
"""

from __future__ import annotations

import random
from datetime import date, timedelta
from fractions import Fraction

FIRST_DAY = date(2024, 1, 1)  # a Monday: the walk's first business day
BUSINESS_DAYS = 800  # to 2027: past every scenario's dispute
BAND = Fraction(400, 10000)  # the table's usual band around the base
REVERSION = 0.96  # of yesterday's distance from the base, what today keeps
STEP = 0.0045  # at most this much of the base a day, before reversion
RAMP = Fraction(8, 1000)  # a raised day's ramp: at most this much of the base a business day


def business_index(day: date) -> int:
    """The business-day ordinal of `day` from FIRST_DAY (a weekend counts as its Friday)."""
    while day.weekday() >= 5:
        day -= timedelta(days=1)
    weeks, rest = divmod((day - FIRST_DAY).days, 7)
    return weeks * 5 + rest


class FxPath:
    """One currency's distance from its base per business day (a fraction of the base)."""

    def __init__(self, seed: int) -> None:
        rng = random.Random(seed)
        x = rng.uniform(-0.015, 0.015)
        path = []
        for _ in range(BUSINESS_DAYS):
            path.append(x)
            x = REVERSION * x + rng.uniform(-STEP, STEP)
        walk = [Fraction(round(v * 100000), 100000) for v in path]
        self._offset = [max(-BAND, min(BAND, v)) for v in walk]

    def offset(self, day: date) -> Fraction:
        """The rate's distance from the base on `day` (the walk stays inside the band; a
        raised day may sit at its edge, or just past it where the right rate already does)."""
        return self._offset[min(max(business_index(day), 0), BUSINESS_DAYS - 1)]

    def raise_to(self, day: date, target: Fraction, recorded: set[date]) -> bool:
        """Lifts the path to `target` on `day`, ramping over the business days around it at
        most RAMP a day; False (and nothing changed) where a recorded day lies on the ramp."""
        centre = business_index(day)
        lift = target - self.offset(day)
        if lift <= 0:
            return True
        width = int(lift / RAMP) + 1
        near = {business_index(d) for d in recorded}
        if any(centre - width <= i <= centre + width for i in near):
            return False
        for i in range(max(0, centre - width), min(BUSINESS_DAYS, centre + width + 1)):
            share = Fraction(width - abs(i - centre), width)
            self._offset[i] += lift * share
        return True
