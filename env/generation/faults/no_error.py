"""no_error: the customer is mistaken; every invoice is right and nothing may be credited.

Each variant is a look-alike of a fault, built with the same story machinery and billed
correctly: an announced price rise, a tax rate that really changed, a coupon that ran out, a
correct mid-period upgrade, another subscription's invoice, seats the customer added, usage
overage. The reference evidence shows why the charge stands (a recompute with the verified
input gives difference 0.00, a tax lookup, the announcement or coupon terms in the timeline).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import date

from env.engine.billing import usage_parts
from env.engine.calendar import days
from env.engine.money import format_cents, format_rate, parse_rate
from env.generation import lookalikes_tax
from env.generation.background import decorate_main, ordered_by
from env.generation.builder import WorldBuilder
from env.generation.faults.base import FaultOutcome, call, recompute
from env.generation.faults.common import periods_for, seats_for
from env.generation.faults.timezone import (
    daytime_event,
    fill_usage_by_plan,
    plan_pair,
    seat_change,
    span,
)
from env.generation.lookalikes_life import main_retro_trial
from env.generation.story import Story
from env.generation.world import Event, Invoice, Plan
from env.scenario import ToolCall

LABEL = "no_error"


def no_error(b: WorldBuilder) -> FaultOutcome:
    b.make_customer()
    variant = b.pick(sorted(VARIANTS))
    return VARIANTS[variant](b)


def _story(
    b: WorldBuilder, plan: Plan, *, minimum: int = 1, trial_ok: bool = False, short: bool = False
) -> Story:
    """The look-alike's subscription; where the variant allows, sometimes after a free trial
    (trials occur in every class, design §1.2); `short`: never an extended one."""
    trial = trial_ok and b.main_trial(plan, extended=not short)
    story = b.make_story(
        plan, seats=seats_for(b, plan), periods=periods_for(b, minimum), trial=trial
    )
    if not short:  # a trial extended after it ended, as in every class
        main_retro_trial(b, story)
    return story


def _any_plan(b: WorldBuilder) -> Plan:
    """A plan of any kind for a look-alike whose evidence does not depend on it (metered plans
    bill usage in arrears: `fill_usage_by_plan` before billing)."""
    return b.pick(list(b.make_catalog().values()))


def _plain_plan(b: WorldBuilder, *, per_seat: bool | None = None) -> Plan:
    plans = b.make_catalog().values()
    return b.pick(
        [p for p in plans if not p.overage_unit_price_cents and per_seat in (None, p.per_seat)]
    )


def _legit_tax_change(b: WorldBuilder, story: Story, traps: list[str], avoid: int = 0) -> None:
    """L3 near miss on top of the look-alike: a tax rate that changed at a period start."""
    options = [k for k in range(1, story.periods) if k != avoid]
    if b.difficulty != "L3" or not options:
        return
    old, new = b.rng.sample(b.locale["rates"], 2)
    b.set_tax_history(old, new, story.period(b.pick(options))[0])
    traps.append("legit_tax_change")


def _same_tax(b: WorldBuilder, first: date, second: date) -> None:
    """Moves the customer's random tax change off (first, second], so that a look-alike about
    a price is not blurred by a tax change between the two invoices compared."""
    (old, _, change), (new, _, _) = b.tax_history
    if change is not None and first.isoformat() < change <= second.isoformat():
        b.set_tax_history(old, new, first)
    lookalikes_tax.keep_jurisdiction(b, first, second)


def _outcome(
    story: Story,
    focus: list[Invoice],
    evidence: list[ToolCall],
    summary: str,
    *,
    variant: str,
    slots: dict[str, str],
    traps: list[str] | None = None,
) -> FaultOutcome:
    return FaultOutcome(LABEL, story, focus, evidence, summary, dict(slots), traps or [], variant)


def price_change(b: WorldBuilder) -> FaultOutcome:
    """An announced price rise at a period start; the customer says it came without notice."""
    plan = _plain_plan(b)
    story = _story(b, plan, minimum=2, trial_ok=True)
    kd = b.rng.randint(1, story.periods - 1)
    # at least 10 %: the fx rate of each date moves up to 4 %, and the bill must visibly rise
    b.raise_price(plan, story.period(kd)[0], percent=b.pick((10, 12, 15, 20)))
    _same_tax(b, story.period(kd - 1)[0], story.period(kd)[0])
    traps: list[str] = []
    _legit_tax_change(b, story, traps, avoid=kd)
    story.keeps_plan = True  # the risen price is on this plan
    decorate_main(b, story, skip=("swap", "seat_cuts"))
    invoices = b.bill(story)
    after, before = invoices[kd], invoices[kd - 1]
    (old, _, _), (new, effective, announced) = plan.prices[-2], plan.prices[-1]
    summary = (
        f"The {plan.name} price ({plan.id}) rose from {format_cents(old)} to {format_cents(new)} "
        f"USD effective {effective}, announced at {announced}. Invoice {after.id} bills the new "
        f"price; recomputed with {plan.id} the difference is 0.00. The charge is correct and "
        "nothing is credited."
    )
    return _outcome(
        story,
        [after, before],
        [recompute(after, plan_id=plan.id)],
        summary,
        slots={"old_total": format_cents(before.billed_amounts().total_cents)},
        traps=traps,
        variant="price_change",
    )


def tax_change(b: WorldBuilder) -> FaultOutcome:
    """The jurisdiction's tax rate went up and was applied from its effective date."""
    story = _story(b, _any_plan(b), minimum=2, trial_ok=True)
    fill_usage_by_plan(b, story)
    low, high = sorted(set(b.rng.sample(b.locale["rates"], 2)), key=parse_rate)
    kd = b.rng.randint(1, story.periods - 1)
    lookalikes_tax.move_before(b, story.issue_day(kd - 1))
    b.tax_compared = [story.issue_day(kd - 1), story.issue_day(kd)]  # taxed: they compare rates
    start = story.period(kd)[0]
    # between the two invoices' issue days (a trial's first charge is issued at its end)
    change = max(start - days(b.rng.randint(0, 10)), story.issue_day(kd - 1) + days(1))
    b.set_tax_history(low, high, change)
    decorate_main(b, story)
    invoices = b.bill(story)
    after, before = invoices[kd], invoices[kd - 1]
    jurisdiction = b.customer.tax_jurisdiction
    issued = [story.issue_day(kd - 1).isoformat(), story.issue_day(kd).isoformat()]
    summary = (
        f"The {jurisdiction} tax rate changed from {low} to {high} on {change.isoformat()}. "
        f"Invoice {before.id} (issued {issued[0]}) was taxed at {low} and invoice {after.id} "
        f"(issued {issued[1]}) at {high}, the rates in force on their local issue days; "
        f"recomputed at {high} the difference is 0.00. Nothing is credited."
    )
    return _outcome(
        story,
        [after, before],
        [
            call("get_tax_rate", jurisdiction=jurisdiction, date=issued[1]),
            call("get_tax_rate", jurisdiction=jurisdiction, date=issued[0]),
            recompute(after, tax_rate=high),
        ],
        summary,
        slots={"old_tax": _percent(low), "new_tax": _percent(high)},
        variant="tax_change",
    )


