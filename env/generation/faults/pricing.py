"""coupon_not_applied, usage_overage_miscalculated, currency_conversion_error: a price input.

Each builder sets the real terms (a coupon, usage records, fx rates) before billing, so the
correct invoices follow them, then rebills the victims from one wrong input: no coupon, the
wrong usage units or included units, another date's fx rate. L3 adds near
misses: a coupon used up or expired, a legitimate usage spike, a legitimate fx jump.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, date, datetime, time, timedelta
from fractions import Fraction
from zoneinfo import ZoneInfo

from env.engine.billing import BillingInputs, compute_invoice
from env.engine.calendar import days, fx_day
from env.engine.money import format_cents, format_rate, parse_rate
from env.generation.background import PERCENTS, amount_off, decorate_main
from env.generation.builder import WorldBuilder
from env.generation.faults.base import FaultOutcome, recompute
from env.generation.faults.common import (
    invoice_words,
    invoices_by_start,
    join_words,
    overcharge,
    period_starts,
    unbilled_story,
    victim_count,
)
from env.generation.lookalikes_fx import NoStaleDay, locked_periods, off_start, stale_day
from env.generation.lookalikes_pay import fx_high_rate
from env.generation.lookalikes_usage import QUIET, batch_share
from env.generation.story import Story
from env.generation.world import Coupon, Invoice


def _run(b: WorldBuilder, allowed: list[int]) -> list[int]:
    """A run of consecutive indexes taken from `allowed` (sorted): the invoices a fault hits."""
    count = victim_count(b, len(allowed))
    head = b.rng.randrange(len(allowed))
    run = [allowed[head]]
    while len(run) < count and head + len(run) < len(allowed):
        nxt = allowed[head + len(run)]
        if nxt != run[-1] + 1:
            break
        run.append(nxt)
    return run


# coupon_not_applied -------------------------------------------------------------------------


def coupon_not_applied(b: WorldBuilder) -> FaultOutcome:
    b.make_customer()
    story = unbilled_story(b, minimum_periods=4 if b.difficulty == "L3" else 1)
    starts = period_starts(story)
    n = len(starts)
    traps: list[str] = []
    near = b.pick(("used_up", "expired")) if b.difficulty == "L3" else ""
    if b.difficulty == "L1":
        first = 0 if b.rng.random() < 0.7 else b.rng.randrange(n)
    else:
        first = b.rng.randint(0, min(1, n - 2) if near else n - 1)
    end = n - 1  # last period the coupon can cover
    if near:
        end = b.rng.randint(first, n - 2)
    duration, count = _coupon_duration(b, near, end - first + 1)
    coupon_from, applied_at = _coupon_day(b, story, starts, first)
    # window edges stay 2+ days from period starts: a UTC issue date must read the same
    valid_from = coupon_from - days(b.rng.randint(2, 60))
    if near == "expired":
        valid_until = starts[end] + days(b.rng.randint(1, (starts[end + 1] - starts[end]).days - 2))
    else:
        valid_until = date(starts[-1].year + b.rng.randint(0, 1), 12, 31)
    # the background's terms: a fixed amount as often (`amount_off`), the same percentages
    off = amount_off(b, story)
    coupon = b.new_coupon(
        duration=duration,
        periods=count,
        valid_from=valid_from,
        valid_until=valid_until,
        percent=None if off else b.pick(PERCENTS),
        amount_off_cents=off,
    )
    story.coupon, story.coupon_from = coupon, coupon_from
    story.sub.coupon_code = coupon.code
    story.event(coupon_from, applied_at, "coupon_applied", {"coupon_code": coupon.code})
    decorate_main(b, story)
    invoices = b.bill(story)
    by_start = invoices_by_start(invoices)
    applied = [k for k in range(n) if story.coupon_applies(k)]
    victims = [by_start[starts[k]] for k in _run(b, applied)]
    for invoice in victims:
        b.rebill(invoice, coupon=None)
    decoys: list[Invoice] = []
    if first > 0 and b.difficulty != "L1":
        decoys.append(by_start[starts[first - 1]])
        traps.append("invoice_before_coupon")
    if near:
        decoys.append(by_start[starts[applied[-1] + 1]])
        traps.append(f"coupon_{near}")
    cur = b.customer.currency
    differences = join_words([format_cents(overcharge(inv)) for inv in victims])
    summary = (
        f"Subscription {story.sub.id} has coupon {coupon.code} ({_terms(coupon)}, "
        f"{_lasting(coupon)}, valid {coupon.valid_from} to {coupon.valid_until}) from its "
        f"coupon_applied event, but {invoice_words(victims)} "
        f"{'was' if len(victims) == 1 else 'were'} billed without the discount. Recomputed with "
        f"{coupon.code}, the overcharge is {differences} {cur}."
    )
    if decoys:
        summary += (
            f" {join_words([d.id for d in decoys])} correctly carried no discount "
            "(outside the coupon's periods)."
        )
    return FaultOutcome(
        label="coupon_not_applied",
        story=story,
        focus=[*victims, *decoys],
        evidence=[recompute(inv, coupon_code=coupon.code) for inv in victims],
        summary=summary,
        slots={"coupon": coupon.code},
        traps=traps,
        variant=duration,
    )


def _coupon_duration(b: WorldBuilder, near: str, room: int) -> tuple[str, int | None]:
    """With a used-up near miss the coupon must run out exactly after `room` periods."""
    if near == "used_up":
        return ("once", None) if room == 1 else ("repeating", room)
    if near == "expired":
        return b.pick((("forever", None), ("repeating", 12)))
    kind = b.pick(("once", "repeating", "forever"))
    return (kind, b.rng.randint(2, 6)) if kind == "repeating" else (kind, None)


def _coupon_day(b: WorldBuilder, story: Story, starts: list[date], first: int) -> tuple[date, time]:
    """The local day and time of the coupon_applied event.

    At signup it shares the `created` event's time; later it falls at least two days after
    one period start and before the next, so its UTC date (a day off at most) names the
    same first period: this fault must not turn into a timezone case.
    """
    if first == 0:
        created = datetime.strptime(story.sub.started_at, "%Y-%m-%dT%H:%M:%SZ")
        local = created.replace(tzinfo=UTC).astimezone(ZoneInfo(story.timezone))
        at, day = local.time().replace(tzinfo=None), local.date()
    else:
        gap = (starts[first] - starts[first - 1]).days
        at, day = b.work_time(), starts[first - 1] + days(b.rng.randint(2, gap - 1))
    return day, at


def _terms(coupon: Coupon) -> str:
    if coupon.percent_off is not None:
        return f"{format_rate(parse_rate(coupon.percent_off) * 100).removesuffix('.0')}% off"
    return f"{format_cents(coupon.amount_off_cents or 0)} USD off"


def _lasting(coupon: Coupon) -> str:
    if coupon.duration == "once":
        return "for one billing period"
    if coupon.duration == "repeating":
        return f"for {coupon.duration_periods} billing periods"
    return "for every billing period"


# usage_overage_miscalculated ----------------------------------------------------------------


def usage_overage_miscalculated(b: WorldBuilder) -> FaultOutcome:
    """Usage of period k is billed in arrears on invoice k+1 (design §1.1).

    Everything around the fault is drawn as in any class: the customer's usage level and each
    period's volume (spikes included, `WorldBuilder.usage_factor`), the background's plan
    changes. The fault picks a period billed in one part, preferably on an allowance that a
    doubled month exceeds, and that month is a quiet one for the customer: counted twice it
    reads like a busy month. Near misses (L2/L3) are the story's own periods: one over the
    allowance (a real overage) and one under it, both billed correctly."""
    b.make_customer()
    story = unbilled_story(b, metered=True, minimum_periods=4 if b.difficulty == "L3" else 2)
    starts = period_starts(story)
    n = len(starts) - 1  # finished periods: their usage is on the next invoice
    story.usage.clear()
    story.sub.usage.clear()
    story.usage_corrections.clear()
    # included units other than the plan's have no legitimate cause but a pay-as-you-go
    # Growth: that form stays at L1 (design §2), on a Growth plan (its units in a Growth
    # customer's range). Its summary cites the plan's included units, which only the
    # timeline's current plan prints: no plan swap under it, no pending change after it
    drop_units = b.rng.random() < INCLUDED_FORM_RATE  # drawn in every story alike
    growth = story.plan.id == "PLN-GROWTH" and story.plan.included_units > 0
    drop_units = drop_units and b.difficulty == "L1" and growth
    variant = "included_not_subtracted" if drop_units else "double_counted"
    # usage billed in two parts at a plan change is not where this fault strikes: one
    # finished period only, no swap (it would split it); two, no change back (it would
    # split the other)
    keep_plan = variant == "included_not_subtracted" or n < 2
    skip: tuple[str, ...] = ("swap",) if keep_plan else ("swap_back",) if n == 2 else ()
    # L2/L3 has no other form to fall back on: a move to Scale's far larger allowance, where a
    # doubled month stays included, comes last, after Growth periods doubling overcharges
    if b.difficulty != "L1" and story.plan.id == "PLN-GROWTH":
        skip += ("swap_last",)
    decorate_main(b, story, skip=skip)
    if variant == "included_not_subtracted":
        story.keeps_plan = True
    level = b.usage_level(story)
    # a batch counted twice, sized as a late batch a correction adds (`lookalikes_usage`): the
    # billed month reads like an ordinary or busy one
    share = batch_share(b.rng)

    def one_part(k: int) -> bool:  # billed whole: no change inside, none of it in the trial
        start, end = story.period(k)
        in_trial = story.trial_end is not None and start < story.trial_end
        return not in_trial and not any(start < d < end for d, _ in story.plan_changes)

    def doubled_over(k: int) -> bool:  # a quiet month and its batch run past the allowance
        allowance = story.plan_at(starts[k + 1] - timedelta(days=1)).included_units
        return allowance < QUIET[0] * (1 + share) * level

    whole = [k for k in range(n) if one_part(k)]
    candidates = [k for k in whole if doubled_over(k)] or whole
    victim_ks = _run(b, candidates) if candidates else []
    for k in range(n):
        if k in victim_ks and variant == "double_counted":
            # the customer's own volume (checks.timeline's usage spread): usage is a property
            # of the customer, not of the allowance it is billed on
            b.record_usage(story, k, units=int(level * b.rng.uniform(*QUIET)))
        else:
            b.record_usage(story, k)
    invoices = b.bill(story)
    by_start = invoices_by_start(invoices)
    victims = [by_start[starts[k + 1]] for k in victim_ks]
    if not victims or not all(_fault_overcharges(inv, variant, share) for inv in victims):
        victims, variant = _usage_fallback(b, story, by_start, variant, share)
        # the other form's summary cites the plan's units: no pending change after it either
        story.keeps_plan = story.keeps_plan or variant == "included_not_subtracted"
    evidence = []
    for invoice in victims:
        units = invoice.billed.usage_units or 0
        if variant == "double_counted":
            b.rebill(invoice, usage_units=units + _batch(units, share))
            evidence.append(recompute(invoice, usage_units=units))
        else:
            included = invoice.billed.plan.included_units
            b.rebill(invoice, plan=replace(invoice.billed.plan, included_units=0))
            evidence.append(recompute(invoice, included_units=included))
    shapes, decoys = _usage_decoys(b, story, by_start, victims)
    summary = _usage_summary(story, victims, variant)
    if decoys:
        summary += (
            f" Usage on {join_words([d.id for d in decoys])} matches its usage record and was "
            "billed correctly."
        )
    first = victims[0].billed
    return FaultOutcome(
        label="usage_overage_miscalculated",
        story=story,
        focus=[*victims, *decoys],
        evidence=evidence,
        summary=summary,
        slots={
            "billed_units": str(first.usage_units),
            "unit_name": story.plan.unit_name or "unit",
        },
        traps=[f"usage_{shape}_decoy" for shape in shapes],
        variant=variant,
    )


INCLUDED_FORM_RATE = 0.2  # L1 Growth stories whose fault drops the included units


def _with_usage(by_start: dict[date, Invoice]) -> list[Invoice]:
    """The invoices that bill usage, in period order."""
    ordered = sorted(by_start.values(), key=lambda i: i.billed.period_start)
    return [inv for inv in ordered if inv.billed.usage_units is not None]


def _usage_fallback(
    b: WorldBuilder, story: Story, by_start: dict[date, Invoice], variant: str, share: float
) -> tuple[list[Invoice], str]:
    """Victims where the planned ones would not be overcharged (e.g. every one-part period is
    billed on a far larger allowance after an upgrade): any invoice with usage the fault
    overcharges, the other form if the first has none."""
    billed = _with_usage(by_start)
    one = [
        inv
        for inv in billed
        if inv.billed.usage_units_before_change is None and inv.billed.scheduled_from_plan is None
    ]

    def whole(form: str) -> list[Invoice]:
        # from a trial's end the allowance is prorated: the doubled form only there (its
        # summary cites the recorded units, not the plan's allowance)
        after_trial = [inv for inv in one if inv.billed.usage_start is None]
        if form == "double_counted":
            return after_trial or one or billed
        # the summary cites the plan's allowance, which the timeline prints for its plan now
        return [inv for inv in after_trial if inv.billed.plan.plan_id == story.sub.plan_id]

    other = "included_not_subtracted" if variant == "double_counted" else "double_counted"
    current = [inv for inv in billed if inv.billed.plan.plan_id == story.sub.plan_id]
    tries = [(variant, whole(variant)), (other, whole(other)), ("double_counted", billed)]
    tries += [("included_not_subtracted", current), ("included_not_subtracted", billed)]
    for form, pool in tries:
        hit = [i for i, inv in enumerate(pool) if _fault_overcharges(inv, form, share)]
        if hit:
            return [pool[i] for i in _run(b, hit)], form
    pool = whole(variant) or billed
    hit = list(range(len(pool)))
    return [pool[i] for i in _run(b, hit)], variant


def _usage_decoys(
    b: WorldBuilder, story: Story, by_start: dict[date, Invoice], victims: list[Invoice]
) -> tuple[list[str], list[Invoice]]:
    """The near misses of L2 (one) and L3 (both), from the story's own correct periods: the
    one furthest over its allowance (a real overage) and one under it."""
    if b.difficulty == "L1":
        return [], []
    others = [inv for inv in _with_usage(by_start) if inv not in victims]
    over = [i for i in others if (i.billed.usage_units or 0) > i.billed.plan.included_units]
    under = [i for i in others if i not in over]
    found = {
        "spike": max(over, key=lambda i: i.billed.usage_units or 0) if over else None,
        "under": b.pick(under) if under else None,
    }
    shapes = [s for s in ("spike", "under") if found[s] is not None]
    if b.difficulty == "L2" and shapes:
        shapes = [b.pick(shapes)]
    return shapes, [d for s in shapes if (d := found[s]) is not None]


def _batch(units: int, share: float) -> int:
    """The units of a batch counted twice: `share` of the period's recorded units."""
    return max(1, int(units * share))


