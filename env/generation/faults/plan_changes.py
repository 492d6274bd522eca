"""proration_error and downgrade_not_applied: plan changes billed at the wrong date or plan.

Both stories move a subscription between a cheaper and a dearer plan (Team < Business per seat,
or Starter < Team when the seats make it so), so every fault overcharges by construction.
proration_error records the wrong `plan_change_date` for an immediate change; a careful agent
recomputes with the local date of the plan_changed event. downgrade_not_applied keeps billing
the old plan after a downgrade scheduled at period end; the agent recomputes with the new plan.
Checked by `.venv/bin/python -m pytest tests/env/test_faults_plan_changes.py`.
"""

from __future__ import annotations

from datetime import date
from typing import Any

from env.engine.calendar import days
from env.engine.money import format_cents
from env.generation.background import decorate_main
from env.generation.builder import WorldBuilder
from env.generation.changes import swap_days, unused_share
from env.generation.faults.base import FaultOutcome, recompute
from env.generation.faults.common import join_words, overcharge_text, periods_for, seats_for
from env.generation.lookalikes_life import main_retro_trial
from env.generation.lookalikes_plans import BACKDATED_RATE, FIRST_DAY_SHARE
from env.generation.story import Story, plan_terms
from env.generation.world import Event, Invoice, Plan

PRORATION_VARIANTS = ("change_at_period_start", "change_backdated", "downgrade_applied_late")
DOWNGRADE_VARIANTS = ("never_applied", "applied_late")
DECOY_RATE = 0.2  # proration_error worlds from L2 with a second, correctly prorated change
MIN_SHIFT_DAYS = 3  # a one-day shift is the held-out timezone class; ours are clearly longer


def day_inside(b: WorldBuilder, story: Story, k: int, *, head: int = 3, tail: int = 3) -> date:
    """A local day of period k, `head` days after its start and `tail` days before its end."""
    start, end = story.period(k)
    return start + days(b.rng.randint(head, (end - start).days - tail))


def change_now(b: WorldBuilder, story: Story, day: date, to: Plan) -> Event:
    """An immediate plan change on a local day: billed prorated from that day."""
    before = story.plan_at(day)
    story.plan_changes.append((day, to))
    details = {"from_plan_id": before.id, "to_plan_id": to.id, "effective": "immediately"}
    return record_event(b, story, day, "plan_changed", details)


def schedule_change(b: WorldBuilder, story: Story, k: int, to: Plan) -> Event:
    """A change requested inside period k that takes effect when period k+1 starts."""
    day = day_inside(b, story, k, head=2, tail=4)
    before = story.plan_at(day)
    story.plan_changes.append((story.period(k + 1)[0], to))
    details = {"from_plan_id": before.id, "to_plan_id": to.id, "effective": "at_period_end"}
    return record_event(b, story, day, "plan_changed", details)


def record_event(
    b: WorldBuilder, story: Story, day: date, kind: str, details: dict[str, Any]
) -> Event:
    """Stamps an event at any hour of the local day and returns it."""
    stamp = story.event(day, b.work_time(), kind, details)
    return next(e for e in reversed(story.sub.events) if e.occurred_at == stamp and e.type == kind)


