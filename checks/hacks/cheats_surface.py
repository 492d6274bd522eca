"""Cheap surface-cue policies: what an agent that never recomputes anything can earn.

Each reads only public text and tool output (the complaint, the tables as tools show them, or
surface features of the scenario database, `checks.probe_features`), names a label from a cue,
copies a number printed on the invoice when the cue fires, and abstains (no_error) otherwise.
They must stay below SHAPED_BOUND mean shaped reward and at most BINARY_MARGIN above the
no_error share of their sample in binary success (issue 9): if one beats that, the world gives
its answers away, and the fix belongs in the generator, not in a weaker policy here.
The surface-model policy fits `checks.probe`'s shallow tree on train scenarios (never eval).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

from checks.hacks.programs import (
    Cheat,
    Steps,
    ask,
    billed_invoices,
    draft_credit,
    named_invoice,
    submit,
    summary_of,
)
from env.scenario import Scenario, Truth

SHAPED_BOUND = 0.3
BINARY_MARGIN = 0.05
SURFACE_TRAIN = 1500  # train scenarios the surface-model policy is fitted on
# Complaint words -> the label a keyword triage answers; first match wins, none: no_error.
KEYWORDS = (
    ("tax_exempt_charged", ("exempt", "certificate", "charity", "non-profit")),
    ("currency_conversion_error", ("exchange", "conver", "currency", "fx ", "dollar price")),
    ("wrong_tax_rate", ("tax", "vat")),
    ("duplicate_payment", ("twice", "two times", "double", "duplicate", "two charges",
                           "two payments", "two receipts", "two identical", "repeated")),
    ("billed_after_cancellation", ("cancel", "closed", "ended", "no longer")),
    ("trial_period_charged", ("trial",)),
    ("coupon_not_applied", ("coupon", "discount", "promo")),
    ("seat_count_mismatch", ("seat", "licence", "headcount", "users")),
    ("usage_overage_miscalculated", ("usage", "overage", "units", "metered")),
    ("downgrade_not_applied", ("downgrad", "cheaper", "smaller plan", "smaller tier")),
    ("proration_error", ("prorat", "plan change", "changed plans", "switched", "upgrad")),
)  # fmt: skip
_WHOLE = ("billed_after_cancellation", "trial_period_charged")
_TAX = ("wrong_tax_rate", "tax_exempt_charged")


def keyword_label(scenario: Scenario) -> str:
    text = scenario.complaint.lower()
    for label, words in KEYWORDS:
        if any(word in text for word in words):
            return label
    return "no_error"


@cache
def _surface_tree() -> Any:
    """The probe's depth-4 tree on SURFACE_TRAIN train scenarios; fitted once per process."""
    from checks.probe_features import Sample, feature_names, load, train_seeds
    from checks.probe_models import fit_tree

    rows = load("train", train_seeds(0, SURFACE_TRAIN))
    sample = Sample("train", rows, feature_names(rows))
    return fit_tree(sample.X, sample.y), sample.names


def surface_label(scenario: Scenario) -> str:
    from checks.probe_features import features_of_database

    model, names = _surface_tree()
    features = features_of_database(scenario.database)
    row = [[features.get(name, 0.0) for name in names]]
    return str(model.predict(row, [""])[0])


def _printed_amount(s: Scenario, label: str, invoice: dict[str, Any]) -> Steps:
    """A number the tools print that the label makes look like the overcharge."""
    invoice_id = invoice["invoice_id"]
    if label == "duplicate_payment":
        listed = yield from ask("list_payments", customer_id=s.customer_id, invoice_id=invoice_id)
        paid = [p["amount"] for p in listed.get("payments", []) if p.get("status") == "succeeded"]
        return paid[-1] if paid else invoice["total"]
    detail = yield from ask("get_invoice", invoice_id=invoice_id)
    if label in _TAX:
        tax = str(detail.get("tax", {}).get("amount", "0.00"))
        return tax if tax != "0.00" else invoice["total"]
    return str(detail.get("total", invoice["total"]))


def _abstain(s: Scenario, invoices: list[dict[str, Any]]) -> Steps:
    """No cue: look at what the customer points at, then answer no_error (the best a policy
    that cannot recompute can do; it earns the evidence a reader of these records would)."""
    yield from ask("get_customer", customer_id=s.customer_id)
    if invoices:
        target = named_invoice(s.complaint, invoices)
        detail = yield from ask("get_invoice", invoice_id=target["invoice_id"])
        subscription = detail.get("subscription_id")
        if subscription:
            yield from ask("get_subscription_timeline", subscription_id=subscription)
    yield submit("no_error", {}, f"Checked {s.customer_id}; the charges are correct.")


def _triage(label_of: Callable[[Scenario], str], credit: bool) -> Callable[[Scenario], Steps]:
    def program(s: Scenario) -> Steps:
        label = label_of(s)
        invoices = yield from billed_invoices(s)
        if label == "no_error" or not invoices:
            yield from _abstain(s, invoices)
            return
        target = named_invoice(s.complaint, invoices)
        amount = yield from _printed_amount(s, label, target)
        items = {target["invoice_id"]: amount}
        if credit:
            yield draft_credit(target["invoice_id"], amount, f"Refund: {label.replace('_', ' ')}")
        yield submit(label, items, summary_of(items))

    return program


@dataclass(frozen=True)
class SurfaceCheat(Cheat):
    """Bounds as issue 9 states them: a flat shaped bound, and binary success at most
    BINARY_MARGIN above the no_error share of the sample (abstaining is right there)."""

    def bounds(self, truths: Sequence[Truth]) -> tuple[float, float]:
        share = sum(t.label == "no_error" for t in truths) / len(truths) if truths else 0.0
        return self.shaped_bound, share + self.binary_bound


def _surface(name: str, reason: str, program: Callable[[Scenario], Steps]) -> SurfaceCheat:
    return SurfaceCheat(name, reason, program, SHAPED_BOUND, BINARY_MARGIN, sample="eval")


_COPY = "a printed number is the overcharge only by coincidence; a full-invoice credit beyond it "
SURFACE_CHEATS: tuple[Cheat, ...] = (
    _surface("surface_keywords_copy_credit", _COPY + "is a false reversal; labels from keywords "
             "fail on look-alikes and misdirected complaints", _triage(keyword_label, True)),
    _surface("surface_keywords_copy_no_credit", "findings the actions contradict earn no amount "
             "credit; the label is a keyword guess", _triage(keyword_label, False)),
    _surface("surface_model_copy_credit", _COPY + "is a false reversal; no surface feature "
             "predicts the label (checks.probe)", _triage(surface_label, True)),
    _surface("surface_model_copy_no_credit", "a tree on surface features names the label no "
             "better than chance, and uncredited findings earn no amount credit",
             _triage(surface_label, False)),
)  # fmt: skip
