"""The scenario generator: (split, seed) -> Scenario, a pure function.

The split decides the label, difficulty and name pool (`env.generation.splits`); the label's builder
makes the world and the fault; this module adds decoys, computes the truth with the billing
engine, writes the reference solution and the complaint, and freezes the database.
"""

from __future__ import annotations

import hashlib
import random
from datetime import UTC, date, datetime, timedelta
from functools import lru_cache

from env.engine.calendar import days, local_to_utc, utc_stamp, utc_to_local_date
from env.engine.money import format_cents
from env.generation import lookalikes_tax
from env.generation.background_pending import pending_changes
from env.generation.builder import WorldBuilder
from env.generation.complaints import render_complaint
from env.generation.decoys import add_decoys
from env.generation.faults import builder_for
from env.generation.faults.base import FaultOutcome, call
from env.generation.freeze import freeze
from env.generation.lookalikes_life import coupon_at_end
from env.generation.rule_text import rule_text
from env.generation.splits import TWIN_SPLITS, split_assignment
from env.generation.story import Story
from env.generation.twin_moves import move_fault, moved_summary, wrong_fields
from env.generation.twin_repair import set_right, twin_outcome
from env.scenario import Scenario, ToolCall, Truth

GENERATOR_VERSION = "billsleuth-gen-6"
DISPUTE_DAYS = (2, 12)  # the dispute opens this many days after the last invoice