# proration_error ----------------------------------------------------------------------------
def proration_error(b: WorldBuilder) -> FaultOutcome:
    """An immediate change in period k is prorated on invoice k+1 (design §1.1); that invoice
    recorded the wrong plan_change_date."""
    b.make_customer()
    plans = b.make_catalog()
    # a pay-as-you-go Growth has no allowance to keep usage inside: no usage-free metered pair
    pairs = [("TEAM", "BUSINESS")] + [("GROWTH", "SCALE")] * bool(plans["GROWTH"].included_units)
    cheap, dear = (plans[k] for k in b.pick(pairs))
    variant = b.pick(PRORATION_VARIANTS)
    upgrade = variant != "downgrade_applied_late"
    before, after = (cheap, dear) if upgrade else (dear, cheap)
    # from L2 the correct near miss now and then: the fault's change is one of the changes
    # the story would have had, so two prorated invoices come as often as the background's
    # swap and its change back (design §1.2)
    periods = periods_for(b, 2 if b.difficulty == "L1" else 3)
    with_decoy = b.difficulty != "L1" and b.rng.random() < DECOY_RATE
    fault_k, *rest = b.rng.sample(range(periods - 1), 2 if with_decoy else 1)
    decoy_k = rest[0] if rest else None
    first = after if decoy_k is not None and decoy_k < fault_k else before
    story = b.make_story(
        first, seats=seats_for(b, first), periods=periods, trial=b.main_trial(first, extended=False)
    )
    if 0 not in (fault_k, decoy_k):  # a trial extended after it ended, as in every class
        main_retro_trial(b, story)
    changes: dict[int, date] = {}
    wrong = None
    for k in sorted(x for x in (fault_k, decoy_k) if x is not None):
        old, to = (before, after) if k == fault_k else (after, before)
        if k == fault_k:
            wrong, changes[k] = _fault_dates(b, story, k, old, to, upgrade=upgrade)
        else:  # the correct change: on a day the background's swaps take
            changes[k] = b.pick(swap_days(story, k, old, to))
        change_now(b, story, changes[k], to)
    assert wrong is not None
    traps = ["correct_proration_decoy"] if with_decoy else []
    if cheap.overage_unit_price_cents:  # inside both allowances: the date decides the money
        low = cheap.included_units * b.rng.uniform(0.3, 0.5)
        story.usage_level = max(1, int(low))
        b.fill_usage(story)
    decorate_main(b, story)  # seat changes as in every class (the near miss of L3 before)
    if b.difficulty == "L3" and story.seat_changes:
        traps.append("seat_change_decoy")
    invoices = b.bill(story)
    victim, day = invoices[fault_k + 1], changes[fault_k]
    if upgrade:  # named by the date drawn
        at_start = wrong == story.after_trial(story.period(fault_k)[0] + days(1))
        variant = "change_at_period_start" if at_start else "change_backdated"
    for _ in range(12):  # usage parts move with the date too: keep a date that overcharges
        b.rebill(victim, plan_change_date=wrong)
        if victim.billed_amounts().total_cents > victim.correct_total_cents():
            break
        wrong = _wrong_change_date(b, variant, story.period(fault_k), day)
    evidence = [recompute(victim, plan_change_date=day.isoformat())]
    focus = [victim]
    if decoy_k is not None:
        focus.append(invoices[decoy_k + 1])
        evidence.append(
            recompute(invoices[decoy_k + 1], plan_change_date=changes[decoy_k].isoformat())
        )
    return FaultOutcome(
        label="proration_error",
        story=story,
        focus=focus,
        evidence=evidence,
        summary=_proration_summary(b, story, victim, day, wrong, before, after, focus[1:]),
        slots={
            "invoice_id": victim.id,
            "change_date": day.isoformat(),
            "old_plan": before.name,
            "new_plan": after.name,
        },
        traps=traps,
        variant=variant,
    )


def _fault_dates(
    b: WorldBuilder, story: Story, k: int, old: Plan, to: Plan, *, upgrade: bool
) -> tuple[date, date]:
    """(the recorded plan_change_date, the change's local day) of the fault. The recorded date
    is drawn as a correct change's date is recorded in every class (`changes.swap_days`, or for an
    upgrade now and then the period's first full day after a backdated agreement), so the
    invoice's inputs alone give nothing away; the real change lies at least MIN_SHIFT_DAYS
    to the side that overcharges: after the recorded date for an upgrade, before it for a
    downgrade (whose day must also be late enough, `_late_enough`)."""
    start, end = story.period(k)
    valid = recorded = swap_days(story, k, old, to)
    if not upgrade:  # a downgrade's credit must stay below the next period's charge
        late = start + days(_late_enough(story, k, old, to))
        valid = [d for d in valid if d >= late] or valid[-1:]
    first_day = story.after_trial(start + days(1))
    for _ in range(40):
        if upgrade and b.rng.random() < BACKDATED_RATE * FIRST_DAY_SHARE:
            wrong = first_day
        else:
            wrong = b.pick(recorded)
        if upgrade:
            side = [d for d in valid if (d - wrong).days >= MIN_SHIFT_DAYS]
        else:
            side = [d for d in valid if (wrong - d).days >= MIN_SHIFT_DAYS]
        if side:
            return wrong, b.pick(side)
    day = valid[-1] if upgrade else valid[0]  # never reached in practice
    return (first_day if upgrade else min(end - days(2), day + days(MIN_SHIFT_DAYS))), day


