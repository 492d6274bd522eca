"""Look-alikes for the plan and seat faults (issue 19, design §1.2): legitimate records that
fire the same one-comparison checks as `downgrade_not_applied`, `seat_count_mismatch` and
`proration_error`, billed correctly by the one engine, each with a second record that tells
them apart.

- A scheduled plan change the customer withdrew before the period started
  (`plan_change_withdrawn`): the old plan is billed on; the withdrawal separates it from a
  downgrade that billing ignored.
- A seat change that names a later period start (`effective` = that date, e.g. new hires
  starting next quarter): the old count is billed until then; the date separates it from a
  seat change billing ignored.
- A plan change agreed with sales to take effect on an earlier day of the same period:
  prorated from the agreed day, not the day it was logged.
- An immediate change whose start the customer then asked to move later (world v5, same shape
  as `timezone_period_boundary`'s and `proration_error`'s later dates): prorated from then.
  Both log the change as `immediately`, as the faults' changes are, and name the day its money
  starts in a `plan_change_start_moved` event right after it (`requested_by` sales / customer):
  that record, apart from the change, separates them from a proration on the wrong day.

Every builder draws from `b.rng` in a fixed order and is called with one-line hooks from
`env.generation.background` and `env.generation.changes`, in every class (label-independent rates).
"""

from __future__ import annotations

from datetime import date, time, timedelta

from env.engine.calendar import days, local_to_utc, utc_to_local_date
from env.generation.builder import WorldBuilder
from env.generation.story import Story, later_stamp
from env.generation.world import Plan

BACKDATED_RATE = 0.3  # immediate plan changes agreed to start on an earlier day
# of backdated upgrades, those that go back to the period's first full day: as often as
# proration_error's change dated at the period start, so that date gives no class away
FIRST_DAY_SHARE = 0.5
MOVED_START_RATE = 0.25  # immediate changes logged that day whose start is then moved later
SHORT_MOVE_SHARE = 0.5  # of those, moved a day or two; the rest three days or more
MOVED_GAPS = (1, 1, 1, 2)  # the short moves: mostly the next day, as the fault's UTC date is
DEFERRED_SEATS_RATE = 0.25  # seat changes ordered for a later period start
WITHDRAWN_PLAN_RATE = 0.2  # main subscriptions with a scheduled change withdrawn
WITHDRAWN_SECOND_RATE = 0.4  # of the second subscription's scheduled changes


def backdated_effective(
    b: WorldBuilder, story: Story, day: date, *, early_ok: bool = False
) -> tuple[date, date, str]:
    """(the day the money of an immediate change starts, the day it is logged, its `effective`
    value) for a change drawn on `day`: mostly logged that day ("immediately"); now and then
    agreed with sales and logged days later, backdated to a date of the same period. With
    `early_ok` (an upgrade: any unused share is fine) `FIRST_DAY_SHARE` of them go back to the
    period's first full day after its invoice."""
    start, end = _period_of(story, day)
    # logged at least two days later, before the period ends (or changes stop)
    room = (story.change_limit(end) - day).days - 1
    if room < 2 or day <= start or b.rng.random() >= BACKDATED_RATE:
        return day, day, "immediately"
    logged = day + days(b.rng.randint(2, room))
    if early_ok and b.rng.random() < FIRST_DAY_SHARE:
        day = min(day, story.after_trial(start + days(1)))
    return day, logged, day.isoformat()


def moved_start(b: WorldBuilder, story: Story, day: date) -> date | None:
    """For an immediate change logged on `day` (not backdated): now and then the day the
    customer asked it to start instead, inside the same period (and before changes stop), or
    None. Half of them a day or two later (as the timezone fault's UTC date), half three days
    or more, up to two days before the period ends (as `proration_error`'s late date). The
    draws are made for every such change, in any class."""
    roll, short = b.rng.random(), b.rng.random() < SHORT_MOVE_SHARE
    start, end = _period_of(story, day)
    limit = story.change_limit(end)
    if short:
        gap = MOVED_GAPS[b.rng.randrange(len(MOVED_GAPS))]
    else:
        gap = b.rng.randint(3, max(3, (limit - day).days - 2))
    later = day + days(gap)
    if roll >= MOVED_START_RATE or day <= start or later >= limit - days(1):
        return None
    return later


def log_moved_start(
    b: WorldBuilder, story: Story, asked: str, to_plan_id: str, starts: date, *, by: str
) -> None:
    """The event that sets an immediate change's start to `starts`, a record apart from the
    change: logged after it, the same local day. Later: the customer asked (the new start is
    still ahead); earlier: agreed with sales before the change was logged (backdated)."""
    asked_day = utc_to_local_date(asked, story.timezone)
    closes = local_to_utc(asked_day + days(1), time(0, 0), story.timezone)
    moved = later_stamp(asked, b.rng, before=closes)
    details = {"to_plan_id": to_plan_id, "starts": starts.isoformat(), "requested_by": by}
    story.event_at(moved, "plan_change_start_moved", details)


