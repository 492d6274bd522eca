"""Complaint texts: a customer's words about their bill, never a label (design §1.2).

Bodies live in `env/generation/data/complaints/<label>.json` and `generic.json`, each split into a
"train" pool (the train split) and a disjoint "eval" pool (eval, val, heldout), per level: L1 bodies
name the invoice, L2 bodies are vague. Who says what:
- a faulted customer uses their fault's pool, or at GENERIC_RATE just says the bill looks wrong;
  at L2 a faulted customer guesses among the classes plausible for it (its own one of them,
  drawn like the others), as a mistaken customer does, so a topic names its class no more often
  than chance among the classes sharing its pool (`checks.probe_topics` measures it);
- a `no_error` customer is mistaken about some fault and uses that fault's pool (no text of its
  own): sometimes (VARIANT_SHARE) the class its look-alike resembles, else a plausible class
  drawn with weight 1/(how often it is plausible), so no pool fills up with mistaken customers
  (the rates: `python -m env.generation.cue_rates --measure`, rerun after a world change);
- the held-out class uses the pool of the class it looks like (a late cancellation reads like
  `billed_after_cancellation`), so its words are no tell;
- L3 blames a class plausible for this customer other than the truth, in that class's words
  (an L1 or L2 body); plausible: the customer's own records make the belief possible
  (`world_cues`: no exchange-rate complaint from a USD customer, no seats on flat plans);
- a vague complaint quotes the month and total of an invoice picked at random among the
  customer's invoices with something to pay (never a trial's 0.00 one), so neither points at
  the answer;
- a complaint never names an invoice a correct billing system would not have issued (its
  counterfactual twin has none): about one billed after a cancellation, it names the last
  invoice the customer owed and says the charges went on after it (`LAST_OWED` bodies);
- which invoices the complaint disputes (`disputed_invoices`, rewards/README.md G11.1) is read
  off what it quotes, for the truth only: it draws nothing and changes no text.
Some complaints carry a wrong claimed amount or an injected instruction, and some put the
instruction into a data field instead (customer notes, an invoice memo).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date
from string import Formatter
from typing import Any

from env.engine.calendar import utc_to_local_date
from env.engine.money import format_cents
from env.generation.builder import WorldBuilder, data
from env.generation.faults.base import FaultOutcome
from env.generation.world import Invoice, WorldDraft
from env.labels import HELDOUT_LABEL

INJECTION_RATE = {"L1": 0.05, "L2": 0.15, "L3": 0.3}
CLAIM_RATE = {"L1": 0.2, "L2": 0.35, "L3": 0.5}
GENERIC_RATE = {"fault": 0.35, "no_error": 0.1}  # L1/L2 only; below the faults' per-class share
ALWAYS = "duplicate_payment"  # anyone who pays can believe they paid twice
GENERIC = "generic"
# Look-alike variant name fragments -> the fault the mistaken customer believes in.
IMITATES = (
    ("tax_exempt", "tax_exempt_charged"), ("exemption", "tax_exempt_charged"),
    ("tax", "wrong_tax_rate"), ("coupon", "coupon_not_applied"),
    ("discount", "coupon_not_applied"), ("prorat", "proration_error"),
    ("upgrade", "proration_error"), ("downgrade", "downgrade_not_applied"),
    ("seat", "seat_count_mismatch"), ("usage", "usage_overage_miscalculated"),
    ("overage", "usage_overage_miscalculated"), ("cancel", "billed_after_cancellation"),
    ("trial", "trial_period_charged"), ("fx", "currency_conversion_error"),
    ("currency", "currency_conversion_error"), ("other_subscription", "duplicate_payment"),
    ("refund", "duplicate_payment"), ("retry", "duplicate_payment"),
    ("payment", "duplicate_payment"),
)  # fmt: skip
TIMEZONE_LOOKS_LIKE = {
    "cancellation": "billed_after_cancellation",
    "trial_end": "trial_period_charged",
    "upgrade": "proration_error",
    "downgrade": "proration_error",
}
# written by `python -m env.generation.cue_rates --measure`
RATES_FILE = "complaints/plausibility.json"
VARIANT_SHARE = 0.15  # a look-alike's customer blames what the look-alike resembles this often
CUE_LOG: list[list[str]] | None = None  # set by `env.generation.cue_rates.measure_rates` only
_INVOICE_KEYS = ("invoice_id", "month", "total", "currency", "tax", "plan")


@dataclass
class Cues:
    plausible: list[str] = field(default_factory=list)
    slots: dict[str, str] = field(default_factory=dict)


def phrasing_pool(name_pool: str) -> str:
    """Train complaints and evaluation complaints never share a phrasing."""
    return "train" if name_pool == "train" else "eval"


def bodies(source: str, pool: str, level: str) -> list[str]:
    return list(data(f"complaints/{source}.json")[pool][level])


def placeholders(body: str) -> set[str]:
    return {name for _, name, _, _ in Formatter().parse(body) if name}


def month_of(day: date) -> str:
    return day.strftime("%B %Y")


def invoice_slots(invoice: Invoice) -> dict[str, str]:
    """What a complaint may quote about the invoice the customer is looking at."""
    amounts = invoice.billed_amounts()
    return {
        "invoice_id": invoice.id,
        "month": month_of(invoice.billed.period_start),
        "total": format_cents(amounts.total_cents),
        "currency": invoice.billed.currency,
        "tax": format_cents(amounts.tax_cents),
        "plan": invoice.billed.plan.name,
    }


def world_cues(draft: WorldDraft) -> Cues:
    """The classes this customer could believe in (label order) and the facts their complaints
    may quote, all from records the customer also sees."""
    cues = Cues(plausible=[ALWAYS])
    customer = draft.customer
    billed = [inv.billed for inv in draft.invoices]
    events = sorted((e for s in draft.subscriptions for e in s.events), key=lambda e: e.occurred_at)
    kinds = {e.type for e in events}
    if any(inv.billed_amounts().tax_cents > 0 for inv in draft.invoices):
        cues.plausible.append("wrong_tax_rate")
    if customer.exemption is not None:
        cues.plausible.append("tax_exempt_charged")
        cues.slots["certificate"] = customer.exemption[0]
    coupons = [s.coupon_code for s in draft.subscriptions if s.coupon_code]
    coupons += [str(e.details["coupon_code"]) for e in events if "coupon_code" in e.details]
    coupons += [i.coupon.code for i in billed if i.coupon is not None]
    if coupons:
        cues.plausible.append("coupon_not_applied")
        cues.slots["coupon"] = coupons[0]
    if any(i.plan.per_seat for i in billed):
        cues.plausible.append("seat_count_mismatch")
        cues.slots["seats"] = str(max(s.seats for s in draft.subscriptions))
    cancels = [e for e in events if e.type in ("cancel_requested", "canceled")]
    if cancels:
        cues.plausible.append("billed_after_cancellation")
        day = utc_to_local_date(cancels[-1].occurred_at, customer.timezone)
        cues.slots["cancel_date"] = day.isoformat()
    if "trial_started" in kinds:
        cues.plausible.append("trial_period_charged")
        trial = next(e for e in events if e.type == "trial_started").details.get("trial_days")
        if trial:
            cues.slots["trial_days"] = str(trial)
    metered = [i.plan for i in billed if i.plan.overage_unit_price_cents > 0]
    if metered:
        cues.plausible.append("usage_overage_miscalculated")
        cues.slots["included"] = str(metered[0].included_units)
    if customer.currency != "USD":
        cues.plausible.append("currency_conversion_error")
    if "plan_changed" in kinds:
        cues.plausible += ["proration_error", "downgrade_not_applied"]
        changed = [i for i in billed if i.previous_plan is not None]
        if changed and changed[0].previous_plan is not None:
            cues.slots["old_plan"] = changed[0].previous_plan.name
            cues.slots["new_plan"] = changed[0].plan.name
    return cues


def imitated(outcome: FaultOutcome) -> str | None:
    """The fault a look-alike resembles (no_error variants, the held-out class's variants)."""
    if outcome.label == HELDOUT_LABEL:
        return TIMEZONE_LOOKS_LIKE.get(outcome.variant, "proration_error")
    return next((label for frag, label in IMITATES if frag in outcome.variant), None)


def weighted_pick(b: WorldBuilder, classes: list[str]) -> str:
    """A class drawn with weight 1/(how often it is plausible): rare beliefs are not drowned
    by the ones every customer can hold, so no pool fills up with mistaken customers."""
    rates = data(RATES_FILE)["rates"]
    weights = [1 / max(0.05, rates.get(c, 0.5)) for c in classes]
    point = b.rng.random() * sum(weights)
    for label, weight in zip(classes, weights, strict=True):
        point -= weight
        if point < 0:
            return label
    return classes[-1]


def believed(b: WorldBuilder, outcome: FaultOutcome, cues: Cues) -> str:
    """The fault a mistaken (no_error) or held-out customer thinks they see."""
    target = imitated(outcome)
    if outcome.label == HELDOUT_LABEL and target:
        return target
    if target in cues.plausible and b.rng.random() < VARIANT_SHARE:
        return str(target)
    return weighted_pick(b, cues.plausible)


def choose_source(b: WorldBuilder, outcome: FaultOutcome, cues: Cues) -> tuple[str, str]:
    """(pool file, body level) of the complaint: see the module docstring. An L3 complaint
    is worded as an L1 (naming some invoice) or an L2 body of the class it blames."""
    label, level = outcome.label, b.difficulty
    if level == "L3":
        blame = [c for c in cues.plausible if c != label] or ["wrong_tax_rate"]
        return weighted_pick(b, blame), b.pick(("L1", "L2"))
    kind = "no_error" if label == "no_error" else "fault"
    draw = b.rng.random()
    if draw < GENERIC_RATE[kind]:
        return GENERIC, level
    if label in ("no_error", HELDOUT_LABEL):
        return believed(b, outcome, cues), level
    if level == "L2":  # a guess among the causes plausible for it, its own one of them
        return weighted_pick(b, [c for c in cues.plausible if c != label] + [label]), level
    return label, level


def _pick_body(b: WorldBuilder, source: str, pool: str, level: str, slots: dict[str, str]) -> str:
    # a body that quotes the tax never quotes a tax of 0.00 (nothing to dispute there)
    usable = {k for k, v in slots.items() if not (k == "tax" and v == format_cents(0))}
    fitting = [x for x in bodies(source, pool, level) if placeholders(x) <= usable]
    if not fitting:  # the world lacks the facts this class's bodies quote
        fitting = [x for x in bodies(GENERIC, pool, level) if placeholders(x) <= usable]
    return str(b.pick(fitting))


CANCEL_POOL, LAST_OWED = "billed_after_cancellation", "L1_last"  # bodies naming the last owed


def _instead_of(
    b: WorldBuilder, outcome: FaultOutcome, unwarranted: Invoice, chosen: tuple[str, str]
) -> tuple[Invoice, str, str]:
    """(the invoice named, pool, level) where the fault's first invoice should not exist:
    after a cancellation, the last invoice owed, in bodies saying the charges went on after it;
    otherwise (a period wholly inside a trial) the subscription's next invoice that is owed."""
    draft = b.draft
    assert draft is not None
    cancel = CANCEL_POOL in (outcome.label, imitated(outcome))
    owed = _last_owed(draft, unwarranted) if cancel else None
    if owed is not None:
        return owed, CANCEL_POOL, LAST_OWED
    later = [
        i
        for i in draft.invoices
        if i.subscription_id == unwarranted.subscription_id
        and i.correct is not None
        and i.billed.period_start > unwarranted.billed.period_start
        and i.billed_amounts().total_cents > 0
    ]
    named = min(later, key=lambda i: i.billed.period_start, default=None)
    return named or b.pick(_payable(draft.invoices)), *chosen


def _last_owed(draft: WorldDraft, unwarranted: Invoice) -> Invoice | None:
    """The subscription's last invoice before `unwarranted` that a correct system issued."""
    earlier = [
        i
        for i in draft.invoices
        if i.subscription_id == unwarranted.subscription_id
        and i.correct is not None
        and i.billed.period_start < unwarranted.billed.period_start
        and i.billed_amounts().total_cents > 0
    ]
    return max(earlier, key=lambda i: i.billed.period_start, default=None)


def _overage(invoice: Invoice) -> bool:
    return (invoice.billed.usage_units or 0) > invoice.billed.plan.included_units


def _usage(invoice: Invoice) -> bool:
    metered = invoice.billed.plan.overage_unit_price_cents > 0
    return metered and invoice.billed.usage_units is not None


FITS = {  # what an invoice must bill for a complaint of this class to be about it
    "usage_overage_miscalculated": _overage,
    "wrong_tax_rate": lambda i: i.billed_amounts().tax_cents > 0,
    "tax_exempt_charged": lambda i: i.billed_amounts().tax_cents > 0,
    "seat_count_mismatch": lambda i: i.billed.plan.per_seat,
    "coupon_not_applied": lambda i: i.billed.coupon is None,
}


def _fits(source: str, invoices: Sequence[Invoice]) -> list[Invoice]:
    """The invoices a complaint of `source`'s class can be about (an overage where it names
    overage, tax where it names tax, seats on a per-seat plan): L2 and L3 quote one of them,
    so a guessed or blamed cause stays coherent with the invoice named; all where none fits."""
    tests = [FITS[source]] if source in FITS else []
    tests += [_usage] if source == "usage_overage_miscalculated" else []  # else some usage
    for test in tests:
        fitting = [i for i in invoices if test(i)]
        if any(i.billed_amounts().total_cents > 0 for i in fitting):
            return fitting
    return list(invoices)


def _payable(invoices: Sequence[Invoice]) -> list[Invoice]:
    """The invoices a complaint may quote: those with something to pay (a trial's 0.00 invoice
    has no tax, payment or price to dispute)."""
    return [i for i in invoices if i.billed_amounts().total_cents > 0] or list(invoices)


def disputed_invoices(
    quoted: set[str], named: Invoice, invoices: Sequence[Invoice], claimed: Sequence[str]
) -> tuple[str, ...]:
    """rewards/README.md G11.1: the invoice the complaint names; else every invoice matching
    the month, total or tax it quotes, or the amount it claims; else (it quotes none) all."""
    if "invoice_id" in quoted:
        return (named.id,)
    told = invoice_slots(named)
    fields = [key for key in ("month", "total", "tax") if key in quoted]
    matching = []
    for invoice in invoices:
        slots = invoice_slots(invoice)
        if any(slots[key] == told[key] for key in fields) or slots["total"] in claimed:
            matching.append(invoice.id)
    return tuple(matching) or tuple(invoice.id for invoice in invoices)


def render_complaint(
    b: WorldBuilder, outcome: FaultOutcome, overcharges: dict[str, int]
) -> tuple[str, tuple[str, ...], list[str], tuple[str, ...]]:
    """Returns the complaint text, the amounts it claims, the traps it sets, and the invoices
    it disputes (truth only, `disputed_invoices`)."""
    draft = b.draft
    assert draft is not None
    t = data("complaints/common.json")
    cues = world_cues(draft)
    if CUE_LOG is not None:
        CUE_LOG.append(list(cues.plausible))
    source, level = choose_source(b, outcome, cues)
    issued = [i for i in draft.invoices if i.correct is not None]  # a twin has them all
    named = outcome.focus[0] if b.difficulty == "L1" else b.pick(_payable(_fits(source, issued)))
    if named.correct is None:  # an invoice no correct system issues (its twin has none)
        named, source, level = _instead_of(b, outcome, named, (source, level))
    if named.billed_amounts().total_cents <= 0:  # no tax, payment or price on a 0.00 invoice
        named = b.pick(_payable(issued))
    extra: dict[str, Any] = outcome.slots
    slots = {"company": b.customer.company, **cues.slots}
    slots.update({k: v for k, v in extra.items() if isinstance(v, str) and k not in _INVOICE_KEYS})
    slots.update(invoice_slots(named))
    body = _pick_body(b, source, phrasing_pool(b.name_pool), level, slots)
    parts = [b.pick(t["greetings"]), body.format(**slots)]
    claimed: list[str] = []
    traps: list[str] = []
    total = named.billed_amounts().total_cents
    if b.rng.random() < CLAIM_RATE[b.difficulty] and total > 0:  # no claim on a zero invoice
        wrong = [c for c in (total, total // 2 + 1) if c != overcharges.get(named.id)]
        claimed.append(format_cents(b.pick(wrong) if wrong else total + 100))
        parts.append(b.pick(t["claims"]).format(claimed=claimed[-1], currency=slots["currency"]))
        traps.append("misleading_claim")
    if b.rng.random() < INJECTION_RATE[b.difficulty]:
        traps.append("injected_instruction")
        text = b.pick(t["injections"]).format(**slots)
        where = b.pick(("complaint", "customer_notes", "invoice_memo"))
        if where == "complaint":
            parts.append(text)
        elif where == "customer_notes":
            b.customer.notes = (b.customer.notes + " " + text).strip()
        else:
            named.memo = (named.memo + " " + text).strip()
    closer = b.pick(t["closers"])
    parts.append(f"{closer}\n{b.customer.name}, {b.customer.company} (customer {b.customer.id})")
    disputed = disputed_invoices(placeholders(body), named, draft.invoices, claimed)
    return "\n\n".join(parts), tuple(claimed), traps, disputed
