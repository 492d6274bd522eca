"""wrong_tax_rate and tax_exempt_charged: the tax line of an invoice was computed wrongly.

wrong_tax_rate: the jurisdiction's rate went down and invoices after the change kept the old,
higher rate ("outdated"), or invoices were taxed at another jurisdiction's higher rate
("wrong_jurisdiction"). tax_exempt_charged: a valid exemption certificate covered the invoice
and tax was charged anyway. L3 adds near misses: a rate change applied correctly, an invoice
taxed before the certificate's window opened or after it closed.
"""

from __future__ import annotations

from datetime import date
from fractions import Fraction

from env.engine.calendar import add_months, days
from env.engine.money import format_cents, format_rate, parse_rate
from env.generation import lookalikes_tax
from env.generation.background import decorate_main
from env.generation.builder import WorldBuilder, data
from env.generation.faults.base import FaultOutcome, call, recompute
from env.generation.faults.common import (
    invoice_words,
    invoices_by_start,
    join_words,
    overcharge,
    period_starts,
    unbilled_story,
    victim_count,
)
from env.generation.story import Story
from env.generation.world import Invoice
from env.scenario import ToolCall

FIRST_RATE_DAY = "2023-01-01"  # the builder's tax history starts here


# wrong_tax_rate ---------------------------------------------------------------------------


def _change_day(start: date) -> date:
    """When a rate change takes effect so that the period starting on `start` is the first under it.

    Usually the 1st of that month; never within a day of `start`, because an invoice's UTC
    issue date can be a day off its local period start and both readings must agree.
    """
    if start.day >= 3:
        return start.replace(day=1)
    return add_months(start, -1).replace(day=15)  # after the previous period's start (day <= 2)


def _issue_days(story: Story) -> list[date]:
    """Each period's issue day: the day whose tax rate is right (design §1.1); after a trial
    the first period is issued when the trial ends, not when the period starts."""
    return [story.issue_day(k) for k in range(story.periods)]


def _set_rate_history(b: WorldBuilder, segments: list[tuple[str, date]]) -> None:
    """The customer's jurisdiction history as consecutive (rate, effective_from) segments.

    `set_tax_history` knows one change; the L3 near miss needs two (a rise applied correctly,
    then a cut that was missed), so both tables are written the same way here.
    """
    assert b.draft is not None
    jurisdiction = b.customer.tax_jurisdiction
    froms = [FIRST_RATE_DAY] + [start.isoformat() for _, start in segments[1:]]
    tos: list[str | None] = [*froms[1:], None]
    b.tax_history = [(rate, f, t) for (rate, _), f, t in zip(segments, froms, tos, strict=True)]
    b.draft.tax_rates = [r for r in b.draft.tax_rates if r[0] != jurisdiction]
    b.draft.tax_rates += [(jurisdiction, *row) for row in b.tax_history]
    b.draft.tax_rates.sort()


def _sorted_rates(b: WorldBuilder) -> list[str]:
    return sorted(set(b.locale["rates"]), key=parse_rate)


def wrong_tax_rate(b: WorldBuilder) -> FaultOutcome:
    b.make_customer()
    # design §2: a mix-up with another currency's jurisdiction (GB, AU: no neighbour to have
    # moved from) records a jurisdiction and rate no correct world records, and the outdated
    # rate (IE: no neighbour taxes higher) has no look-alike: L1 only. At L2/L3 every class
    # draws its customer where a neighbour taxes higher (`lookalikes_tax.higher_neighbour`)
    assert b.difficulty == "L1" or lookalikes_tax.higher_neighbour(b.locale)
    story = unbilled_story(b, minimum_periods=4 if b.difficulty == "L3" else 1)
    candidates = _other_jurisdictions(b)
    # design §2: the outdated rate (recorded rate vs its own jurisdiction's table) has no
    # look-alike, so L2/L3 use the wrong jurisdiction, whose signals a recorded move shares
    if candidates and (b.difficulty != "L1" or b.rng.random() < 0.45):
        return _wrong_jurisdiction(b, story, candidates)
    return _outdated_rate(b, story)