def _fault_overcharges(invoice: Invoice, variant: str, share: float) -> bool:
    """Whether the usage fault on this invoice bills more than its correct inputs."""
    billed = invoice.billed
    units = billed.usage_units or 0
    if variant == "double_counted":
        wrong = replace(billed, usage_units=units + _batch(units, share))
    else:
        wrong = replace(billed, plan=replace(billed.plan, included_units=0))
    return compute_invoice(wrong).total_cents > compute_invoice(billed).total_cents


def _recorded(correct: BillingInputs) -> str:
    """The units of the usage records an invoice bills: "a + b = c" for two parts around a
    change (each printed by the timeline, their sum derived in the summary)."""
    split, units = correct.usage_units_before_change, correct.usage_units or 0
    if split is None or correct.previous_plan is None:
        return str(units)
    return f"{split} + {units - split} = {units}"


def _usage_summary(story: Story, victims: list[Invoice], variant: str) -> str:
    parts = []
    for invoice in victims:
        correct = invoice.correct
        assert correct is not None
        parts.append(
            f"{invoice.id} (usage of the period before "
            f"{invoice.billed.period_start.isoformat()}: {_recorded(correct)} units recorded, "
            f"billed as {invoice.billed.usage_units} units "
            f"with {invoice.billed.plan.included_units} included; overcharge "
            f"{format_cents(overcharge(invoice))} {invoice.billed.currency})"
        )
    if variant == "double_counted":
        return (
            f"Part of the usage recorded for {story.sub.id} was counted twice: "
            + "; ".join(parts)
            + ". Recomputed with the recorded units, the differences are these overcharges."
        )
    plans = [inv.correct.plan for inv in victims if inv.correct is not None]
    allowances = join_words(
        [
            f"{p.name} ({p.plan_id}) includes {p.included_units}"
            for p in {p.plan_id: p for p in plans}.values()
        ]
    )
    return (
        f"{allowances} units per period, but the included units were not subtracted: "
        + "; ".join(parts)
        + ". Recomputed with the included units, the differences are these overcharges."
    )


