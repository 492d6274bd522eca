"""Tax look-alikes (world v4, design §1.2): legitimate causes of the tax comparisons' signals.

- **A move on record.** A customer whose tax jurisdiction changed (`MOVE_RATE`, any class, drawn
  before the label matters): invoices issued before `jurisdiction_since` are taxed in the
  previous jurisdiction at its rate. They differ from the customer's current jurisdiction and
  its rate, exactly as `wrong_tax_rate`'s victims do; `get_customer` shows the move.
- **A certificate for another jurisdiction.** An exemption applies only where it was issued
  (`CERTIFICATE_ELSEWHERE_RATE` of background certificates; the previous jurisdiction after a
  move): tax inside its window is then correct, as `tax_exempt_charged`'s victims are not.

The billing engine follows both (`WorldBuilder.rates_on`); faults keep their victims after the
move (`move_before`), so the fields occur in every class at the same rate. Every draw here comes
from the customer's own side stream (`side_rng`), so adding these look-alikes leaves the rest of
each world (the builder's main stream) as it was.
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from datetime import date, time, timedelta
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING, Any, Protocol

from env.engine.calendar import days, local_to_utc, utc_to_local_date
from env.engine.money import parse_rate

if TYPE_CHECKING:
    from env.generation.story import Story
    from env.generation.world import Customer, WorldDraft


class TaxWorld(Protocol):
    """What these look-alikes read and write of a world being built.
    `env.generation.builder.WorldBuilder` calls them, so they name its surface here instead of
    importing it (layers point down)."""

    draft: WorldDraft | None
    tax_rng: random.Random | None
    difficulty: str
    label: str
    tax_history: list[tuple[str, str, str | None]]
    tax_compared: list[date]
    tax_covered: list[date]
    tax_kept: list[tuple[date, date]]

    @property
    def customer(self) -> Customer: ...

    def new_id(self, prefix: str, length: int = 6, rng: random.Random | None = None) -> str: ...

    def set_tax_history(self, old: str, new: str, change: date) -> None: ...

    def exempt_on(self, day: date) -> bool: ...


# customers with a jurisdiction change on record (where a neighbour exists), by level: at L2/L3
# nearly all, as `wrong_tax_rate` there always shows the old jurisdiction on some invoice
MOVE_RATE = {"L1": 0.85, "L2": 0.95, "L3": 0.95}
HIGHER_RATE_MOVE = 0.7  # moves from a neighbour whose rate is above the customer's own
MOVE_INSIDE_RATE = {"L1": 0.8, "L2": 0.95, "L3": 0.95}  # the move falls inside the main story
# the customer's own rate changes between two invoices of the main story (applied correctly),
# as `wrong_tax_rate` at L3 always shows one
CHANGE_INSIDE_RATE = {"L1": 0.0, "L2": 0.0, "L3": 0.9}
CERTIFICATE_PREVIOUS_RATE = 0.5  # a moved customer's certificate issued in the old jurisdiction
CERTIFICATE_ELSEWHERE_RATE = 0.2  # other certificates issued for another jurisdiction
EXTRA_CERTIFICATE_RATE = 1.0  # of customers the builder gave none: all, as the fault has one
# a certificate's validity (world v6, `checks.realism.certificates`): from a day after the
# customer existed, a quarter to four years long; drawn ones run half a year to three years
CERTIFICATE_DAYS = (90, 1461)
DRAWN_CERTIFICATE_DAYS = (180, 1095)
CERTIFICATE_START_DAYS = 30  # a drawn certificate is filed within this many days of signup


def customer_day(b: TaxWorld) -> date:
    """The local day the customer record was created: no certificate starts before it."""
    c = b.customer
    return utc_to_local_date(c.created_at, c.timezone)


def drawn_window(b: TaxWorld, rng: random.Random) -> tuple[str, str]:
    """A background certificate's window: filed at signup or soon after (as
    `tax_exempt_charged`'s covers the first invoices), valid for a realistic span."""
    start = customer_day(b) + days(rng.randint(0, CERTIFICATE_START_DAYS))
    end = start + days(rng.randint(*DRAWN_CERTIFICATE_DAYS))
    return start.isoformat(), end.isoformat()


def side_rng(b: TaxWorld) -> random.Random:
    """The look-alikes' own stream, seeded by the customer id (a string seed is hashed with
    SHA-512 by `random`: stable across runs, unlike `hash()`)."""
    if b.tax_rng is None:
        b.tax_rng = random.Random(f"lookalikes_tax:{b.customer.id}")
    return b.tax_rng