def _outdated_rate(b: WorldBuilder, story: Story) -> FaultOutcome:
    """The rate was cut on `change`; the first invoice(s) after it kept the old, higher rate."""
    rates = _sorted_rates(b)
    starts = period_starts(story)
    issued = _issue_days(story)
    n = len(starts)
    traps: list[str] = []
    rise_at: int | None = None
    if b.difficulty == "L3":  # a rise applied correctly, then the cut that was missed
        rise_at = b.rng.randint(1, n - 3)
        first = b.rng.randint(rise_at + 1, n - 2)
        high = b.pick(rates[1:])
        low_before = b.pick([r for r in rates if parse_rate(r) < parse_rate(high)])
        new = b.pick([r for r in rates if parse_rate(r) < parse_rate(high)])
        rise, change = _change_day(issued[rise_at]), _change_day(issued[first])
        _set_rate_history(
            b, [(low_before, date.fromisoformat(FIRST_RATE_DAY)), (high, rise), (new, change)]
        )
        old = high
        traps.append("tax_rise_applied_correctly")
    else:
        first = b.rng.randint(1, n - 1) if n > 1 and b.difficulty == "L2" else b.rng.randrange(n)
        old = b.pick(rates[1:])
        new = b.pick([r for r in rates if parse_rate(r) < parse_rate(old)])
        change = _change_day(issued[first])
        b.set_tax_history(old, new, change)
    if first > 0:
        traps.append("old_rate_correct_before_change")
    lookalikes_tax.move_before(b, issued[0])
    count = victim_count(b, n - first)
    b.tax_compared = issued[first : first + count] + ([issued[rise_at]] if rise_at else [])
    decorate_main(b, story)
    invoices = b.bill(story)
    by_start = invoices_by_start(invoices)
    victims = [by_start[starts[k]] for k in range(first, first + count)]
    for invoice in victims:
        b.rebill(invoice, tax_rate=parse_rate(old))
    jurisdiction = b.customer.tax_jurisdiction
    day = issued[first].isoformat()
    evidence = [call("get_tax_rate", jurisdiction=jurisdiction, date=day)]
    evidence += [recompute(inv, tax_rate=new) for inv in victims]
    decoys: list[Invoice] = []
    if rise_at is not None:  # the higher rate was right on this one: it came before the cut
        decoy = by_start[starts[rise_at]]
        decoys.append(decoy)
        evidence.append(
            call("get_tax_rate", jurisdiction=jurisdiction, date=issued[rise_at].isoformat())
        )
    differences = [format_cents(overcharge(inv)) for inv in victims]
    currency = b.customer.currency
    summary = (
        f"The {jurisdiction} tax rate changed to {new} effective {change.isoformat()}, but "
        f"{invoice_words(victims)} (issued "
        f"{join_words([d.isoformat() for d in issued[first : first + count]])}) "
        f"{'was' if len(victims) == 1 else 'were'} still taxed at the old rate {old}. "
        f"Recomputed at {new}, the overcharge is {join_words(differences)} {currency}."
    )
    if decoys and rise_at is not None:
        summary += (
            f" Invoice {decoys[0].id} at {old} was correct: that rate was in force on "
            f"{issued[rise_at].isoformat()}, its issue day."
        )
    return _wrong_rate_outcome(story, victims, decoys, evidence, summary, traps, variant="outdated")


def _other_jurisdictions(b: WorldBuilder) -> list[tuple[str, str, str, str]]:
    """(jurisdiction, country, currency, rate in the table) of every other jurisdiction."""
    assert b.draft is not None
    tabled = {r[0]: r[1] for r in b.draft.tax_rates}
    own = b.customer.tax_jurisdiction
    seen: dict[str, tuple[str, str, str, str]] = {}
    for loc in data("locales.json"):
        name = loc["jurisdiction"]
        if name != own and name not in seen:
            rate = tabled.get(name, loc["rates"][-1])
            seen[name] = (name, loc["country"], loc["currency"], rate)
    return list(seen.values())