def scenario_rng(split: str, seed: int) -> random.Random:
    digest = hashlib.sha256(f"{GENERATOR_VERSION}:{split}:{seed}".encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


@lru_cache(maxsize=4096)
def generate(split: str, seed: int) -> Scenario:
    if split in TWIN_SPLITS:  # a frozen split of twins: the fixed twin of each seed of its source
        scenario = build(TWIN_SPLITS[split], seed, twin=True)
    else:
        scenario = build(split, seed)
    assert scenario is not None
    return scenario


def build(split: str, seed: int, *, twin: bool = False, moved: bool = False) -> Scenario | None:
    """The scenario of (split, seed); `twin`: the same world with the fault's wrong input set
    right (`env.generation.twins`). The world is built the same way either way (every draw of
    the rng is made), and only then are the fault's records set right, so the twin differs
    from the original in those records and nothing else."""
    assignment = split_assignment(split, seed)
    rng = scenario_rng(split, seed)
    builder = WorldBuilder(
        rng,
        name_pool=assignment.name_pool,
        difficulty=assignment.difficulty,
        label=assignment.label,
    )
    outcome = builder_for(assignment.label)(builder)
    add_decoys(builder, outcome)
    lookalikes_tax.certificate_not_left(builder)
    for story in builder.stories:  # periods start on the anchor day (after a trial too)
        story.sub.anchor_day = story.anchor.day
        story.sub.events.sort(key=lambda e: e.occurred_at)  # a trial extended after the fact
    draft = builder.draft
    assert draft is not None
    opened_at = open_dispute(builder)
    overcharges = draft.overcharges()
    _check_outcome(outcome, overcharges)
    complaint, claimed, traps, disputed = render_complaint(builder, outcome, overcharges)
    dispute_id = builder.new_id("DSP")
    draft.dispute = (dispute_id, opened_at, complaint)
    if moved:
        return _moved_scenario(
            split, seed, builder, outcome, overcharges, disputed, (claimed, tuple(traps))
        )
    if twin and outcome.label != "no_error":
        return _twin_scenario(
            split, seed, builder, outcome, overcharges, disputed, (claimed, tuple(traps))
        )
    truth = Truth(
        label=outcome.label,
        overcharges=dict(overcharges),
        expected_credits=dict(overcharges),
        reference=reference_solution(builder, outcome, overcharges, disputed),
        explanation=outcome.summary,
        traps=tuple(outcome.traps + traps),
        claimed_amounts=claimed,
        disputed_invoices=disputed,
    )
    return Scenario(
        scenario_id=f"{split}-{seed}",
        split=split,
        seed=seed,
        difficulty=assignment.difficulty,
        customer_id=builder.customer.id,
        complaint=complaint,
        opened_at=opened_at,
        database=freeze(draft),
        _truth=truth,
    )


def _twin_scenario(
    split: str,
    seed: int,
    b: WorldBuilder,
    outcome: FaultOutcome,
    overcharges: dict[str, int],
    disputed: tuple[str, ...],
    complaint: tuple[tuple[str, ...], tuple[str, ...]],
) -> Scenario:
    """The twin's card and truth: the fault's records set right, the complaint kept, the
    verdict `no_error`, the reference an investigation that finds nothing to credit."""
    draft = b.draft
    assert draft is not None and draft.dispute is not None
    set_right(draft, overcharges, b.fault_rows, ended_by_dispute(b))
    left = draft.overcharges()
    if left:
        raise AssertionError(f"twin of {split}-{seed} still has overcharges {left}")
    kept = tuple(i for i in disputed if any(inv.id == i for inv in draft.invoices))
    if not kept:  # the complaint names only a record set right away: as a complaint naming none
        kept = tuple(inv.id for inv in draft.invoices)
    fixed = twin_outcome(draft, outcome, overcharges)
    truth = Truth(
        label="no_error",
        overcharges={},
        expected_credits={},
        reference=reference_solution(b, fixed, {}, kept),
        explanation=fixed.summary,
        traps=("counterfactual_twin", *complaint[1]),  # the complaint's traps stand
        claimed_amounts=complaint[0],
        disputed_invoices=kept,
    )
    return _derived_scenario(f"{split}-twin-{seed}", split, seed, b, truth)


def _moved_scenario(
    split: str,
    seed: int,
    b: WorldBuilder,
    outcome: FaultOutcome,
    overcharges: dict[str, int],
    disputed: tuple[str, ...],
    complaint: tuple[tuple[str, ...], tuple[str, ...]],
) -> Scenario | None:
    """The same fault on another invoice (`env.generation.twin_moves`), or None."""
    draft = b.draft
    assert draft is not None and draft.dispute is not None
    if outcome.label == "no_error":
        return None
    fault = [draft.invoice(i) for i in overcharges]
    wrong = wrong_fields(fault[0])
    if wrong is None or len(fault) != 1:
        return None
    set_right(draft, overcharges, b.fault_rows, ended_by_dispute(b))
    found = move_fault(draft, fault[0], wrong, outcome.focus)
    if found is None:
        return None
    victim, shown = found
    moved_over = draft.overcharges()
    if set(moved_over) != {victim.id}:
        raise AssertionError(f"moved twin of {split}-{seed}: overcharges {moved_over}")
    kept = tuple(i for i in disputed if any(inv.id == i for inv in draft.invoices))
    fixed = FaultOutcome(
        label=outcome.label,
        story=outcome.story,
        focus=[victim],
        evidence=[shown],
        summary=moved_summary(victim, moved_over[victim.id]),
        variant=f"moved_{outcome.variant}",
    )
    truth = Truth(
        label=outcome.label,
        overcharges=dict(moved_over),
        expected_credits=dict(moved_over),
        reference=reference_solution(b, fixed, moved_over, kept),
        explanation=fixed.summary,
        traps=("moved_twin", *complaint[1]),
        claimed_amounts=complaint[0],
        disputed_invoices=kept,
    )
    return _derived_scenario(f"{split}-moved-{seed}", split, seed, b, truth)


def _derived_scenario(
    scenario_id: str, split: str, seed: int, b: WorldBuilder, truth: Truth
) -> Scenario:
    """A scenario of the seed's world as set right or moved: the same customer and dispute."""
    draft = b.draft
    assert draft is not None and draft.dispute is not None
    return Scenario(
        scenario_id=scenario_id,
        split=split,
        seed=seed,
        difficulty=split_assignment(split, seed).difficulty,
        customer_id=b.customer.id,
        complaint=draft.dispute[2],
        opened_at=draft.dispute[1],
        database=freeze(draft),
        _truth=truth,
    )


def open_dispute(b: WorldBuilder) -> str:
    """When the customer writes: two to twelve days after the last invoice (`DISPUTE_DAYS`,
    `checks.realism.dispute_window`) and after every recorded moment. Active subscriptions are
    first billed up to that day (design §1.1: an active subscription invoices every period up
    to the dispute); a cancellation that has not taken effect by then is pending, its row
    still active (`_pending_rows`)."""
    draft = b.draft
    assert draft is not None
    tz = b.customer.timezone
    opened_at = ""
    for _ in range(8):  # a late payment can push the dispute past another period start
        last = max(utc_to_local_date(inv.issued_at, tz) for inv in draft.invoices)
        if not opened_at or utc_to_local_date(opened_at, tz) < last + days(DISPUTE_DAYS[0]):
            opened_day = last + days(b.rng.randint(*DISPUTE_DAYS))
            opened_at = local_to_utc(opened_day, b.work_time(), tz)
        for story in b.stories:
            _bill_until(b, story, utc_to_local_date(opened_at, tz))
        if max(utc_to_local_date(inv.issued_at, tz) for inv in draft.invoices) != last:
            continue  # billed a new period: the window counts from its invoice
        stamps = [p.paid_at for p in draft.payments] + [n.created_at for n in draft.credit_notes]
        stamps += [e.occurred_at for sub in draft.subscriptions for e in sub.events]
        latest = max([inv.issued_at for inv in draft.invoices] + stamps)
        if opened_at > latest:
            break
        late = utc_to_local_date(latest, tz)  # a later day of the window, after it if any is left
        if late < last + days(DISPUTE_DAYS[1]):
            opened_day = late + days(b.rng.randint(1, (last + days(DISPUTE_DAYS[1]) - late).days))
            opened_at = local_to_utc(opened_day, b.work_time(), tz)
            if opened_at > latest:
                continue
        renewals = [s.period(s.periods)[0] for s in b.stories if _billing(s)]
        if renewals:  # past the window: the customer writes after the next renewal's invoice
            opened_day = max(min(renewals), late) + days(b.rng.randint(*DISPUTE_DAYS))
            opened_at = local_to_utc(opened_day, b.work_time(), tz)
            continue
        opened_at = utc_stamp(_moment(latest) + timedelta(minutes=b.rng.randint(30, 600)))
    else:
        raise AssertionError(f"no dispute moment after every record ({opened_at})")
    _pending_rows(b, utc_to_local_date(opened_at, tz))
    for story in b.stories:  # a coupon the clock removed where a canceled service ended
        coupon_at_end(b, story, utc_to_local_date(opened_at, tz))
    for story in b.stories:  # recent changes the next invoice will carry, in every class
        pending_changes(b, story, opened_at)
        if story.sub.status == "active" and story.cancel_effective is None:
            b.record_usage_to_date(story, utc_to_local_date(opened_at, tz))
    b.close_rates(utc_to_local_date(opened_at, tz))
    b.customer.created_at = min(b.customer.created_at, *(s.sub.started_at for s in b.stories))
    return opened_at


def ended_by_dispute(b: WorldBuilder) -> set[str]:
    """The subscriptions whose cancellation took effect by the dispute day."""
    assert b.draft is not None and b.draft.dispute is not None
    today = utc_to_local_date(b.draft.dispute[1], b.customer.timezone)
    return {s.sub.id for s in b.stories if s.cancel_effective and s.cancel_effective <= today}


def _pending_rows(b: WorldBuilder, today: date) -> None:
    """A subscription whose cancellation takes effect after the dispute day still runs: its
    row says active until then (a cancellation at period end, or on a later date, pending)."""
    for story in b.stories:
        ends = story.cancel_effective
        if story.sub.status == "canceled" and ends is not None and ends > today:
            story.sub.status = "active"


def _billing(story: Story) -> bool:
    """An active subscription with no cancellation: it invoices every period."""
    return story.sub.status == "active" and story.cancel_effective is None


def _bill_until(b: WorldBuilder, story: Story, day: date) -> None:
    """Bills an active subscription's periods that start on or before `day`."""
    if not _billing(story):
        return
    assert b.draft is not None
    billed = {i.billed.period_start for i in b.draft.invoices if i.subscription_id == story.sub.id}
    while story.period(story.periods)[0] <= day:
        story.periods += 1
        k = story.periods - 1
        if story.plan_at(story.period(k)[0]).overage_unit_price_cents:
            b.record_usage(story, k - 1)
        if story.period(k)[0] not in billed:
            b.bill_period(story, k)
    b.settle_subscription_row(story)


def _moment(stamp: str) -> datetime:
    return datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)