def _percent(rate: str) -> str:
    return format_rate(parse_rate(rate) * 100).removesuffix(".0") + "%"


def coupon_expired(b: WorldBuilder) -> FaultOutcome:
    """A coupon that was used up (once / N periods) or whose window closed; the customer says
    the discount vanished."""
    story = _story(b, _any_plan(b), minimum=2, trial_ok=True)
    fill_usage_by_plan(b, story)
    kind = b.pick(("once", "repeating", "window"))
    j = 1 if kind == "once" else b.rng.randint(1, story.periods - 1)  # first full-price period
    anchor = story.anchor
    valid_until = anchor + days(400)
    if kind == "window":
        last_start = story.period(j - 1)[0]
        valid_until = last_start + days(
            b.rng.randint(0, (story.period(j)[0] - last_start).days - 1)
        )
    percent = b.pick((10, 15, 20, 25, 30, None))
    coupon = b.new_coupon(
        duration={"once": "once", "repeating": "repeating", "window": "forever"}[kind],
        periods=j if kind == "repeating" else None,
        valid_from=anchor - days(b.rng.randint(0, 30)),
        valid_until=valid_until,
        percent=percent,
        amount_off_cents=None if percent else b.pick((500, 1000, 1500)),
    )
    story.coupon, story.coupon_from = coupon, anchor
    story.sub.coupon_code = coupon.code
    story.sub.events.append(
        Event(story.sub.started_at, "coupon_applied", {"coupon_code": coupon.code})
    )
    if b.difficulty == "L1" or (b.difficulty == "L2" and b.rng.random() < 0.5):
        reason = "window_closed" if kind == "window" else "duration_ended"
        details = {"coupon_code": coupon.code, "reason": reason}
        story.event(story.period(j)[0], b.work_time(), "coupon_removed", details)
    traps: list[str] = []
    _legit_tax_change(b, story, traps)
    decorate_main(b, story)
    invoices = b.bill(story)
    after, before = invoices[j], invoices[j - 1]
    why = {
        "once": "is a once coupon, used on",
        "repeating": f"ran for {j} period{'s' if j > 1 else ''} (repeating), the last being",
        "window": f"was valid until {coupon.valid_until}, last applied to",
    }[kind]
    summary = (
        f"Coupon {coupon.code} {why} invoice {before.id} (discount "
        f"{format_cents(before.billed_amounts().discount_cents)}). Invoice {after.id} for the "
        f"period from {after.billed.period_start.isoformat()} is correctly billed without it; "
        "nothing is credited."
    )
    return _outcome(
        story,
        [after, before],
        [],
        summary,
        slots={"coupon": coupon.code},
        traps=traps,
        variant="coupon_expired",
    )


