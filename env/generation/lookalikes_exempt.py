"""The exemption withheld from a subscription (world v5, design §1.2 "same shape"): a
`exemption_withheld` event on the main subscription's timeline (read with
`get_subscription_timeline`) under which a run of its invoices issued inside the certificate's
window, in its jurisdiction, is taxed, billed correctly.

`tax_exempt_charged` taxes one to three consecutive invoices the customer's certificate covers
(`faults.common.victim_count`); the look-alike taxes a run drawn the same way, because the
customer's tax team told billing that the subscription was, for those issue days, used outside
the certificate's exempt purpose (a taxable affiliate, a documented review of the certificate).
The invoice and the certificate (`get_invoice`, `get_customer`) look exactly like the fault's;
only the timeline's event (`certificate_id`, `issued_from`, `issued_until`, `reason`) tells the
two apart (`WorldBuilder.exempt_on`). The fault's class draws it too, on a run away from its
victims (`tax_covered`).

The draws come from their own stream (`_rng`, seeded by the customer id) so that the rest of a
scenario is drawn as before.
"""

from __future__ import annotations

import random
from datetime import time

from env.engine.calendar import days, local_to_utc
from env.generation.builder import WorldBuilder
from env.generation.story import Story

WITHHELD_RATE = {"L1": 0.0, "L2": 0.5, "L3": 0.7}  # of main stories with covered invoices
LONGEST = 3  # invoices in a run, as `faults.common.victim_count` at L2/L3
REASONS = (
    "ordered for a taxable affiliate",
    "used outside the certificate's exempt purpose",
    "certificate under review by the tax authority",
)
NOTICE_DAYS = (1, 9)  # the event is logged this many days before the first withheld invoice


def _rng(b: WorldBuilder) -> random.Random:
    """The look-alike's own stream (a string seed is hashed with SHA-512 by `random`)."""
    return random.Random(f"lookalikes_exempt:{b.customer.id}")


def exemption_withheld(b: WorldBuilder, story: Story) -> None:
    """Before the main story is billed, after its certificate's window is final: now and then
    (`WITHHELD_RATE`) a run of one to three consecutive covered invoices taxed, the event
    logged days before the first of them. Never on the exemption fault's victims."""
    cert = b.customer.exemption
    if cert is None or b.difficulty == "L1" or story.sub.id in b.exemption_withheld:
        return
    rng = _rng(b)
    if rng.random() >= WITHHELD_RATE[b.difficulty]:
        return
    kept = set(b.tax_covered)
    paid = story.billed_periods()
    # a trial extended after its first charge may have that charge reissued at its first end
    # (`lookalikes_life.settle_main_trial`): its issue day is not final, so it is left out
    moving = {0} if story.trial_end_before is not None else set()
    covered = [
        k
        for k in paid
        if k not in moving and b.exempt_on(d := story.issue_day(k)) and d not in kept
    ]
    if not covered:
        return
    count = rng.randint(1, LONGEST)  # as many as the fault's victims, where a run that long fits
    while not (heads := [k for k in covered if all(k + i in covered for i in range(count))]):
        count -= 1
    head = rng.choice(heads)
    run = list(range(head, head + count))
    first = story.issue_day(head)
    # the window opens on the day the event is logged and closes days after the last withheld
    # invoice, two days or more from any other issue day (a UTC reading of an issue time, a day
    # off the local one, must not change the answer)
    earliest = story.issue_day(head - 1) + days(2) if head > 0 else story.period(0)[0]
    logged = max(earliest, first - days(rng.randint(*NOTICE_DAYS)))
    if logged >= first:
        return
    at = time(rng.randrange(24), rng.randrange(60))
    stamp = local_to_utc(logged, at, story.timezone)
    if stamp <= story.sub.started_at or _canceled_at(story, stamp):
        return
    last, after = story.issue_day(run[-1]), run[-1] + 1
    room = (story.issue_day(after) - last).days - 2 if after < story.periods else 10
    if room < 2:
        return
    until = last + days(rng.randint(2, min(10, room)))
    window = (logged.isoformat(), until.isoformat())
    details = {
        "certificate_id": cert[0],
        "issued_from": window[0],
        "issued_until": window[1],
        "reason": rng.choice(REASONS),
    }
    story.event_at(stamp, "exemption_withheld", details)
    b.exemption_withheld[story.sub.id] = window


def _canceled_at(story: Story, stamp: str) -> bool:
    """Whether the subscription stands canceled at `stamp` (a confirmed cancellation not yet
    reversed): no change is logged then (design §1.1, one state)."""
    state = False
    for e in story.sub.events:
        if e.occurred_at >= stamp:
            break
        if e.type == "canceled":
            state = True
        elif e.type == "reactivated":
            state = False
    return state
