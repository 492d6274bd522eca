"""The nine BillSleuth tools (design §3), as methods on one class over an episode's database.

A tool's docstring is its prompt: the model reads the first paragraph and the `Args:` lines
(the JSON schema is generated from the signature and docstring by `env.tool_specs`). Only
`draft_credit_note` writes. Methods raise `ToolError`s; `env.tool_specs.dispatch` turns them
into `{"error": ...}` results so that no tool ever raises into the agent loop.
"""

from __future__ import annotations

import itertools
import re
import sqlite3
from dataclasses import replace
from typing import Annotated, Any

from pydantic import BeforeValidator, ValidationError

from env.engine.billing import BillingError, BillingInputs, PlanTerms, compute_invoice
from env.engine.money import BadAmount, format_cents, parse_amount, parse_rate
from env.engine.records import inputs_from_json, inputs_to_dict
from env.findings import AffectedInvoice, Findings, amount_text
from env.labels import RootCause
from env.tool_errors import InvalidArgument, Refused
from env.tool_lookups import Lookups, parse_day

READ_TOOLS = (
    "get_customer",
    "list_invoices",
    "get_invoice",
    "list_payments",
    "get_subscription_timeline",
    "get_tax_rate",
    "recompute_invoice",
)
WRITE_TOOLS = ("draft_credit_note",)
TERMINAL_TOOLS = ("submit_findings",)
TOOL_NAMES = READ_TOOLS + WRITE_TOOLS + TERMINAL_TOOLS
# Plain decimals only: "1e-999999" is a valid Decimal whose exact arithmetic runs for minutes.
_PLAIN_RATE = re.compile(r"^-?[0-9]{1,6}(\.[0-9]{1,40})?$")
# A credit amount as text, or a JSON number read exactly (the schema still says string).
AmountText = Annotated[str, BeforeValidator(amount_text)]
_INSERT_NOTE = "INSERT INTO credit_notes VALUES (?, ?, ?, ?, ?, 'draft', ?, ?)"
_EPISODES = itertools.count()