def _wrong_jurisdiction(
    b: WorldBuilder, story: Story, others: list[tuple[str, str, str, str]]
) -> FaultOutcome:
    """Invoices taxed at another jurisdiction's (higher) rate, recorded under its code."""
    assert b.draft is not None
    starts = period_starts(story)
    issued = _issue_days(story)
    n = len(starts)
    traps: list[str] = []
    rise_at: int | None = None
    if b.difficulty == "L3":  # a legitimate rise inside the story, applied correctly
        rates = _sorted_rates(b)
        rise_at = b.rng.randint(1, n - 1)
        high = b.pick(rates[1:])
        low = b.pick([r for r in rates if parse_rate(r) < parse_rate(high)])
        b.set_tax_history(low, high, _change_day(issued[rise_at]))
        traps.append("tax_rise_applied_correctly")
    else:  # keep the random history, but never a change within a day of a period start
        (old, _, change_text), (new, _, _) = b.tax_history
        change = date.fromisoformat(change_text or FIRST_RATE_DAY)
        near = [s for s in issued if abs((change - s).days) <= 1]
        b.set_tax_history(old, new, _change_day(near[0]) if near else change)
    ks = [k for k in range(n) if k != rise_at]
    # L2/L3: a victim after the story's first invoice, so the old jurisdiction a move left
    # behind can show on the invoices before it (`_previous_mixup`)
    later = [k for k in ks if k > 0] if b.difficulty != "L1" else []
    first = b.pick(later or ks)
    run, count = [first], victim_count(b, 2)
    while len(run) < count and run[-1] + 1 in ks:
        run.append(run[-1] + 1)
    if rise_at is None:
        _lowest_where_compared(b, [issued[k] for k in run], others)
    right = max(b.tax_rate_on(issued[k]) for k in run)
    higher = [o for o in others if parse_rate(o[3]) > right]
    if b.difficulty != "L1":  # only the jurisdiction a move left: never a far-off code
        _previous_mixup(b, higher)
        higher = [o for o in higher if o[0] == b.customer.previous_jurisdiction]
    if not higher:  # the customer's own rate is the highest there is: the other flavour
        return _outdated_rate(b, story)
    # a mix-up is likeliest with the old jurisdiction after a move, else a neighbour (same
    # country, else same currency), else the nearest higher rate: never a rate far outside
    # what the customer's own invoices show elsewhere
    same_country = [o for o in higher if o[1] == b.customer.country]
    same_currency = [o for o in higher if o[2] == b.customer.currency]
    previous = [o for o in higher if o[0] == b.customer.previous_jurisdiction]
    nearest = min(parse_rate(o[3]) for o in higher)
    closest = [o for o in higher if parse_rate(o[3]) == nearest]
    other, _, _, rate_text = b.pick(previous or same_country or same_currency or closest)
    if not any(r[0] == other for r in b.draft.tax_rates):
        b.draft.tax_rates.append((other, rate_text, FIRST_RATE_DAY, None))
        b.draft.tax_rates.sort()
    head = min(first, n if rise_at is None else rise_at)
    if other == b.customer.previous_jurisdiction and head > 0:  # billing kept the old one
        lookalikes_tax.move_between(b, issued[head - 1], issued[head])
    else:
        lookalikes_tax.move_before(b, issued[head])
    if b.customer.jurisdiction_since and b.customer.jurisdiction_since > issued[0].isoformat():
        traps.append("previous_jurisdiction_before_move")
    b.tax_compared = [issued[k] for k in run] + ([issued[rise_at]] if rise_at else [])
    decorate_main(b, story)
    invoices = b.bill(story)
    by_start = invoices_by_start(invoices)
    victims = [by_start[starts[k]] for k in run]
    wrong = parse_rate(rate_text)
    for invoice in victims:
        b.rebill(invoice, tax_rate=wrong, tax_jurisdiction=other)
    own = b.customer.tax_jurisdiction
    evidence = []
    for k, invoice in zip(run, victims, strict=True):
        evidence.append(call("get_tax_rate", jurisdiction=own, date=issued[k].isoformat()))
        evidence.append(recompute(invoice, tax_rate=format_rate(b.tax_rate_on(issued[k]))))
    evidence.append(call("get_tax_rate", jurisdiction=other, date=issued[run[0]].isoformat()))
    decoys: list[Invoice] = []
    if rise_at is not None:
        decoys.append(by_start[starts[rise_at]])
        evidence.append(call("get_tax_rate", jurisdiction=own, date=issued[rise_at].isoformat()))
    parts = [
        f"{inv.id} was taxed at {rate_text} under {other} instead of the {own} rate "
        f"{format_rate(b.tax_rate_on(issued[k]))} in force on {issued[k].isoformat()} "
        f"(overcharge {format_cents(overcharge(inv))} {inv.billed.currency})"
        for k, inv in zip(run, victims, strict=True)
    ]
    summary = (
        f"Customer {b.customer.id} is in tax jurisdiction {own}, but invoice "
        + "; invoice ".join(parts)
        + ". Recomputing with the customer's own rate gives these differences."
    )
    if decoys:
        summary += (
            f" The higher tax on {decoys[0].id} is a legitimate {own} rate change, "
            "applied correctly."
        )
    return _wrong_rate_outcome(
        story, victims, decoys, evidence, summary, traps, variant="wrong_jurisdiction"
    )


