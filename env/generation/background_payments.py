"""Payment-level background (design §1.2): a second charge refunded or made good by a credit
note, instalments, a goodwill credit, memos, notes and spare fx days, drawn at the same rates in
every class on invoices the fault leaves alone. Split from `env.generation.background`, whose
`FEATURE_RATE` sets the rates."""

from __future__ import annotations

from datetime import datetime, timedelta

from env.engine.calendar import days, utc_to_local_date
from env.generation.background import draw
from env.generation.builder import WorldBuilder
from env.generation.changes import earlier_credit
from env.generation.lookalikes_pay import (
    credited_second_charge,
    kept_reach,
    kept_second_charge,
)
from env.generation.world import Invoice

MEMOS = (
    "PO {n} - please quote on remittance",
    "Cost centre {n}",
    "Billing contact changed to accounts payable",
    "Ref. contract {n}",
)
NOTES = (
    "Prefers invoices by email to the finance team.",
    "Annual budget review every {month}.",
    "Account moved from the self-serve desk in {month}.",
    "Pays by bank debit; card kept as backup.",
)


def decorate_payments(b: WorldBuilder, avoid: list[Invoice]) -> list[str]:
    """Payment-level look-alikes on invoices the fault does not touch."""
    assert b.draft is not None
    features = []
    safe = [
        inv
        for inv in b.draft.invoices
        if inv not in avoid
        and inv.correct == inv.billed
        and inv.billed_amounts().total_cents > 0
        and any(p.invoice_id == inv.id and p.status == "succeeded" for p in b.draft.payments)
    ]
    # a second charge and its refund take days: not on the latest invoices, whose customer
    # writes within days (`generator.DISPUTE_DAYS`)
    settled = [inv for inv in safe if inv.issued_at <= _days_before_latest(b, SETTLE_DAYS)]
    if settled and draw(b, "refunded_second_charge"):
        for invoice in b.rng.sample(settled, min(len(settled), b.pick((1, 1, 2, 3)))):
            first = next(
                p
                for p in b.draft.payments
                if p.invoice_id == invoice.id and p.status == "succeeded"
            )
            again = b.pay(invoice, after=first.paid_at, status="succeeded")
            assert again is not None
            b.refund(again, again.amount_cents)
        features.append("refunded_second_charge")
    # paid in two instalments that add up to the total: on any invoice, faulted ones too, but
    # never the one whose second charge is the fault
    splittable = [
        inv
        for inv in b.draft.invoices
        if (inv not in avoid or b.label != "duplicate_payment")
        and inv.billed_amounts().total_cents > 0
        and any(p.invoice_id == inv.id and p.status == "succeeded" for p in b.draft.payments)
    ]
    if splittable and draw(b, "split_payment"):
        for invoice in b.rng.sample(splittable, min(len(splittable), b.pick((1, 2, 2, 3)))):
            _split(b, invoice)
        features.append("split_payment")
    credited_ids = {n.invoice_id for n in b.draft.credit_notes}  # a trial's credit came first
    safe = [inv for inv in safe if inv.id not in credited_ids]
    reach = kept_reach(b)  # what a kept balance pays is charged less: no credit sized on more
    credited = credited_second_charge(b, [i for i in safe if i.id not in reach])
    if credited is not None:
        safe.remove(credited)
        features.append("credited_second_charge")
    kept = kept_second_charge(b, safe, avoid)  # a second charge kept as account credit
    if kept is not None:
        safe.remove(kept)
        features.append("kept_second_charge")
    if safe and draw(b, "goodwill_credit"):
        invoice = b.pick(safe)
        total = invoice.billed_amounts().total_cents
        cents = min(total, max(100, total * b.rng.randint(5, 20) // 100))  # never beyond it
        earlier_credit(b, invoice, cents, invoice.issued_at)
        features.append("goodwill_credit")
    if b.draft.invoices and draw(b, "memo"):
        invoice = b.pick(b.draft.invoices)
        if not invoice.memo:
            invoice.memo = b.pick(MEMOS).format(n=b.rng.randint(1000, 99999))
            features.append("memo")
    if b.customer.currency != "USD":  # the rate table holds more days than the invoices use
        # up to the day after the last issue: the dispute opens two days after it at the
        # earliest, and no rate is published after it (design §1.1, the world's now)
        first_start = min(inv.billed.period_start for inv in b.draft.invoices)
        last_issue = max(
            utc_to_local_date(inv.issued_at, b.customer.timezone) for inv in b.draft.invoices
        )
        span = max(1, (last_issue - first_start).days + 1)
        for _ in range(b.rng.randint(2, 12) - extra_fx_days(b)):
            b.fx_on(first_start + days(b.rng.randint(0, span)))
    if draw(b, "notes") and not b.customer.notes:
        month = b.pick(("January", "April", "July", "October"))
        b.customer.notes = b.pick(NOTES).format(month=month)
        features.append("notes")
    return features


SETTLE_DAYS = 8  # a refunded second charge sits on an invoice at least this old


def _days_before_latest(b: WorldBuilder, n: int) -> str:
    """The UTC stamp `n` days before the latest invoice's issue."""
    assert b.draft is not None
    latest = max(inv.issued_at for inv in b.draft.invoices)
    moment = datetime.strptime(latest, "%Y-%m-%dT%H:%M:%SZ") - timedelta(days=n)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def extra_fx_days(b: WorldBuilder) -> int:
    """Days the rate table holds that no invoice's correct inputs use (a fault's stale rate,
    a look-alike's day): the background tops the table up to the same count in every class."""
    assert b.draft is not None
    used = {inv.correct.fx_rate_date.isoformat() for inv in b.draft.invoices if inv.correct}
    return sum(day not in used for day, _, _, _ in b.draft.fx_rates)


def _split(b: WorldBuilder, invoice: Invoice) -> None:
    """The invoice's one successful payment becomes two instalments adding up to the same."""
    assert b.draft is not None
    paid = [p for p in b.draft.payments if p.invoice_id == invoice.id and p.status == "succeeded"]
    if len(paid) == 1:
        first = paid[0]
        part = first.amount_cents * b.rng.randint(20, 80) // 100
        rest = b.pay(invoice, after=first.paid_at, status="succeeded")
        assert rest is not None
        rest.amount_cents, first.amount_cents = first.amount_cents - part, part