class BillingTools(Lookups):
    """The agent's only window on the episode database."""

    def __init__(self, connection: sqlite3.Connection, *, episode_id: str, now: str) -> None:
        super().__init__(connection)
        self._episode_id = episode_id
        self._now = now  # the dispute's opening time: credit notes are stamped with it
        self.findings: Findings | None = None
        # Trap: connections are lent again (env.connection_pool). An INSERT prepared in an
        # earlier episode runs before SQLite reloads the schema for the new image and lays index
        # cells out differently (same rows, other bytes). A comment of its own gives each
        # episode its own statement, prepared (and the schema reloaded) on its first note.
        self._insert_note = f"{_INSERT_NOTE} -- episode {next(_EPISODES)}"

    def get_customer(self, customer_id: str) -> dict[str, Any]:
        """Look up a customer: timezone, billing currency, tax jurisdiction, exemption certificate.

        Billing periods are calendar dates in the customer's timezone; event timestamps are UTC.
        A certificate exempts invoices issued in [valid_from, valid_until), taxed in its
        jurisdiction. Invoices issued before tax_jurisdiction_since are taxed in
        previous_tax_jurisdiction. A subscription's invoices issued in fx_rate_lock's
        [issued_from, issued_until) convert at its rate_date's USD rate.
        account_credit: an overpayment kept on account, applied to later invoices.
        seat_commitment: periods starting in [periods_from, periods_until) bill at least its seats.
        Call this first with the id from the complaint, then `list_invoices`.

        Args:
            customer_id: Customer id, e.g. "CUS-4Q2P9A".
        """
        return self.customer_record(customer_id)

    def list_invoices(
        self,
        customer_id: str,
        status: str | None = None,
        period_from: str | None = None,
        period_to: str | None = None,
    ) -> dict[str, Any]:
        """List a customer's invoices (summaries) ordered by period start.

        Each item has invoice_id, subscription_id, period_start, period_end (exclusive),
        issued_at (UTC), currency, total and status. Call `get_invoice` for lines and inputs.

        Args:
            customer_id: Customer id, e.g. "CUS-4Q2P9A".
            status: Only invoices with this status: "paid", "open" or "void".
            period_from: Only invoices whose period starts on or after this date (YYYY-MM-DD).
            period_to: Only invoices whose period starts on or before this date (YYYY-MM-DD).
        """
        return self.invoice_summaries(customer_id, status, period_from, period_to)

    def get_invoice(self, invoice_id: str) -> dict[str, Any]:
        """Get one invoice: billing inputs, lines, subtotal, discount, tax, total, paid, credited.

        balance_applied: the part of amount_paid drawn from account credit. `billing_inputs`
        are exactly what the invoice was computed from (plan and unit price, seats, proration
        dates, coupon, usage units, tax jurisdiction and rate, fx rate).
        Check them against `get_subscription_timeline`, `get_tax_rate` and `get_customer`.

        Args:
            invoice_id: Invoice id, e.g. "INV-7F3K2Q".
        """
        return self.invoice_detail(invoice_id)

    def list_payments(self, customer_id: str, invoice_id: str | None = None) -> dict[str, Any]:
        """List a customer's payments: id, invoice, amount, currency, paid_at (UTC), method, status.

        A payment of method account_credit is drawn from the kept overpayment applied_from names.

        Args:
            customer_id: Customer id, e.g. "CUS-4Q2P9A".
            invoice_id: Only payments for this invoice, e.g. "INV-7F3K2Q".
        """
        return self.payment_list(customer_id, invoice_id)

    def get_subscription_timeline(self, subscription_id: str) -> dict[str, Any]:
        """Get a subscription: plan terms and prices, seats, coupon terms, usage per period, events.

        Events (created, trial_started, trial_ended, plan_changed, seats_changed,
        plan_change_withdrawn, plan_change_start_moved, coupon_applied, coupon_removed,
        cancel_requested, canceled, renewed, reactivated, exemption_withheld) are ordered, with
        UTC timestamps: convert them to the customer's timezone before comparing with billing
        periods. A coupon applies to periods starting from valid_from to valid_until inclusive,
        within its duration. exemption_withheld: invoices issued in [issued_from, issued_until)
        are taxed. place_of_supply: the subscription's own site; invoices issued before until
        (null: still there) are taxed in its jurisdiction.

        Args:
            subscription_id: Subscription id, e.g. "SUB-8K2M4T".
        """
        return self.timeline(subscription_id)

    def get_tax_rate(self, jurisdiction: str, date: str) -> dict[str, Any]:
        """Get the tax rate in force in a jurisdiction on a date, with its effective window.

        Args:
            jurisdiction: Tax jurisdiction code as on the customer record, e.g. "US-CA" or "DE".
            date: The day to look up (YYYY-MM-DD), e.g. the invoice's period_start.
        """
        return self.tax_rate_on(jurisdiction, parse_day(date, "date"))

    def recompute_invoice(
        self,
        invoice_id: str,
        plan_id: str | None = None,
        seats: int | None = None,
        tax_rate: str | None = None,
        tax_exempt: bool | None = None,
        coupon_code: str | None = None,
        usage_units: int | None = None,
        included_units: int | None = None,
        fx_rate: str | None = None,
        fx_rate_date: str | None = None,
        period_start: str | None = None,
        period_end: str | None = None,
        proration_start: str | None = None,
        proration_end: str | None = None,
        plan_change_date: str | None = None,
    ) -> dict[str, Any]:
        """Recompute an invoice with the billing engine from its recorded inputs, with overrides.

        Without overrides it reproduces the billed invoice. Substitute the input you verified
        elsewhere; `difference` = billed_total - recomputed total is the overcharge (in the
        invoice currency) when positive. `assumptions` echoes every input used.

        Args:
            invoice_id: Invoice id, e.g. "INV-7F3K2Q".
            plan_id: Bill this plan instead (its price in force at period start), e.g. "PLN-BASIC".
            seats: Bill this many seats.
            tax_rate: Use this tax rate, a decimal fraction such as "0.0825".
            tax_exempt: true to bill without tax.
            coupon_code: Apply this coupon, e.g. "WELCOME20".
            usage_units: Use this many usage units for the period.
            included_units: Use this many included (free) usage units.
            fx_rate: Use this USD to invoice-currency rate, e.g. "0.9214".
            fx_rate_date: Use the recorded USD rate of this date (YYYY-MM-DD).
            period_start: Billing period start (YYYY-MM-DD).
            period_end: Billing period end, exclusive (YYYY-MM-DD).
            proration_start: First charged day inside the period (YYYY-MM-DD).
            proration_end: Day the charge stops, exclusive (YYYY-MM-DD).
            plan_change_date: Local date the plan change took effect (YYYY-MM-DD).
        """
        row = self.invoice_row(invoice_id)
        recorded = inputs_from_json(row["inputs"])
        given = {
            "plan_id": plan_id,
            "seats": seats,
            "tax_rate": tax_rate,
            "tax_exempt": tax_exempt,
            "coupon_code": coupon_code,
            "usage_units": usage_units,
            "included_units": included_units,
            "fx_rate": fx_rate,
            "fx_rate_date": fx_rate_date,
            "period_start": period_start,
            "period_end": period_end,
            "proration_start": proration_start,
            "proration_end": proration_end,
            "plan_change_date": plan_change_date,
        }
        overrides = {name: value for name, value in given.items() if value is not None}
        inputs = self._apply_overrides(recorded, overrides)
        try:
            amounts = compute_invoice(inputs)
        except BillingError as exc:
            raise InvalidArgument(f"cannot bill with these overrides: {exc}") from None
        billed = row["total_cents"]
        return {
            "invoice_id": invoice_id,
            "currency": inputs.currency,
            "overrides_applied": sorted(overrides),
            "assumptions": inputs_to_dict(inputs),
            **self.amounts_view(amounts, inputs),
            "billed_total": format_cents(billed),
            "difference": format_cents(billed - amounts.total_cents),
        }

    def _apply_overrides(self, recorded: BillingInputs, given: dict[str, Any]) -> BillingInputs:
        changes: dict[str, Any] = {}
        for name in ("seats", "usage_units", "included_units"):
            if name in given and given[name] < 0:
                raise InvalidArgument(f"{name} must be 0 or more, got {given[name]}")
        for name in (
            "period_start",
            "period_end",
            "proration_start",
            "proration_end",
            "plan_change_date",
        ):
            if name in given:
                changes[name] = parse_day(given[name], name)
        start = changes.get("period_start", recorded.period_start)
        if "plan_id" in given:
            changes["plan"] = self.plan_terms(given["plan_id"], start)
            changes["scheduled_from_plan"] = _used_on(recorded, changes["plan"])
        if "included_units" in given:
            plan = changes.get("plan", recorded.plan)
            changes["plan"] = replace(plan, included_units=given["included_units"])
        if "seats" in given:
            changes["seats"] = given["seats"]
        if "usage_units" in given:
            changes["usage_units"] = given["usage_units"]
        if "tax_rate" in given:
            changes["tax_rate"] = _parse_tax_rate(given["tax_rate"])
        if "tax_exempt" in given:
            changes["tax_exempt"] = given["tax_exempt"]
        if "coupon_code" in given:
            changes["coupon"] = self.coupon_terms(given["coupon_code"])
        if "fx_rate" in given and "fx_rate_date" in given:
            raise InvalidArgument("give either fx_rate or fx_rate_date, not both")
        if "fx_rate" in given:
            changes["fx_rate"] = _parse_fx_rate(given["fx_rate"])
        if "fx_rate_date" in given:
            day = parse_day(given["fx_rate_date"], "fx_rate_date")
            changes["fx_rate"] = self.fx_rate_on(recorded.currency, day)
            changes["fx_rate_date"] = day
        return recorded.with_overrides(**changes)

    def draft_credit_note(self, invoice_id: str, amount: AmountText, reason: str) -> dict[str, Any]:
        """Draft a credit note refunding part of an invoice. Credit only verified overcharges.

        Refuses amounts that are not positive, have more than two decimals, or exceed the
        invoice's uncredited total. Draft one note per overcharged invoice for exactly its
        overcharge, then call `submit_findings`.

        Args:
            invoice_id: Invoice id, e.g. "INV-7F3K2Q".
            amount: Amount in the invoice currency, two decimals, e.g. "12.40".
            reason: Short reason naming the verified root cause.
        """
        row = self.invoice_row(invoice_id)
        try:
            cents = parse_amount(amount)
        except BadAmount as exc:
            raise InvalidArgument(str(exc)) from None
        if cents <= 0:
            raise InvalidArgument("amount must be greater than 0.00")
        if not reason.strip() or len(reason) > 500:
            raise InvalidArgument("reason must be non-empty text of at most 500 characters")
        uncredited = row["total_cents"] - self.credited_cents(invoice_id)
        if cents > uncredited:
            raise Refused(
                f"amount {format_cents(cents)} exceeds the uncredited total "
                f"{format_cents(uncredited)} {row['currency']} of {invoice_id}"
            )
        note_id = f"CN-{self.credit_note_count() + 1:04d}"
        self.connection.execute(
            self._insert_note,
            (
                note_id,
                invoice_id,
                cents,
                row["currency"],
                reason.strip(),
                self._episode_id,
                self._now,
            ),
        )
        return {
            "credit_note": {
                "credit_note_id": note_id,
                "invoice_id": invoice_id,
                "amount": format_cents(cents),
                "currency": row["currency"],
                "reason": reason.strip(),
                "status": "draft",
            },
            "invoice_uncredited_total": format_cents(uncredited - cents),
        }

    def submit_findings(
        self, root_cause: RootCause, affected_invoices: list[AffectedInvoice], summary: str
    ) -> dict[str, Any]:
        """Submit your findings and end the episode. Call once, after any credit notes.

        Args:
            root_cause: The one root-cause label you verified ("no_error" if nothing is wrong).
            affected_invoices: Every overcharged invoice with its overcharge, e.g.
                [{"invoice_id": "INV-7F3K2Q", "overcharge_amount": "12.40"}]; [] for no_error.
            summary: Two or three sentences citing the tool evidence, numbers as the tools show.
        """
        if self.findings is not None:
            raise Refused("findings were already submitted; the episode is over")
        try:
            self.findings = Findings(
                root_cause=root_cause, affected_invoices=affected_invoices, summary=summary
            )
        except ValidationError as exc:
            raise InvalidArgument(f"findings refused: {_first_problem(exc)}") from None
        return {
            "status": "submitted",
            "root_cause": root_cause,
            "affected_invoices": len(affected_invoices),
        }


