"""The committed seat minimum (world v5, design §1.2 "same shape"): a seat commitment on the
customer record (`seat_commitment`, read with `get_customer`) under which a run of the main
subscription's invoices bills more seats than the timeline's `seats_changed` events leave in
force, billed correctly.

`seat_count_mismatch`'s cut forms bill the count before a cut for one to three invoices, from
the period the cut took effect (`reduction_ignored`) or from the one after it
(`reduction_reverted`). Where a background cut is billed correctly (`lookalikes_values
.seat_step`), the commitment draws the same run: the count before the cut, committed for the
periods starting in its window (`periods_from`, `periods_until`), so the invoices and the
timeline disagree by the fault's step, sign and ratio; only the customer record tells the two
apart (`Story.billed_seats`). Commitments that bind no invoice (a minimum at or below the
seats in force) are drawn in every class, the seat fault's included, so the record's presence
says nothing of the class.

The draws come from their own stream (`_rng`, seeded by the customer id) so that the rest of a
scenario is drawn as before.
"""

from __future__ import annotations

import random

from env.generation.builder import WorldBuilder
from env.generation.story import Story

BINDING_RATE = {"L1": 0.0, "L2": 0.55, "L3": 0.55}  # of main stories with a billed seat cut
IDLE_RATE = {"L1": 0.0, "L2": 0.12, "L3": 0.12}  # of per-seat main stories, every class
REVERTED_SHARE = 0.5  # the run starts one period after the cut (the fault's `reduction_reverted`)
LONGEST = 3  # invoices in a run, as `faults.lifecycle._seat_layout` at L2/L3


def _rng(b: WorldBuilder) -> random.Random:
    """The commitment's own stream (a string seed is hashed with SHA-512 by `random`)."""
    return random.Random(f"lookalikes_seats:{b.customer.id}")


def _cuts(story: Story) -> list[tuple[int, int]]:
    """(period index, seats before) of each seat cut taking effect at a period start."""
    starts = {story.period(k)[0]: k for k in range(story.periods)}
    out = []
    current = story.seats
    for effective, seats in sorted(story.seat_changes):
        if seats < current and effective in starts:
            out.append((starts[effective], current))
        current = seats
    return out


def _per_seat(story: Story, ks: range) -> bool:
    return all(story.plan_at(story.period(k)[0]).per_seat for k in ks)


def seat_commitment(b: WorldBuilder, story: Story) -> None:
    """After the main story's seat changes are drawn, before it is billed: now and then a seat
    commitment. Outside the seat class, where a cut is billed correctly (`BINDING_RATE`), it
    commits the count before the cut for a run of one to three periods from the cut (or the
    period after it); elsewhere (`IDLE_RATE`, every class) a minimum no invoice falls below."""
    if b.customer.seat_commitment is not None or not story.plan.per_seat:
        return
    rng = _rng(b)
    paid = set(story.billed_periods())
    cuts = [c for c in _cuts(story) if c[0] in paid]
    binding = cuts and b.label != "seat_count_mismatch"
    if binding and rng.random() < BINDING_RATE[b.difficulty]:
        k, before = rng.choice(cuts)
        first = k + (1 if rng.random() < REVERTED_SHARE else 0)
        count = rng.randint(1, LONGEST)
        cut = story.seats_at(story.period(k)[0])
        last = first  # the run stops at the next seat change: one step, as the fault's
        while last < min(first + count, story.periods) and (
            story.seats_at(story.period(last)[0]) == cut
        ):
            last += 1
        ks = range(first, last)
        if ks and all(j in paid for j in ks) and _per_seat(story, ks):
            _commit(b, story, ks, before)
            return
    if rng.random() >= IDLE_RATE[b.difficulty] or not paid:
        return
    first = rng.choice(sorted(paid))
    ks = range(first, min(first + rng.randint(1, LONGEST), story.periods))
    if not _per_seat(story, ks):
        return
    lowest = min(story.seats_at(story.period(j)[0]) for j in ks)
    _commit(b, story, ks, max(1, lowest - rng.choice((0, 0, 1, 2))))


def _commit(b: WorldBuilder, story: Story, ks: range, seats: int) -> None:
    start, until = story.period(ks[0])[0], story.period(ks[-1] + 1)[0]
    story.seat_floor = (start, until, seats)
    b.customer.seat_commitment = (story.sub.id, seats, start.isoformat(), until.isoformat())