# currency_conversion_error ------------------------------------------------------------------


def currency_conversion_error(b: WorldBuilder) -> FaultOutcome:
    b.make_customer(usd=False)
    story = unbilled_story(b, minimum_periods=3 if b.difficulty == "L3" else 1)
    starts = period_starts(story)
    n = len(starts)
    currency = b.customer.currency
    base = b.fx_base()
    jump: int | None = None
    if b.difficulty == "L3" or (b.difficulty == "L2" and b.rng.random() < 0.5):
        jump = b.rng.randrange(n)  # a real rate at the top of the band: billed correctly
        _put_fx(b, fx_day(story.issue_day(jump)), fx_high_rate(b, base))  # a trial's end too
    decorate_main(b, story)
    invoices = b.bill(story)
    by_start = invoices_by_start(invoices)
    locked = locked_periods(b, story)  # a contract rate's invoice is billed right (look-alike)
    allowed = [k for k in range(n) if k != jump and k not in locked]
    run = _run(b, off_start(b, story, allowed))  # drawn as the rate lock's run
    # another recorded day's rate, inside the band every class's table keeps: an inverted rate
    # (once an L1 form) left every currency's band, a value no correct invoice records
    variant = "wrong_date"
    victims: list[Invoice] = []
    lines = []
    # the run's invoices; where none can be overcharged (each right rate at the band's top),
    # the first other allowed one that can
    for k in [*run, *(k for k in allowed if k not in run)]:
        if victims and k not in run:
            break
        invoice = by_start[starts[k]]
        right = invoice.billed.fx_rate
        try:
            day, rate = _wrong_day(b, invoice)
        except NoStaleDay:
            continue
        victims.append(invoice)
        b.rebill(invoice, fx_rate=rate, fx_rate_date=day)
        lines.append(
            f"{invoice.id} was converted at {format_rate(rate)}, the USD to {currency} rate "
            f"of {day.isoformat()}, instead of {format_rate(right)}, the rate its billing rule "
            "names"
        )
        lines[-1] += f" (overcharge {format_cents(overcharge(invoice))} {currency})"
    if not victims:
        raise AssertionError("no allowed invoice of the main story converts higher on any day")
    evidence = [recompute(inv, fx_rate_date=_issue_day(inv)) for inv in victims]
    summary = (
        "Invoice "
        + "; invoice ".join(lines)
        + ". Recomputed with the rate each invoice's billing rule names, the differences are "
        "these overcharges."
    )
    decoys: list[Invoice] = []
    if jump is not None:  # its rate is unusually high, and right: the rate of its own day
        decoy, jump_day = by_start[starts[jump]], _issue_day(by_start[starts[jump]])
        decoys.append(decoy)
        evidence.append(recompute(decoy, fx_rate_date=jump_day))
        summary += (
            f" {decoy.id} used the high rate {format_rate(decoy.billed.fx_rate)}, but "
            f"that is the rate recorded for its issue day {jump_day}: it differs by 0.00."
        )
    return FaultOutcome(
        label="currency_conversion_error",
        story=story,
        focus=[*victims, *decoys],
        evidence=evidence,
        summary=summary,
        traps=["fx_jump_billed_correctly"] if decoys else [],
        variant=variant,
    )