def log_change(
    b: WorldBuilder, story: Story, logged: date, details: dict[str, str], starts: date | None
) -> str:
    """An immediate `plan_changed` event logged on `logged`, and, where its money starts on
    another day (`starts`: backdated with sales, or moved later by the customer), the
    `plan_change_start_moved` event naming that day (world v5: the separator is its own record,
    the change itself says "immediately" as the faults' changes do)."""
    agreed = details["effective"] != "immediately"  # backdated: the agreed date
    details = {**details, "effective": "immediately"}
    asked = story.event(logged, b.work_time(), "plan_changed", details)
    if starts is not None and starts != logged:
        by = "sales" if agreed else "customer"
        log_moved_start(b, story, asked, details["to_plan_id"], starts, by=by)
    return asked


MOVED_SCHEDULED_RATE = 0.5  # scheduled changes whose start the customer moved a period later


def moved_scheduled(b: WorldBuilder, story: Story, k: int, to: Plan, asked: str) -> None:
    """World v6, same shape as `downgrade_not_applied`'s late form: a change scheduled in
    period k for the next period start that the customer then asked to start one or two
    periods later. The old plan is billed until then and the new one from then, with no plan
    event in the period before the switch; the `plan_change_start_moved` event (`starts` =
    that period start, `requested_by` customer), logged before the period ended, separates it
    from a change billing applied late. The draws are made for every such change."""
    roll, later = b.rng.random(), b.rng.randint(1, 2)
    starts = story.period(k + 1 + later)[0]
    if roll >= MOVED_SCHEDULED_RATE or k + 1 + later > story.periods - 1:
        return
    end = story.period(k + 1)[0]
    story.plan_changes = [(starts if d == end and p is to else d, p) for d, p in story.plan_changes]
    closes = local_to_utc(story.change_limit(end) - timedelta(days=1), time(0, 0), story.timezone)
    moved = later_stamp(asked, b.rng, before=closes)
    details = {"to_plan_id": to.id, "starts": starts.isoformat(), "requested_by": "customer"}
    story.event_at(moved, "plan_change_start_moved", details)


def deferred_seats(b: WorldBuilder, story: Story, k: int) -> date:
    """When a seat change asked in period k takes effect: the next period start, or (now and
    then) the one after it, named in the event (`effective` = that date)."""
    if b.rng.random() < DEFERRED_SEATS_RATE:
        return story.period(k + 2)[0]
    return story.period(k + 1)[0]


def withdrawn_plan_change(
    b: WorldBuilder, story: Story, plans: dict[str, Plan], rate: float
) -> bool:
    """A change to the sibling plan (`SIBLING`) scheduled at the end of a paid period with no
    other plan change, then withdrawn by the customer minutes to days later, before the period
    ends: billing keeps the old plan, as it should. Returns whether one was added."""
    if story.keeps_plan or b.rng.random() >= rate:
        return False
    first = 0
    while story.trial_end is not None and story.period(first)[0] < story.trial_end:
        first += 1
    free = [
        k
        for k in range(first, story.periods - 1)
        if not any(story.period(k)[0] <= d <= story.period(k)[1] for d, _ in story.plan_changes)
        and _sibling(story.plan_at(story.period(k)[0]), plans) is not None
    ]
    if not free:
        return False
    k = b.pick(free)
    start, end = story.period(k)
    day = start + days(b.rng.randint(2, max(2, (story.change_limit(end) - start).days - 6)))
    current = story.plan_at(start)
    to = _sibling(current, plans)
    assert to is not None
    details = {"from_plan_id": current.id, "to_plan_id": to.id, "effective": "at_period_end"}
    asked = story.event(day, b.work_time(), "plan_changed", details)
    closes = local_to_utc(story.change_limit(end), time(0, 0), story.timezone)
    withdrawn = later_stamp(asked, b.rng, before=closes)
    story.event_at(withdrawn, "plan_change_withdrawn", {"to_plan_id": to.id, "kept": current.id})
    return True


SIBLING = {"TEAM": "BUSINESS", "BUSINESS": "TEAM", "GROWTH": "SCALE", "SCALE": "GROWTH"}


def _sibling(plan: Plan, plans: dict[str, Plan]) -> Plan | None:
    """The plan of the same kind (both per-seat, so seat changes stay possible)."""
    key = SIBLING.get(plan.id.removeprefix("PLN-"))
    return plans.get(f"PLN-{key}", plans.get(key or "")) if key else None


def _period_of(story: Story, day: date) -> tuple[date, date]:
    k = 0
    while story.period(k + 1)[0] <= day:
        k += 1
    return story.period(k)