def _first_problem(exc: ValidationError) -> str:
    """The first validation problem as one sentence (pydantic's "Value error, " prefix off)."""
    error = exc.errors()[0]
    where = ".".join(str(part) for part in error["loc"])
    message = str(error["msg"]).removeprefix("Value error, ")
    return f"{where}: {message}" if where else message


def _parse_tax_rate(text: str) -> Any:
    if not _PLAIN_RATE.match(text.strip().removesuffix("%").strip()):
        raise InvalidArgument(f"tax_rate {text[:40]!r} is not a decimal such as '0.0825'")
    try:
        rate = parse_rate(text[:-1]) / 100 if text.strip().endswith("%") else parse_rate(text)
    except (ArithmeticError, ValueError):
        raise InvalidArgument(f"tax_rate {text[:40]!r} is not a decimal such as '0.0825'") from None
    if not 0 <= rate < 1:
        raise InvalidArgument("tax_rate must be a fraction from 0 to below 1, such as '0.0825'")
    return rate


def _parse_fx_rate(text: str) -> Any:
    if not _PLAIN_RATE.match(text.strip()):
        raise InvalidArgument(f"fx_rate {text[:40]!r} is not a decimal such as '0.9214'")
    try:
        rate = parse_rate(text)
    except (ArithmeticError, ValueError):
        raise InvalidArgument(f"fx_rate {text[:40]!r} is not a decimal such as '0.9214'") from None
    if not 0 < rate < 1000:
        raise InvalidArgument("fx_rate must be a positive decimal such as '0.9214'")
    return rate


def _used_on(recorded: BillingInputs, plan: PlanTerms) -> PlanTerms | None:
    """Another plan billed for the period leaves the previous period's usage (and a proration's
    remaining days) on the plan it was recorded on (design §1.1: usage bills on the plan it
    was used on): the recorded `scheduled_from_plan`, else the recorded plan."""
    if recorded.usage_units is None and recorded.previous_plan is None:
        return recorded.scheduled_from_plan
    used_on = recorded.scheduled_from_plan or recorded.plan
    return None if used_on.plan_id == plan.plan_id else used_on