def correct_proration(b: WorldBuilder) -> FaultOutcome:
    """A mid-period upgrade prorated correctly; the customer thinks they paid twice."""
    old, new = plan_pair(b, b.make_catalog(), upgrade=True)
    story = _story(b, old, minimum=2, trial_ok=True, short=True)
    k = b.rng.randrange(story.periods - 1)
    start, end = story.period(k)
    day, at = daytime_event(b, span(story.after_trial(start + days(3)), end - days(3)))
    story.plan_changes.append((day, new))
    details = {"from_plan_id": old.id, "to_plan_id": new.id, "effective": "immediately"}
    story.event(day, at, "plan_changed", details)
    traps: list[str] = []
    _legit_tax_change(b, story, traps)
    fill_usage_by_plan(b, story)
    decorate_main(b, story)
    invoices = b.bill(story)
    invoice = invoices[k + 1]
    summary = (
        f"The plan_changed event on {day.isoformat()} (local) upgraded {old.id} to {new.id} "
        f"immediately. Invoice {invoice.id}, the next one, credits the unused {old.name} time "
        f"from {day.isoformat()} and charges {new.name} for the same days besides its own period "
        f"in advance: proration, not a double charge; recomputed with plan_change_date "
        f"{day.isoformat()} the difference is 0.00. Nothing is credited."
    )
    return _outcome(
        story,
        [invoice],
        [recompute(invoice, plan_change_date=day.isoformat())],
        summary,
        slots={"old_plan": old.name, "new_plan": new.name},
        traps=traps,
        variant="correct_proration",
    )


def other_subscription(b: WorldBuilder) -> FaultOutcome:
    """A colleague opened a second subscription; the customer does not recognise its invoice."""
    # plans of any kind, metered ones as often as elsewhere (usage in arrears, billed right)
    first_plan = _any_plan(b)
    first = _story(b, first_plan, trial_ok=True)
    fill_usage_by_plan(b, first)
    decorate_main(b, first)
    b.bill(first)
    plans = b.draft.plans if b.draft else []
    plan = b.pick([p for p in plans if p is not first_plan])
    anchor = first.anchor + days(b.rng.randint(10, 80))
    while anchor.day > 28:
        anchor += days(b.rng.randint(1, 5))
    story = b.make_story(plan, seats=seats_for(b, plan), periods=b.rng.randint(1, 3), anchor=anchor)
    colleague = ordered_by(b)
    story.sub.events[0].details["ordered_by"] = colleague
    fill_usage_by_plan(b, story)
    invoices = b.bill(story)
    invoice = invoices[0]
    summary = (
        f"Invoice {invoice.id} belongs to subscription {story.sub.id} ({plan.name}, {plan.id}), "
        f"a second subscription on the account created at {story.sub.started_at} by "
        f"{colleague}. It is billed correctly for its period from "
        f"{invoice.billed.period_start.isoformat()}; nothing is credited."
    )
    return _outcome(
        story,
        [invoice],
        [call("get_subscription_timeline", subscription_id=first.sub.id)],
        summary,
        slots={"colleague": colleague},
        traps=["no_second_subscription"] if b.difficulty == "L2" else [],
        variant="other_subscription",
    )


