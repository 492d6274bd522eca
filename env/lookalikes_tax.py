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
from datetime import date
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING, Any, Protocol

from env.calendar import days
from env.money import parse_rate

if TYPE_CHECKING:
    from env.story import Story
    from env.world import Customer, WorldDraft


class TaxWorld(Protocol):
    """What these look-alikes read and write of a world being built. `env.builder.WorldBuilder`
    calls them, so they name its surface here instead of importing it (layers point down)."""

    draft: WorldDraft | None
    tax_rng: random.Random | None

    @property
    def customer(self) -> Customer: ...

    def new_id(self, prefix: str, length: int = 6, rng: random.Random | None = None) -> str: ...


MOVE_RATE = 0.85  # customers with a jurisdiction change on record (where a neighbour exists)
HIGHER_RATE_MOVE = 0.7  # moves from a neighbour whose rate is above the customer's own
MOVE_INSIDE_RATE = 0.8  # of those, the move falls between two invoices of the main story
CERTIFICATE_PREVIOUS_RATE = 0.5  # a moved customer's certificate issued in the old jurisdiction
CERTIFICATE_ELSEWHERE_RATE = 0.2  # other certificates issued for another jurisdiction
EXTRA_CERTIFICATE_RATE = 1.0  # of customers the builder gave none: all, as the fault has one
KEEP_WINDOW_RATE = 0.5  # tax-rate stories: a covering certificate applies elsewhere, not lapsed


def side_rng(b: TaxWorld) -> random.Random:
    """The look-alikes' own stream, seeded by the customer id (a string seed is hashed with
    SHA-512 by `random`: stable across runs, unlike `hash()`)."""
    if b.tax_rng is None:
        b.tax_rng = random.Random(f"lookalikes_tax:{b.customer.id}")
    return b.tax_rng


@cache
def _locales() -> list[dict[str, Any]]:
    text = resources.files("env").joinpath("data/locales.json").read_text("utf-8")
    return list(json.loads(text))


def neighbours(b: TaxWorld) -> list[str]:
    """Jurisdictions a customer could have moved from without changing currency: same country
    first (US states, Canadian provinces), else the same currency (the euro area)."""
    own = b.customer
    same_currency = [
        loc for loc in _locales() if loc["currency"] == own.currency
        and loc["jurisdiction"] != own.tax_jurisdiction
    ]  # fmt: skip
    same_country = [loc for loc in same_currency if loc["country"] == own.country]
    return sorted({loc["jurisdiction"] for loc in same_country or same_currency})


def _rates_of(jurisdiction: str) -> list[str]:
    return next(loc["rates"] for loc in _locales() if loc["jurisdiction"] == jurisdiction)


def maybe_move(b: TaxWorld) -> None:
    """Draws a previous jurisdiction (its day is placed with the first story, `place_move`) and
    makes sure the rate table holds its rate: one flat row, like every other jurisdiction's."""
    assert b.draft is not None
    options = neighbours(b)
    if not options or side_rng(b).random() >= MOVE_RATE:
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


def place_move(b: TaxWorld, story: Story) -> None:
    """The move's day: a few days before one of the main story's invoices (so earlier ones are
    taxed in the old jurisdiction), or before the story began. Never within two days of an
    issue day, so a UTC reading of an issue date falls on the same side."""
    c = b.customer
    if c.previous_jurisdiction is None or c.jurisdiction_since is not None:
        return
    inside = [
        k for k in range(1, story.periods)
        if (story.issue_day(k) - story.issue_day(k - 1)).days >= 8
    ]  # fmt: skip
    if inside and side_rng(b).random() < MOVE_INSIDE_RATE:
        k = side_rng(b).choice(inside)
        gap = (story.issue_day(k) - story.issue_day(k - 1)).days
        since = story.issue_day(k) - days(side_rng(b).randint(3, min(20, gap - 3)))
    else:
        since = story.issue_day(0) - days(side_rng(b).randint(3, 300))
    c.jurisdiction_since = since.isoformat()


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
    """Two invoices compared for a price (no_error look-alikes): no move between them."""
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


def certificate_applies_elsewhere(b: TaxWorld) -> bool:
    """Tax-rate stories (`lapse_certificate_before`): sometimes a certificate covering the
    compared invoices was issued for another jurisdiction, instead of lapsing before them."""
    elsewhere = certificate_elsewhere(b)
    if not elsewhere or side_rng(b).random() >= KEEP_WINDOW_RATE:
        return False
    b.customer.exemption_jurisdiction = side_rng(b).choice(elsewhere)
    return True


def extra_certificate(b: TaxWorld) -> None:
    """A certificate for the customers the builder's own draw left without one, drawn
    like the builder's (any window), so that holding one says little about the class."""
    rng = side_rng(b)
    if rng.random() >= EXTRA_CERTIFICATE_RATE:
        return
    start = date(2024, 6, 1) + days(rng.randint(0, 500))
    end = start + days(rng.randint(60, 730))
    b.customer.exemption = (b.new_id("TXC", 8, rng), start.isoformat(), end.isoformat())