def _previous_mixup(b: WorldBuilder, higher: list[tuple[str, str, str, str]]) -> None:
    """L2/L3 (design §1.2): the wrong jurisdiction is the one the customer moved from, whose
    rate the invoices before the move rightly carry, so the victim records no rate or
    jurisdiction a correct world would not. Where the drawn move (if any) left a neighbour
    taxing no higher, the move on record is from a higher-taxing neighbour instead."""
    c = b.customer
    if any(o[0] == c.previous_jurisdiction for o in higher):
        return
    near = set(lookalikes_tax.neighbours(b))
    options = [o for o in higher if o[0] in near]
    if options:
        c.previous_jurisdiction = b.pick(options)[0]
        c.jurisdiction_since = None


def _lowest_where_compared(
    b: WorldBuilder, days_compared: list[date], others: list[tuple[str, str, str, str]]
) -> None:
    """Where no same-currency neighbour taxes above the rate in force on the victims' days (a
    New York customer), the history's segment covering them gets the locale's lowest rate, so
    the mix-up stays with a neighbour instead of a rate from another currency's range."""
    change = date.fromisoformat(b.tax_history[0][2] or FIRST_RATE_DAY)
    neighbours = [parse_rate(o[3]) for o in others if o[2] == b.customer.currency]
    if any(r > max(b.tax_rate_on(d) for d in days_compared) for r in neighbours):
        return
    rates = _sorted_rates(b)
    if len(rates) < 2 or not any(r > parse_rate(rates[0]) for r in neighbours):
        return
    rest = b.pick(rates[1:])
    if all(d >= change for d in days_compared):
        b.set_tax_history(rest, rates[0], change)
    elif all(d < change for d in days_compared):
        b.set_tax_history(rates[0], rest, change)


def _wrong_rate_outcome(
    story: Story,
    victims: list[Invoice],
    decoys: list[Invoice],
    evidence: list[ToolCall],
    summary: str,
    traps: list[str],
    *,
    variant: str,
) -> FaultOutcome:
    """Both flavours alike: victims inspected before decoys, the first victim's tax quoted."""
    return FaultOutcome(
        label="wrong_tax_rate",
        story=story,
        focus=[*victims, *decoys],
        evidence=evidence,
        summary=summary,
        slots=_tax_slots(victims[0]),
        traps=traps,
        variant=variant,
    )


def _tax_slots(invoice: Invoice) -> dict[str, str]:
    amounts = invoice.billed_amounts()
    return {
        "tax": format_cents(amounts.tax_cents),
        "tax_rate": _percent(invoice.billed.tax_rate),
    }


def _percent(rate: Fraction) -> str:
    return format_rate(rate * 100).removesuffix(".0") + "%"


# tax_exempt_charged -----------------------------------------------------------------------


