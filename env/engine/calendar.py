"""Dates and times of the world: local billing dates, UTC event timestamps, monthly periods.

Periods are local calendar dates with an anchor day of at most 28, so adding a month never
clips. Timestamps are rendered as `YYYY-MM-DDTHH:MM:SSZ`, always UTC.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo


def add_months(day: date, months: int) -> date:
    index = day.year * 12 + (day.month - 1) + months
    return date(index // 12, index % 12 + 1, day.day)


def utc_stamp(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def local_to_utc(day: date, at: time, timezone: str) -> str:
    """A wall-clock time in the customer's timezone as a UTC timestamp string."""
    return utc_stamp(datetime.combine(day, at, tzinfo=ZoneInfo(timezone)))


def utc_to_local_date(stamp: str, timezone: str) -> date:
    moment = datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    return moment.astimezone(ZoneInfo(timezone)).date()


def utc_date(stamp: str) -> date:
    return date.fromisoformat(stamp[:10])


def days(n: int) -> timedelta:
    return timedelta(days=n)


def fx_day(day: date) -> date:
    """The day whose fx rate converts an invoice issued on `day`: that day, or the last
    business day before it when it falls on a weekend (rates are published Monday to Friday)."""
    while day.weekday() >= 5:
        day -= timedelta(days=1)
    return day


FxLock = tuple[str, str, str, str]  # subscription_id, rate_date, issued_from, issued_until


def fx_rate_day(issued: date, subscription_id: str, lock: FxLock | None) -> date:
    """The day whose rate converts an invoice of `subscription_id` issued on `issued` (design
    §1.1): a documented rate lock's `rate_date` when the lock is the subscription's and its
    window [issued_from, issued_until) covers the issue day (a contract rate, world v5), else
    `fx_day`."""
    if lock is not None and lock[0] == subscription_id and lock[2] <= issued.isoformat() < lock[3]:
        return date.fromisoformat(lock[1])
    return fx_day(issued)