def _issue_day(invoice: Invoice) -> str:
    """The day whose rate is right: the issue day, as the correct inputs record it."""
    assert invoice.correct is not None
    return invoice.correct.fx_rate_date.isoformat()


def _put_fx(b: WorldBuilder, day: date, rate: Fraction) -> None:
    """Raises the rate's path to `rate` on `day` before anything records its days."""
    b.raise_fx(day, rate)


def _wrong_day(b: WorldBuilder, invoice: Invoice) -> tuple[date, Fraction]:
    """Another recorded day whose rate is higher, so the conversion overcharges: a stale rate
    (an earlier day the table holds, latest first) or a fresh day inside the table's band, two
    days or more before the period start and the right rate's day (`lookalikes_fx.stale_day`,
    the chooser the rate lock look-alike draws its contract date with)."""
    # the day before is the UTC date of some issue times, a defensible reading; a day the table
    # holds but no invoice records: another invoice's rate reused would be a rate two invoices
    # share; a fresh day counts among the days beyond the invoices' own (`extra_fx_days`)
    start = min(invoice.billed.period_start, invoice.billed.fx_rate_date)
    recorded = {inv.billed.fx_rate_date for inv in b.draft.invoices} if b.draft else set()
    return stale_day(
        b,
        start,
        invoice.billed.fx_rate,
        recorded,
        lambda rate, day: _overcharges(invoice, rate, day),
    )


def _overcharges(invoice: Invoice, rate: Fraction, day: date) -> bool:
    wrong = compute_invoice(replace(invoice.billed, fx_rate=rate, fx_rate_date=day))
    return wrong.total_cents > invoice.correct_total_cents()