def seat_increase(b: WorldBuilder) -> FaultOutcome:
    """The customer added seats; the next invoice bills them."""
    plan = b.pick([p for p in b.make_catalog().values() if p.per_seat])
    story = _story(b, plan, minimum=2, trial_ok=True)
    fill_usage_by_plan(b, story)
    kd = b.rng.randint(1, story.periods - 1)
    start, end = story.period(kd - 1)
    day, at = daytime_event(b, span(start + days(1), end - days(2)))
    before = story.seats_at(day)
    after = before + b.pick((1, 2, 3, 5, 8))
    seat_change(story, day, at, after, changed_by=b.customer.email)
    traps: list[str] = []
    _legit_tax_change(b, story, traps)
    decorate_main(b, story)
    invoices = b.bill(story)
    invoice = invoices[kd]
    summary = (
        f"The seats_changed event on {day.isoformat()} by {b.customer.email} raised the seats "
        f"from {before} to {after} from the next period. Invoice {invoice.id} bills {after} "
        f"seats; recomputed with {after} seats the difference is 0.00. Nothing is credited."
    )
    return _outcome(
        story,
        [invoice, invoices[kd - 1]],
        [recompute(invoice, seats=after)],
        summary,
        slots={"old_seats": str(before), "new_seats": str(after)},
        traps=traps,
        variant="seat_increase",
    )


def usage_overage(b: WorldBuilder) -> FaultOutcome:
    """Usage above the included units, billed in arrears at the plan's overage price."""
    plans = b.make_catalog().values()
    plan = b.pick([p for p in plans if p.overage_unit_price_cents])
    story = _story(b, plan, minimum=2, trial_ok=True)
    # a period after the trial where there is one (usage during a trial is not billed)
    paid = [k for k in range(story.periods - 1) if _after_trial(story, k)]
    k = b.pick(paid) if paid else b.rng.randrange(story.periods - 1)
    end = story.period(k)[1]
    units = int((plan.included_units or b.usage_level(story)) * b.rng.uniform(1.3, 2.4))
    b.record_usage(story, k, units=units)
    b.fill_usage(story)
    traps: list[str] = []
    _legit_tax_change(b, story, traps)
    decorate_main(b, story, skip=("swap",))
    invoices = b.bill(story)
    invoice = invoices[k + 1]
    assert invoice.correct is not None
    (_, billed_units, first, _, included), *_ = usage_parts(invoice.correct)
    units = billed_units
    summary = (
        f"The usage record for {first.isoformat()} to {end.isoformat()} shows {units} units with "
        f"{included} included, so {max(0, units - included)} were billed at "
        f"{format_cents(plan.overage_unit_price_cents)} USD each on invoice {invoice.id}, issued "
        f"when that period ended; recomputed with {units} usage units the difference is 0.00. "
        "Nothing is credited."
    )
    return _outcome(
        story,
        [invoice],
        [recompute(invoice, usage_units=units)],
        summary,
        slots={"units": str(units), "included": str(plan.included_units)},
        traps=traps,
        variant="usage_overage",
    )


def _after_trial(story: Story, k: int) -> bool:
    return story.trial_end is None or story.period(k)[0] >= story.trial_end


VARIANTS: dict[str, Callable[[WorldBuilder], FaultOutcome]] = {
    "price_change": price_change,
    "tax_change": tax_change,
    "coupon_expired": coupon_expired,
    "correct_proration": correct_proration,
    "other_subscription": other_subscription,
    "seat_increase": seat_increase,
    "usage_overage": usage_overage,
}