def tax_exempt_charged(b: WorldBuilder) -> FaultOutcome:
    """A certificate covers the invoice dates; the victims were billed without the exemption."""
    b.make_customer()
    story = unbilled_story(b, minimum_periods=4 if b.difficulty == "L3" else 1)
    starts = period_starts(story)
    n = len(starts)
    traps: list[str] = []
    first = 0  # first period inside the certificate's window
    if b.difficulty == "L3" or (b.difficulty == "L2" and b.rng.random() < 0.5):
        first = b.rng.randint(1, n - 1)  # the invoice(s) before the window were rightly taxed
        traps.append("taxed_before_certificate")
        before = story.issue_day(first - 1)  # after a trial, its end: that day decides
        if first == 1 and story.trial_end is not None:  # which a later extension may move up
            before = starts[1] - days(5)  # to 4 days before the next period (`extend_later`)
        gap = (starts[first] - before).days
        valid_from = before + days(b.rng.randint(2, gap - 2))
    else:  # filed at signup or later (world v6: never before the customer existed)
        valid_from = max(starts[0] - days(b.rng.randint(5, 200)), lookalikes_tax.customer_day(b))
    last = n - 1  # last period inside the window
    # the certificate lapsed before the last period(s), between an issue day and the next
    # period's start with room for an expiry (after a trial the first issue day is its end),
    # a realistic span after it was filed (`lookalikes_tax.CERTIFICATE_DAYS`)
    shortest = lookalikes_tax.CERTIFICATE_DAYS[0]
    lapsed = [
        k
        for k in range(first, n - 1)
        if (starts[k + 1] - story.issue_day(k)).days >= 5
        and (story.issue_day(k) - valid_from).days >= shortest
    ]
    if b.difficulty != "L1" and lapsed and b.rng.random() < 0.5:
        last = b.pick(lapsed)
        valid_until = _lapse_day(b, story.issue_day(last), starts[last + 1])
        traps.append("taxed_after_certificate_expired")
    else:
        valid_until = date(max(starts[-1].year, valid_from.year + 1) + b.rng.randint(0, 2), 12, 31)
    certificate = b.new_id("TXC", 8)
    b.customer.exemption = (certificate, valid_from.isoformat(), valid_until.isoformat())
    lookalikes_tax.move_before(b, story.issue_day(first))  # covered invoices: the own jurisdiction
    count = victim_count(b, last - first + 1)
    head = b.rng.randint(first, last - count + 1)
    b.tax_covered = [story.issue_day(k) for k in range(head, head + count)]
    decorate_main(b, story)  # the window may miss a run beside the victims, as in any class
    _, start_text, until_text = b.customer.exemption
    valid_from, valid_until = date.fromisoformat(start_text), date.fromisoformat(until_text)
    invoices = b.bill(story)  # inside the window they are exempt: correct == billed so far
    by_start = invoices_by_start(invoices)
    victims = [by_start[starts[k]] for k in range(head, head + count)]
    for invoice in victims:
        b.rebill(invoice, tax_exempt=False)
    decoys = []  # correctly taxed look-alikes just outside the window
    if first > 0:
        decoys.append(by_start[starts[first - 1]])
    if last < n - 1:
        decoys.append(by_start[starts[last + 1]])
    variant = "window_opened_late" if first > 0 else "covered"
    taxes = [format_cents(inv.billed_amounts().tax_cents) for inv in victims]
    cur = b.customer.currency
    summary = (
        f"Customer {b.customer.id} holds tax exemption certificate {certificate}, valid from "
        f"{valid_from.isoformat()} until {valid_until.isoformat()}, which covers "
        f"{invoice_words(victims)} (period start "
        f"{join_words([inv.billed.period_start.isoformat() for inv in victims])}); tax of "
        f"{join_words(taxes)} {cur} was charged anyway. Recomputed as tax exempt, the difference "
        "is exactly that tax."
    )
    if decoys:
        summary += (
            f" Tax on {join_words([d.id for d in decoys])} was correct: outside the certificate's "
            "window."
        )
    return FaultOutcome(
        label="tax_exempt_charged",
        story=story,
        focus=[*victims, *decoys],
        evidence=[recompute(inv, tax_exempt=True) for inv in victims],
        summary=summary,
        slots={**_tax_slots(victims[0]), "certificate": certificate},
        traps=traps,
        variant=variant,
    )


def _lapse_day(b: WorldBuilder, after: date, before: date) -> date:
    """An expiry between two period starts, at least two days before the later one.

    `valid_until` is exclusive; the margin keeps a UTC issue date (a day off the local period
    start) on the same side. A day 29-31 is preferred where the gap has one: no anchor day
    exceeds 28, so it can never be the start of any period, a decoy subscription's included.
    """
    inside = [after + days(i) for i in range(1, (before - after).days - 1)]
    late = [d for d in inside if d.day >= 29]
    return b.pick(late or inside)