@cache
def _locales() -> list[dict[str, Any]]:
    text = resources.files("env.generation").joinpath("data/locales.json").read_text("utf-8")
    return list(json.loads(text))


def neighbours(b: TaxWorld) -> list[str]:
    """Jurisdictions a customer could have moved from without changing currency: same country
    first (US states, Canadian provinces), else the same currency (the euro area)."""
    own = b.customer
    return _neighbours_of(own.tax_jurisdiction, own.country, own.currency)


def _neighbours_of(jurisdiction: str, country: str, currency: str) -> list[str]:
    same_currency = [
        loc for loc in _locales()
        if loc["currency"] == currency and loc["jurisdiction"] != jurisdiction
    ]  # fmt: skip
    same_country = [loc for loc in same_currency if loc["country"] == country]
    return sorted({loc["jurisdiction"] for loc in same_country or same_currency})


def higher_neighbour(locale: dict[str, Any]) -> bool:
    """Some neighbour of the locale taxes above its lowest rate. At L2/L3 every class draws its
    customer among these locales (`WorldBuilder.make_customer`): a tax-rate mix-up there is
    the old jurisdiction of a move (`wrong_tax_rate`), which needs one, and the currency and
    jurisdiction of a customer must say nothing of the class."""
    low = min(parse_rate(r) for r in locale["rates"])
    near = _neighbours_of(locale["jurisdiction"], locale["country"], locale["currency"])
    return any(parse_rate(r) > low for n in near for r in _rates_of(n))


def _rates_of(jurisdiction: str) -> list[str]:
    return next(loc["rates"] for loc in _locales() if loc["jurisdiction"] == jurisdiction)


def maybe_move(b: TaxWorld) -> None:
    """Draws a previous jurisdiction (its day is placed with the first story, `place_move`) and
    makes sure the rate table holds its rate: one flat row, like every other jurisdiction's."""
    assert b.draft is not None
    options = neighbours(b)
    if not options or side_rng(b).random() >= MOVE_RATE[b.difficulty]:
        return
    tabled = {r[0]: r[1] for r in b.draft.tax_rates}
    rate = {o: tabled.get(o) or max(_rates_of(o), key=parse_rate) for o in options}
    own = max(parse_rate(r[1]) for r in b.draft.tax_rates if r[0] == b.customer.tax_jurisdiction)
    higher = [o for o in options if parse_rate(rate[o]) > own]
    # businesses often move to a lower-tax neighbour: the old rate is then the higher one,
    # as a wrong jurisdiction's is (`wrong_tax_rate`), so the recorded rates tell nothing
    rng = side_rng(b)
    previous = rng.choice(higher if higher and rng.random() < HIGHER_RATE_MOVE else options)
    b.customer.previous_jurisdiction = previous
    if previous not in tabled:
        b.draft.tax_rates.append((previous, rate[previous], "2023-01-01", None))
        b.draft.tax_rates.sort()


def _roomy_gaps(story: Story) -> list[int]:
    """Periods k whose issue day comes 8+ days after the one before: room for a dated change
    between the two invoices that stays 3+ days from both issue days."""
    return [
        k for k in range(1, story.periods)
        if (story.issue_day(k) - story.issue_day(k - 1)).days >= 8
    ]  # fmt: skip


def _days_before(rng: random.Random, story: Story, k: int) -> date:
    """A day 3 to 20 days before period k's issue day and 3+ days after the previous one."""
    gap = (story.issue_day(k) - story.issue_day(k - 1)).days
    return story.issue_day(k) - days(rng.randint(3, min(20, gap - 3)))


def place_move(b: TaxWorld, story: Story) -> None:
    """The move's day: a few days before one of the main story's invoices (so earlier ones are
    taxed in the old jurisdiction), or before the story began. Never within two days of an
    issue day, so a UTC reading of an issue date falls on the same side."""
    c = b.customer
    if c.previous_jurisdiction is None or c.jurisdiction_since is not None:
        return
    inside = _roomy_gaps(story)
    if inside and side_rng(b).random() < MOVE_INSIDE_RATE[b.difficulty]:
        k = side_rng(b).choice(inside)
        since = _days_before(side_rng(b), story, k)
    else:
        since = story.issue_day(0) - days(side_rng(b).randint(3, 300))
    c.jurisdiction_since = since.isoformat()