def _check_outcome(outcome: FaultOutcome, overcharges: dict[str, int]) -> None:
    """A builder bug must fail loudly at generation, never yield a scenario with a wrong truth."""
    if outcome.label == "no_error":
        if overcharges:
            raise AssertionError(f"no_error scenario has overcharges {overcharges}")
        return
    if not overcharges or any(cents <= 0 for cents in overcharges.values()):
        raise AssertionError(f"{outcome.label}: overcharges must be positive, got {overcharges}")


def reference_solution(
    b: WorldBuilder,
    outcome: FaultOutcome,
    overcharges: dict[str, int],
    disputed: tuple[str, ...] = (),
) -> tuple[ToolCall, ...]:
    """What a careful agent does: look, verify, credit each overcharge exactly, report. A
    `no_error` verdict also reads what the complaint disputes (rewards/README.md G11)."""
    customer = b.customer.id
    calls = [
        call("get_customer", customer_id=customer),
        call("list_invoices", customer_id=customer),
    ]
    read = [invoice.id for invoice in outcome.focus]
    rules = rule_text(b, outcome, overcharges)  # the rule the engine applied, per invoice
    summary = f"{outcome.summary} {rules}" if rules else outcome.summary
    cited = [i for i in disputed if i in read and i in summary]
    if outcome.label == "no_error" and disputed and not cited:
        if disputed[0] not in read:
            read.append(disputed[0])
        summary += _disputed_fact(b, disputed[0])  # G11.3: a fact of it, cited
    for invoice_id in read:
        calls.append(call("get_invoice", invoice_id=invoice_id))
    calls.append(call("get_subscription_timeline", subscription_id=outcome.story.sub.id))
    calls.extend(outcome.evidence)
    reason = f"Verified {outcome.label.replace('_', ' ')}"
    for invoice_id, cents in overcharges.items():
        calls.append(
            call(
                "draft_credit_note",
                invoice_id=invoice_id,
                amount=format_cents(cents),
                reason=reason,
            )
        )
    affected = [
        {"invoice_id": invoice_id, "overcharge_amount": format_cents(cents)}
        for invoice_id, cents in overcharges.items()
    ]
    calls.append(
        call(
            "submit_findings",
            root_cause=outcome.label,
            affected_invoices=affected,
            summary=summary,
        )
    )
    return tuple(calls)


def _disputed_fact(b: WorldBuilder, invoice_id: str) -> str:
    """A sentence citing the disputed invoice's total and period (rewards/README.md G11.3:
    a `no_error` verdict cites a fact of the disputed invoice's own record)."""
    assert b.draft is not None
    invoice = b.draft.invoice(invoice_id)
    billed = invoice.billed
    total = format_cents(invoice.billed_amounts().total_cents)
    return (
        f" {invoice_id}, the invoice disputed, totals {total} {billed.currency} for"
        f" {billed.period_start.isoformat()} to {billed.period_end.isoformat()}, as billed"
        " from its recorded inputs."
    )