def _late_enough(story: Story, k: int, dear: Plan, cheap: Plan) -> int:
    """Days into period k a downgrade must come (see `unused_share`)."""
    start, end = story.period(k)
    length = (end - start).days
    return max(3, min(length - 8, length - int(length * unused_share(dear, cheap))))


def _wrong_change_date(b: WorldBuilder, variant: str, period: tuple[date, date], day: date) -> date:
    start, end = period
    if variant == "change_at_period_start":
        # dated on the period's first full day after its invoice: the new plan for nearly
        # the whole previous period (never the first day itself, which no real change shows)
        return start + days(1)
    if variant == "change_backdated":
        return day - days(b.rng.randint(MIN_SHIFT_DAYS, (day - start).days - 1))
    # a date inside the period, as every correct change has (never `end`, the victim's own
    # period start, which no correct invoice records, nor the last day: correct changes fall
    # at least two days before the period ends, `changes.late_days`)
    return day + days(b.rng.randint(MIN_SHIFT_DAYS, max(MIN_SHIFT_DAYS, (end - day).days - 2)))


def _proration_summary(
    b: WorldBuilder,
    story: Story,
    victim: Invoice,
    day: date,
    wrong: date,
    before: Plan,
    after: Plan,
    decoys: list[Invoice],
) -> str:
    currency = victim.billed.currency
    correct = format_cents(victim.correct_total_cents())
    text = (
        f"Subscription {story.sub.id} changed immediately from {before.name} ({before.id}) to "
        f"{after.name} ({after.id}) on {day.isoformat()} in the customer's timezone "
        f"({b.customer.timezone}), but invoice {victim.id} recorded plan_change_date "
        f"{wrong.isoformat()}. Recomputed with plan_change_date {day.isoformat()} it totals "
        f"{correct} instead of {format_cents(victim.billed_amounts().total_cents)} {currency}; "
        f"the {overcharge_text(victim)} {currency} difference is credited."
    )
    if decoys:
        text += f" The other plan change on invoice {decoys[0].id} was prorated correctly."
    return text


# downgrade_not_applied ---------------------------------------------------------------------
def downgrade_not_applied(b: WorldBuilder) -> FaultOutcome:
    b.make_customer()
    plans = b.make_catalog()
    variant = b.pick(DOWNGRADE_VARIANTS)
    old, new, seats = _downgrade_pair(b, plans)
    late = variant == "applied_late"
    request_k, count = _downgrade_layout(b, late)
    # from L2 an earlier upgrade: starting on the cheaper plan, after a trial as often as
    # every class's main subscription (design §1.2: a trial gives no class away)
    with_decoy = b.difficulty != "L1"
    periods = request_k + 1 + count + (1 if late else 0)
    first = new if with_decoy else old
    trial = b.main_trial(first, extended=False)
    story = b.make_story(first, seats=seats, periods=periods, trial=trial)
    upgrade_k = b.rng.randrange(0, request_k) if with_decoy else None
    if upgrade_k != 0:  # a trial extended after it ended, as in every class
        main_retro_trial(b, story)
    traps = []
    upgrade_day = None
    if upgrade_k is not None:  # near miss: an earlier upgrade, prorated correctly
        start = story.period(upgrade_k)[0]
        head = (story.after_trial(start + days(3)) - start).days
        upgrade_day = day_inside(b, story, upgrade_k, head=head)
        change_now(b, story, upgrade_day, old)
        traps.append("correct_proration_decoy")
    event = schedule_change(b, story, request_k, new)
    if new.overage_unit_price_cents:
        _usage_within(b, story, new)
    if b.difficulty == "L3":  # near miss: the new plan's announced price rise, billed right
        effective = story.period(b.rng.randint(request_k + 1, periods - 1))[0]
        b.raise_price(new, effective, percent=b.rng.randint(4, 12))
        traps.append("price_change_decoy")
    decorate_main(b, story)
    invoices = b.bill(story)
    victims = invoices[request_k + 1 : request_k + 1 + count]
    for invoice in victims:
        b.rebill(invoice, plan=plan_terms(old, invoice.billed.period_start))
    focus = list(victims)
    evidence = [recompute(invoice, plan_id=new.id) for invoice in victims]
    if late:
        focus.append(invoices[request_k + 1 + count])
    if upgrade_k is not None and upgrade_day is not None:
        focus.append(invoices[upgrade_k + 1])
        evidence.append(
            recompute(invoices[upgrade_k + 1], plan_change_date=upgrade_day.isoformat())
        )
    return FaultOutcome(
        label="downgrade_not_applied",
        story=story,
        focus=focus,
        evidence=evidence,
        summary=_downgrade_summary(story, event, old, new, victims),
        slots={
            "invoice_id": victims[0].id,
            "old_plan": old.name,
            "new_plan": new.name,
            "downgrade_month": story.period(request_k)[1].strftime("%B %Y"),
        },
        traps=traps,
        variant=variant,
    )


