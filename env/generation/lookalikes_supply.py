"""The service-site look-alike (world v5, design §1.2 "same shape"): invoices rightly taxed in
the jurisdiction the customer moved from.

`wrong_tax_rate` at L2/L3 keeps taxing the first one or two invoices after a move on record in
the old (higher-taxing) jurisdiction: on `get_invoice` the recorded jurisdiction and rate are
the previous ones, while `get_customer` says the customer had moved by the issue day. Its twin,
drawn in every other class at the same place: the customer's billing address moved, but the
main subscription's service stayed at the old site for a while, and tax follows the place of
supply (`env.engine.supply`). The subscription's own record says so
(`get_subscription_timeline`'s `place_of_supply`: the site's jurisdiction, and `until`, the day
the site moved too, between two issue days, or null while it is still there), so the first one
or two invoices after the move are taxed in the old jurisdiction at its table rate, billed
correctly: `recompute_invoice` reproduces them, and only the timeline tells them from the fault.

Drawn from the customer's own side stream, after the main story's background is placed and
before it is billed; never where a certificate's window covers a site invoice (an exemption
would then hinge on the site too), where a story compares tax rates (`tax_compared`) or keeps
two invoices in one jurisdiction (`tax_kept`), nor in the two tax classes, whose victims'
jurisdiction is their evidence.
"""

from __future__ import annotations

import random

from env.engine.calendar import days
from env.generation.builder import WorldBuilder
from env.generation.story import Story

SITE_RATE = {"L1": 0.0, "L2": 0.5, "L3": 0.5}  # of the main stories where a site fits
NOT_HERE = ("wrong_tax_rate", "tax_exempt_charged")
REASONS = (
    "service delivered at the {site} site until it moved too: taxed at the place of supply",
    "the {site} office kept this subscription's users after the head office moved; taxed where "
    "the service is used",
    "place of supply: the {site} branch, which receives this service, closed later than the "
    "billing address changed",
)
STILL = "service still delivered at the {site} site: taxed at the place of supply"


def side_rng(b: WorldBuilder) -> random.Random:
    """This look-alike's own stream, seeded by the customer id (stable across runs)."""
    return random.Random(f"lookalikes_supply:{b.customer.id}")


def supply_site(b: WorldBuilder, story: Story) -> None:
    """Maybe (`SITE_RATE`) the main subscription's service stays at the old site for the
    first one or two invoices after a move inside the story (as many as the fault's victims,
    `faults.common.victim_count` at L2/L3), where the old jurisdiction taxes higher on their
    issue days, as the fault's mix-up always does."""
    rng = side_rng(b)
    roll, count, tail = rng.random(), rng.randint(1, 2), rng.randint(3, 20)
    reason = REASONS[rng.randrange(len(REASONS))]
    c = b.customer
    previous, since = c.previous_jurisdiction, c.jurisdiction_since
    if b.label in NOT_HERE or b.tax_compared or roll >= SITE_RATE[b.difficulty]:
        return
    if previous is None or since is None:
        return
    issued = [story.issue_day(k) for k in range(story.periods)]
    after = [k for k, d in enumerate(issued) if d.isoformat() >= since]
    if not after or after[0] == 0:  # invoices before the move show the old jurisdiction too
        return
    run = after[:count]
    if any(b.rate_in(previous, issued[k]) <= b.tax_rate_on(issued[k]) for k in run):
        return
    cert = c.exemption
    if cert is not None and any(cert[1] <= issued[k].isoformat() < cert[2] for k in run):
        return
    until = None
    if run[-1] + 1 < story.periods:
        first, nxt = issued[run[-1]], issued[run[-1] + 1]
        gap = (nxt - first).days
        if gap < 8:  # no room for the site's move 3+ days from both issue days
            return
        until = (nxt - days(min(tail, gap - 3))).isoformat()
    kept = b.tax_kept  # the site's end would change the jurisdiction between two kept days
    if until is not None and any(a.isoformat() < until <= z.isoformat() for a, z in kept):
        return
    text = STILL if until is None else reason
    story.sub.supply_site = (previous, until, text.format(site=previous))
