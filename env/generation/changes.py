"""Changes a world's history carries whatever its label: plan swaps and earlier credit notes.

The background draws them for every class and some faults build on the same pieces, so they
sit below both: when an immediate plan change may fall (`late_days`), an immediate swap to the
sibling plan, and a credit note support issued before the dispute. Each draws from `b.rng` in a
fixed order: moving one changes no scenario, reordering its draws would change them all.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

from env.engine.calendar import utc_stamp
from env.generation.builder import WorldBuilder
from env.generation.lookalikes_plans import backdated_effective, log_change, moved_start
from env.generation.story import Story
from env.generation.world import CreditNote, Invoice, Plan


def unused_share(old: Plan, new: Plan) -> float:
    """The largest share of a period an immediate change from `old` to `new` may leave unused:
    a downgrade's credit for the old plan must stay below the new plan's next charge, since the
    world has no negative invoices (old * u < new * (1 + u), with a margin)."""
    ratio = max(p[0] for p in old.prices) / min(p[0] for p in new.prices)
    return 1.0 if ratio <= 1.8 else 0.8 / (ratio - 1)


def late_days(start: date, end: date, old: Plan, new: Plan, *, margin: int = 1) -> list[date]:
    """Days of [start+margin, end-margin] late enough for a change from `old` to `new`."""
    length = (end - start).days
    first = max(
        start + timedelta(days=margin), end - timedelta(days=int(length * unused_share(old, new)))
    )
    first = min(first, end - timedelta(days=margin + 1))
    return [
        first + timedelta(days=i) for i in range((end - timedelta(days=margin) - first).days + 1)
    ]


def immediate_swap(
    b: WorldBuilder,
    story: Story,
    plans: dict[str, Plan],
    *,
    upgrades_only: bool = False,
    back_ok: bool = True,
    last_only: bool = False,
) -> None:
    """An immediate change to the plan of the same kind (Team <-> Business, Growth <-> Scale,
    Starter -> Team)
    inside a period before the last, prorated correctly on the next invoice; `upgrades_only`:
    from the cheaper plan of a pair only; `back_ok=False`: no change back (a story that needs
    one finished period free of changes and has only two); `last_only`: in the last period
    before the current one (a story whose earlier periods must stay on the first plan)."""
    upgrades = {"TEAM": "BUSINESS", "GROWTH": "SCALE"}
    pairs = upgrades if upgrades_only else upgrades | {"BUSINESS": "TEAM", "SCALE": "GROWTH"}
    if not upgrades_only:  # flat to per-seat, as downgrade_not_applied's own decoy does
        pairs["STARTER"] = "TEAM"
    key = pairs.get(story.plan.id.removeprefix("PLN-"))
    if key is None:
        return
    to = plans[key]
    # after the trial (a change during it would credit time never charged), in the trial's
    # own period too, as proration_error's change, unless it was extended after it ended
    ks = [k for k in range(story.periods - 1) if swap_days(story, k, story.plan, to)]
    ks = ks[-1:] if last_only else ks
    if not ks:
        return
    k = b.pick(ks)
    _swap_in(b, story, k, story.plan, to)
    # now and then the change back in a later period, as proration_error's own second change
    # (two prorated invoices in a world is no label); never with `upgrades_only`
    back = list(range(k + 1, story.periods - 1))
    if back and back_ok and not upgrades_only and b.rng.random() < BACK_RATE:
        _swap_in(b, story, b.pick(back), to, story.plan)


BACK_RATE = 0.8  # of background immediate swaps with a later period free: the change back


def swap_days(story: Story, k: int, old: Plan, to: Plan) -> list[date]:
    """The days of period k an immediate change from `old` to `to` falls on in every class:
    late enough (`late_days`), two days after any trial, and none in a period whose trial
    was extended after it first ended."""
    start, end = story.period(k)
    if story.trial_end is not None and start < story.trial_end and story.trial_end_before:
        return []
    after = story.after_trial(start + timedelta(days=2))
    limit = story.change_limit(end)
    return [d for d in late_days(start, end, old, to, margin=2) if after <= d < limit]


def _swap_in(b: WorldBuilder, story: Story, k: int, old: Plan, to: Plan) -> None:
    """An immediate change from `old` to `to` on a late enough day of period k."""
    day = b.pick(swap_days(story, k, old, to))
    early_ok = unused_share(old, to) >= 1.0
    day, logged, effective = backdated_effective(b, story, day, early_ok=early_ok)
    moved = moved_start(b, story, day) if effective == "immediately" else None
    story.plan_changes.append((moved or day, to))
    details = {"from_plan_id": old.id, "to_plan_id": to.id, "effective": effective}
    log_change(b, story, logged, details, moved or day)


# why support credited an invoice, by what the credit is for; a reason that says "partial" only
# on a credit below the invoice's total (design §1.1: nothing an analyst would query)
CREDIT_REASONS = {
    "goodwill": (
        "Goodwill credit agreed with support",
        "Courtesy credit for the service interruption",
    ),
    "second_charge": (
        "Credit for a second charge taken on this invoice",
        "Second card charge returned as a credit",
    ),
    "trial_extension": (
        "Trial extended by support: the extra trial days credited",
        "Credit for the days of the extended free trial",
    ),
}
PARTIAL_REASON = "Partial credit while the billing team investigates"


def credit_reason(b: WorldBuilder, invoice: Invoice, cents: int, purpose: str) -> str:
    """A reason that fits the credit: its purpose, and "partial" only below the total."""
    reasons = list(CREDIT_REASONS[purpose])
    if purpose == "goodwill" and cents < invoice.billed_amounts().total_cents:
        reasons.append(PARTIAL_REASON)
    return str(b.pick(reasons))


def earlier_credit(
    b: WorldBuilder, invoice: Invoice, cents: int, after: str, purpose: str = "goodwill"
) -> tuple[str, str, int]:
    """A credit note support issued before the dispute: (id, invoice id, cents)."""
    assert b.draft is not None
    moment = datetime.strptime(after, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    moment += timedelta(days=b.rng.randint(1, 5), minutes=b.rng.randint(0, 900))
    note = CreditNote(
        id=b.new_id("CN"),
        invoice_id=invoice.id,
        amount_cents=cents,
        currency=invoice.billed.currency,
        reason=credit_reason(b, invoice, cents, purpose),
        created_at=utc_stamp(moment),
    )
    b.draft.credit_notes.append(note)
    return note.id, note.invoice_id, note.amount_cents