def _downgrade_pair(b: WorldBuilder, plans: dict[str, Plan]) -> tuple[Plan, Plan, int]:
    """(old, new, seats): Business -> Team, or Team -> Starter when Starter is clearly cheaper.

    Only the new plan's price may rise later (by at most 12 %), so the margin keeps the old
    plan dearer in every period. Team -> Starter at L1 only: the story keeps its Team seats on
    the flat Starter (before the decoy upgrade, after a late change), a value no other story
    writes and no legitimate cause shares (design §1.2: a shape with no honest twin stays at L1).
    """
    team, starter = plans["TEAM"], plans["STARTER"]
    seats = seats_for(b, team)
    team_cost = team.prices[0][0] * seats
    draw = b.rng.random()
    flat_ok = b.difficulty == "L1"
    if draw < 0.3 and flat_ok and team_cost > starter.prices[0][0] * 115 // 100:
        return team, starter, seats
    growth, scale = plans["GROWTH"], plans["SCALE"]
    # a pay-as-you-go Growth has no allowance for `_usage_within` (0 units is no real month)
    dearer = scale.prices[0][0] > growth.prices[0][0] * 115 // 100
    if draw >= 0.6 and dearer and growth.included_units:
        return scale, growth, seats  # metered: see `_usage_within`
    return plans["BUSINESS"], team, seats


def _usage_within(b: WorldBuilder, story: Story, plan: Plan) -> None:
    """Usage of every finished period within the new plan's allowance, so within the old
    plan's larger one too: no overage either way, and the old price is the whole difference."""
    for k in range(story.periods - 1):
        b.record_usage(story, k, units=int(plan.included_units * b.rng.uniform(0.4, 1.0)))


def _downgrade_layout(b: WorldBuilder, late: bool) -> tuple[int, int]:
    """(period of the request, how many periods were billed at the old plan)."""
    if b.difficulty == "L1":  # one to three invoices in all
        count = 1 if late else b.rng.randint(1, 2)
        return (b.rng.randint(0, 2 - count - (1 if late else 0)), count)
    return b.rng.randint(1, 2), b.rng.randint(1, 3)


def _downgrade_summary(
    story: Story, event: Event, old: Plan, new: Plan, victims: list[Invoice]
) -> str:
    currency = victims[0].billed.currency
    effective = victims[0].billed.period_start.isoformat()
    overs = [f"{overcharge_text(inv)} on {inv.id}" for inv in victims]
    return (
        f"The plan_changed event at {event.occurred_at} scheduled a downgrade of {story.sub.id} "
        f"from {old.name} ({old.id}) to {new.name} ({new.id}) at period end, effective "
        f"{effective}, but {join_words([inv.id for inv in victims])} "
        f"{'was' if len(victims) == 1 else 'were'} still billed on "
        f"{old.name}. Recomputed with {new.id}: overcharged {join_words(overs)} ({currency}), "
        "credited."
    )