def place_rate_change(b: TaxWorld, story: Story) -> None:
    """The customer's own rate change (drawn with the world) takes effect a few days before one
    of the main story's invoices (`CHANGE_INSIDE_RATE`), every class alike: the invoices before
    and after it carry two rates of one jurisdiction, each right on its issue day. Never within
    two days of an issue day; the 1st of a month where one fits. A fault or look-alike that
    needs its own history sets it later."""
    rng = side_rng(b)
    if len(b.tax_history) != 2 or rng.random() >= CHANGE_INSIDE_RATE[b.difficulty]:
        return
    inside = _roomy_gaps(story)
    if not inside:
        return
    k = rng.choice(inside)
    change = story.issue_day(k).replace(day=1)  # rates change on the 1st where that fits
    if not story.issue_day(k - 1) + days(3) <= change <= story.issue_day(k) - days(3):
        change = _days_before(rng, story, k)
    (old, _, _), (new, _, _) = b.tax_history
    b.set_tax_history(old, new, change)


def move_before(b: TaxWorld, day: date) -> None:
    """Where a story compares tax from `day` on, the move (if any) took effect before it, so
    those invoices are taxed in the current jurisdiction (earlier ones may still be in the old)."""
    c = b.customer
    if c.previous_jurisdiction is None:
        return
    if c.jurisdiction_since is None or c.jurisdiction_since > (day - days(3)).isoformat():
        c.jurisdiction_since = (day - days(side_rng(b).randint(3, 40))).isoformat()


def move_between(b: TaxWorld, before: date, day: date) -> None:
    """The move took effect between two issue days, a few days before `day` (earlier invoices
    rightly taxed in the old jurisdiction): where a bill kept the old one after it, its rate is
    one the customer's own invoices show (`wrong_tax_rate`). Else as `move_before`."""
    c = b.customer
    gap = (day - before).days
    if c.previous_jurisdiction is None or gap < 8:
        move_before(b, day)
        return
    c.jurisdiction_since = (day - days(side_rng(b).randint(3, min(20, gap - 3)))).isoformat()


def keep_jurisdiction(b: TaxWorld, first: date, second: date) -> None:
    """Two invoices compared for a price (no_error look-alikes): no move between them, nor a
    service site's end (`lookalikes_supply`)."""
    b.tax_kept.append((first, second))
    since = b.customer.jurisdiction_since
    if since is not None and first.isoformat() < since <= second.isoformat():
        move_before(b, first)


def certificate_jurisdiction(b: TaxWorld) -> str:
    """Where a background certificate applies: mostly the customer's own jurisdiction; after a
    move often the old one; sometimes a neighbour's (a registration elsewhere)."""
    c = b.customer
    if c.previous_jurisdiction is not None and side_rng(b).random() < CERTIFICATE_PREVIOUS_RATE:
        return c.previous_jurisdiction
    options = neighbours(b)
    if options and side_rng(b).random() < CERTIFICATE_ELSEWHERE_RATE:
        return str(side_rng(b).choice(options))
    return c.tax_jurisdiction


def certificate_elsewhere(b: TaxWorld) -> list[str]:
    """Jurisdictions a certificate may have been issued for instead of the customer's own."""
    previous = b.customer.previous_jurisdiction
    return sorted({*neighbours(b), *([previous] if previous else [])})


def certificate_gap(b: TaxWorld, story: Story) -> None:
    """Every class alike, before the main story is billed: the certificate's window misses a
    run of its invoices. A tax-rate story names the invoices it compares (`tax_compared`:
    they must be taxed); any other draws a run as those are drawn, so a window that skips
    some invoices says nothing of the class. tax_exempt_charged's window keeps its victims
    (`tax_covered`) and misses a drawn run beside them, if one fits."""
    if b.customer.exemption is None:
        return
    compared = b.tax_compared or _run(b, story)
    for _ in range(4 if b.tax_covered else 0):  # a run beside the kept days
        if not _near(compared, b.tax_covered):
            break
        compared = _run(b, story)
    certificate_off(b, compared, keep=b.tax_covered)


def _run(b: TaxWorld, story: Story) -> list[date]:
    """Issue days of a run like `wrong_tax_rate`'s victims: one invoice or two in a row, after
    the first at L2/L3 (where L3 also compares an earlier rate change's invoice); at L1 any,
    sometimes up to three."""
    rng, n = side_rng(b), story.periods
    if n < 2 and b.difficulty != "L1":
        return []
    first = rng.randrange(n) if b.difficulty == "L1" else rng.randint(1, n - 1)
    longest = 2
    if b.difficulty == "L1":
        longest = 1 if rng.random() < 0.8 else 3
    count = rng.randint(1, max(1, min(longest, n - first)))
    ks = list(range(first, first + count))
    if b.difficulty == "L3":
        ks.append(rng.randint(1, n - 1))
    return [story.issue_day(k) for k in ks]


def _near(compared: list[date], keep: Sequence[date]) -> bool:
    """Whether a kept day lies within two days of the compared run."""
    return any(min(compared) - days(2) <= d <= max(compared) + days(2) for d in keep)


def certificate_off(b: TaxWorld, compared: list[date], keep: Sequence[date] = ()) -> None:
    """The compared invoices are taxed. Only where the certificate would cover one of them
    does it change: its window ends before the first of them or opens after the last,
    whichever keeps more of it (a certificate that lapsed, or one obtained later), never
    uncovering a day in `keep`."""
    cert = b.customer.exemption
    if cert is None or not any(b.exempt_on(d) for d in compared):
        return
    if _near(compared, keep):
        return  # the run overlaps what must stay covered: no gap this time
    rng = side_rng(b)
    certificate, start, end = cert
    until = min(compared) - days(rng.randint(1, 10))  # valid_until is exclusive
    since = max(compared) + days(rng.randint(1, 10))
    if keep:  # never past a kept day
        until = max(until, max(keep) + days(2))
        since = min(since, min(keep) - days(1))
    kept_before = (until - date.fromisoformat(start)).days
    kept_after = (date.fromisoformat(end) - since).days
    if keep:  # the side the kept days are on
        kept_before, kept_after = (1, 0) if max(keep) < min(compared) else (0, 1)
    elif (until - customer_day(b)).days < CERTIFICATE_DAYS[0]:
        kept_before = 0  # no room for a lapsed one since signup: one obtained later
    before = kept_before >= kept_after
    if before:  # a lapse: valid long enough before it, from a day the customer existed
        first = min(date.fromisoformat(start), until - days(rng.randint(*DRAWN_CERTIFICATE_DAYS)))
        window = (max(first, customer_day(b)), until)
    else:  # obtained later: valid long enough after it
        last = max(date.fromisoformat(end), since + days(rng.randint(*DRAWN_CERTIFICATE_DAYS)))
        window = (since, last)
    if (window[1] - window[0]).days < CERTIFICATE_DAYS[0]:
        return  # kept days leave no realistic window beside the run: no gap this time
    b.customer.exemption = (certificate, window[0].isoformat(), window[1].isoformat())


def extra_certificate(b: TaxWorld) -> None:
    """A certificate for the customers the builder's own draw left without one, drawn
    like the builder's (any window), so that holding one says little about the class."""
    rng = side_rng(b)
    if rng.random() >= EXTRA_CERTIFICATE_RATE:
        return
    b.customer.exemption = (b.new_id("TXC", 8, rng), *drawn_window(b, rng))


def certificate_not_left(b: TaxWorld) -> None:
    """A certificate for the jurisdiction the customer moved from was issued before the move
    (design §1.1: a state an analyst could audit). One drawn for it from the move day on is a
    registration in another neighbour instead: it covers no invoice either way, since a
    certificate applies only where an invoice is taxed, so billing is unchanged."""
    c = b.customer
    previous, since = c.previous_jurisdiction, c.jurisdiction_since
    if c.exemption is None or previous is None or since is None:
        return
    if c.exemption_jurisdiction != previous or c.exemption[1] < since:
        return
    options = [n for n in neighbours(b) if n != previous]
    if options:
        c.exemption_jurisdiction = side_rng(b).choice(options)
        return
    # no other neighbour: issued the day before the move, a day no invoice of it was issued on
    eve = date.fromisoformat(since) - timedelta(days=1)
    assert b.draft is not None
    last = eve + days(side_rng(b).randint(*DRAWN_CERTIFICATE_DAYS))
    window = (eve.isoformat(), max(c.exemption[2], last.isoformat()))
    issued = [(utc_to_local_date(i.issued_at, c.timezone).isoformat(), i) for i in b.draft.invoices]
    # nor one rightly taxed there after the move (a service site's, `lookalikes_supply`)
    there = [d for d, i in issued if i.correct and i.correct.tax_jurisdiction == previous]
    if not any(day == window[0] for day, _ in issued) and not any(
        window[0] <= day < window[1] for day in there
    ):
        c.exemption = (c.exemption[0], *window)
        if eve < customer_day(b):  # a customer who moved: on record from before the move
            c.created_at = min(c.created_at, local_to_utc(eve, time(10, 0), c.timezone))
    else:  # nowhere to put it: it covered no invoice, so the world bills the same without it
        c.exemption = None
