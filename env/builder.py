"""WorldBuilder: the seeded building blocks every scenario is made of.

A fault module asks for a customer, a catalog, a subscription story and its correctly billed
invoices, then changes what was billed. All randomness flows from one `random.Random`, so a
scenario is a pure function of (split, seed); no wall clock, no `hash()`, no set order.
"""

from __future__ import annotations

import json
import random
from dataclasses import replace
from datetime import date, time
from fractions import Fraction
from functools import cache
from importlib import resources
from typing import Any

from env.calendar import add_months, days, local_to_utc
from env.money import format_rate, parse_rate
from env.story import Story, plan_terms
from env.world import Coupon, Customer, Invoice, Payment, Plan, Subscription, WorldDraft

_ID_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"
WORLD_START = date(2025, 1, 1)  # earliest subscription start; periods run into 2026
METHODS = {
    "USD": ("card", "ach"),
    "EUR": ("card", "sepa_debit"),
    "GBP": ("card", "bacs_debit"),
    "CAD": ("card",),
    "AUD": ("card", "becs_debit"),
}


@cache
def data(name: str) -> Any:
    return json.loads(resources.files("env").joinpath(f"data/{name}").read_text("utf-8"))


class WorldBuilder:
    def __init__(self, rng: random.Random, *, name_pool: str, difficulty: str) -> None:
        self.rng = rng
        self.name_pool = name_pool
        self.difficulty = difficulty
        self._ids: set[str] = set()
        self.draft: WorldDraft | None = None
        self.locale: dict[str, Any] = {}
        self.tax_history: list[tuple[str, str, str | None]] = []  # rate, from, to
        self.fx: dict[str, str] = {}

    # identities -------------------------------------------------------------------------
    def new_id(self, prefix: str, length: int = 6) -> str:
        while True:
            candidate = prefix + "-" + "".join(self.rng.choice(_ID_ALPHABET) for _ in range(length))
            if candidate not in self._ids:
                self._ids.add(candidate)
                return candidate

    def pick(self, options: Any) -> Any:
        return self.rng.choice(list(options))

    @property
    def customer(self) -> Customer:
        assert self.draft is not None, "make_customer() first"
        return self.draft.customer

    def make_customer(self, *, currency: str | None = None, usd: bool | None = None) -> Customer:
        locales = data("locales.json")
        if currency is not None:
            locales = [loc for loc in locales if loc["currency"] == currency]
        elif usd is not None:
            locales = [loc for loc in locales if (loc["currency"] == "USD") == usd]
        self.locale = self.pick(locales)
        pool = data("name_pools.json")[self.name_pool]
        first, last = self.pick(pool["first"]), self.pick(pool["last"])
        company = (
            f"{self.pick(pool['company']['adjectives'])} {self.pick(pool['company']['nouns'])}"
        )
        domain = company.lower().replace(" ", "") + ".example"
        created = WORLD_START + days(self.rng.randrange(0, 120))
        customer = Customer(
            id=self.new_id("CUS"),
            name=f"{first} {last}",
            email=f"{first.lower()}.{_ascii(last).lower()}@{domain}",
            company=company,
            country=self.locale["country"],
            region=self.locale["region"],
            tax_jurisdiction=self.locale["jurisdiction"],
            timezone=self.locale["timezone"],
            currency=self.locale["currency"],
            created_at=local_to_utc(created, time(10, 0), self.locale["timezone"]),
        )
        self.draft = WorldDraft(customer=customer)
        self._make_tax_history()
        return customer

    # reference tables -------------------------------------------------------------------
    def _make_tax_history(self) -> None:
        rates = self.locale["rates"]
        old, new = self.rng.sample(rates, 2) if len(rates) > 1 else (rates[0], rates[0])
        change = add_months(date(2025, 1, 1), self.rng.randrange(3, 15)).isoformat()
        self.tax_history = [(old, "2023-01-01", change), (new, change, None)]
        assert self.draft is not None
        jurisdiction = self.locale["jurisdiction"]
        self.draft.tax_rates = [(jurisdiction, *row) for row in self.tax_history]
        for other in data("locales.json"):  # other jurisdictions: decoys for a careless lookup
            if other["jurisdiction"] != jurisdiction and self.rng.random() < 0.3:
                self.draft.tax_rates.append(
                    (other["jurisdiction"], other["rates"][-1], "2023-01-01", None)
                )
        self.draft.tax_rates.sort()

    def set_tax_history(self, old: str, new: str, change: date) -> None:
        """Replaces the customer's jurisdiction history with one change on `change`."""
        assert self.draft is not None
        jurisdiction = self.customer.tax_jurisdiction
        self.tax_history = [
            (old, "2023-01-01", change.isoformat()),
            (new, change.isoformat(), None),
        ]
        self.draft.tax_rates = [r for r in self.draft.tax_rates if r[0] != jurisdiction]
        self.draft.tax_rates += [(jurisdiction, *row) for row in self.tax_history]
        self.draft.tax_rates.sort()

    def tax_rate_on(self, day: date) -> Fraction:
        text = day.isoformat()
        for rate, start, end in self.tax_history:
            if start <= text and (end is None or text < end):
                return parse_rate(rate)
        raise ValueError(f"no tax rate on {text}")

    def exempt_on(self, day: date) -> bool:
        cert = self.customer.exemption
        return cert is not None and cert[1] <= day.isoformat() < cert[2]

    def fx_on(self, day: date) -> Fraction:
        currency = self.customer.currency
        if currency == "USD":
            return Fraction(1)
        key = day.isoformat()
        if key not in self.fx:
            base = parse_rate(data("catalog.json")["fx_base"][currency])
            wobble = Fraction(self.rng.randrange(-400, 401), 10000)  # +-4 %, 4 decimals
            rate = (base * (1 + wobble)).limit_denominator(10000)
            rate = Fraction(round(rate * 10000), 10000)
            self.fx[key] = format_rate(rate)
            assert self.draft is not None
            self.draft.fx_rates.append((key, "USD", currency, self.fx[key]))
            self.draft.fx_rates.sort()
        return parse_rate(self.fx[key])

    def make_catalog(self) -> dict[str, Plan]:
        plans: dict[str, Plan] = {}
        for spec in data("catalog.json")["plans"]:
            low, high = spec["price_range"]
            price = self.rng.randrange(low // 100, high // 100 + 1) * 100
            if self.rng.random() < 0.5:
                price -= 1  # 49.00 or 48.99: both are real price points
            metered = spec["metered"]
            plan = Plan(
                id=f"PLN-{spec['key']}",
                name=spec["name"],
                per_seat=spec["per_seat"],
                trial_days=spec["trial_days"],
                included_units=self.rng.randrange(*spec["included"]) // 100 * 100 if metered else 0,
                overage_unit_price_cents=self.rng.randint(*spec["overage_cents"]) if metered else 0,
                unit_name=spec.get("unit"),
                prices=[(price, "2023-01-01", None)],
            )
            plans[spec["key"]] = plan
        assert self.draft is not None
        self.draft.plans = list(plans.values())
        return plans

    def raise_price(self, plan: Plan, effective: date, *, percent: int) -> None:
        """A legitimate, announced price change (a no-error look-alike)."""
        old = plan.prices[-1][0]
        new = old + old * percent // 100
        announced = local_to_utc(effective - days(30), time(9, 0), self.customer.timezone)
        plan.prices.append((new, effective.isoformat(), announced))

    # subscriptions ----------------------------------------------------------------------
    def make_story(
        self,
        plan: Plan,
        *,
        seats: int,
        periods: int,
        anchor: date | None = None,
        trial: bool = False,
    ) -> Story:
        assert self.draft is not None
        with_trial = trial and plan.trial_days > 0
        if anchor is None:
            anchor = add_months(date(2025, 1, self.rng.randint(1, 28)), self.rng.randrange(0, 10))
            if with_trial:  # periods start with the trial: its first day is the anchor (<= 28)
                anchor = anchor + days(plan.trial_days)
        sub = Subscription(
            id=self.new_id("SUB"),
            customer_id=self.customer.id,
            plan_id=plan.id,
            seats=seats,
            status="active",
            started_at="",
            anchor_day=anchor.day,
        )
        story = Story(sub, plan, seats, anchor, periods, self.customer.timezone)
        start = anchor
        if with_trial:
            start = anchor - days(plan.trial_days)
            if start.day > 28:
                raise ValueError(f"a trial anchor must start periods on day <= 28, got {start}")
            story.trial_end = anchor
        sub.started_at = story.event(
            start, self.work_time(), "created", {"plan_id": plan.id, "seats": seats}
        )
        if story.trial_end is not None:
            story.event(start, time(0, 0), "trial_started", {"trial_days": plan.trial_days})
            story.event(story.trial_end, time(0, 0), "trial_ended", {})
            story.anchor = start  # the first period starts with the trial and is prorated
        self.draft.subscriptions.append(sub)
        return story

    def work_time(self) -> time:
        """A daytime moment whose UTC date equals its local date in every zone of the world
        (11:00-15:59 local): only the held-out timezone class may depend on converting dates."""
        return time(self.rng.randint(11, 15), self.rng.choice((0, 5, 15, 20, 30, 40, 45, 55)))

    def fill_usage(self, story: Story, *, low: float = 0.6, high: float = 1.8) -> None:
        plan = story.plan
        for k in range(story.periods):
            start, end = story.period(k)
            units = int(plan.included_units * self.rng.uniform(low, high))
            story.usage[start] = units
            story.sub.usage.append((start.isoformat(), end.isoformat(), units))

    def bill(self, story: Story) -> list[Invoice]:
        """Issues the correct invoice for every billed period of the story, paid unless last."""
        assert self.draft is not None
        invoices = []
        ks = story.billed_periods()
        for k in ks:
            inputs = story.inputs(k, self)
            invoice = Invoice(
                id=self.new_id("INV"),
                customer_id=self.customer.id,
                subscription_id=story.sub.id,
                # issued in local office hours, so issued_at's UTC date is the period_start
                issued_at=local_to_utc(
                    inputs.period_start, time(self.rng.randint(11, 15), 0), self.customer.timezone
                ),
                correct=inputs,
                billed=inputs,
            )
            self.draft.invoices.append(invoice)
            invoices.append(invoice)
        for invoice in invoices:
            self.pay(invoice)
        if story.coupon is not None:
            story.sub.coupon_code = story.coupon.code
        # the subscription row shows its state at the end of the last billed period
        last_day = story.period(ks[-1])[1] - days(1) if ks else story.anchor
        story.sub.plan_id = story.plan_at(last_day).id
        story.sub.seats = story.seats_at(last_day)
        self.draft.invoices.sort(key=lambda inv: (inv.issued_at, inv.id))
        return invoices

    def pay(self, invoice: Invoice, *, delay_days: int | None = None) -> Payment:
        assert self.draft is not None
        total = invoice.billed_amounts().total_cents
        issued = date.fromisoformat(invoice.issued_at[:10])
        delay = self.rng.randint(0, 3) if delay_days is None else delay_days
        payment = Payment(
            id=self.new_id("PAY"),
            invoice_id=invoice.id,
            customer_id=self.customer.id,
            amount_cents=total,
            currency=invoice.billed.currency,
            paid_at=local_to_utc(issued + days(delay), self.work_time(), "UTC"),
            method=self.pick(METHODS[invoice.billed.currency]),
        )
        self.draft.payments.append(payment)
        self.draft.payments.sort(key=lambda p: (p.paid_at, p.id))
        return payment

    def rebill(self, invoice: Invoice, **changes: Any) -> None:
        """A fault: the invoice was billed from other inputs; its payment follows the bill."""
        assert self.draft is not None
        invoice.billed = replace(invoice.billed, **changes)
        total = invoice.billed_amounts().total_cents
        for payment in self.draft.payments:
            if payment.invoice_id == invoice.id:
                payment.amount_cents = total

    def new_coupon(
        self,
        *,
        duration: str,
        periods: int | None,
        valid_from: date,
        valid_until: date,
        percent: int | None = None,
        amount_off_cents: int | None = None,
    ) -> Coupon:
        assert self.draft is not None
        word = self.pick(("WELCOME", "LAUNCH", "PARTNER", "SPRING", "LOYAL", "SAVE", "BOOST"))
        code = f"{word}{percent or (amount_off_cents or 0) // 100}"
        while any(c.code == code for c in self.draft.coupons):
            code += self.pick(_ID_ALPHABET)
        coupon = Coupon(
            code=code,
            percent_off=None if percent is None else format_rate(Fraction(percent, 100)),
            amount_off_cents=amount_off_cents,
            valid_from=valid_from.isoformat(),
            valid_until=valid_until.isoformat(),
            duration=duration,
            duration_periods=periods,
        )
        self.draft.coupons.append(coupon)
        return coupon


def _ascii(text: str) -> str:
    return text.translate(str.maketrans("äöüßéèçñåøæ", "aousseecnao"))


__all__ = ["WorldBuilder", "data", "plan_terms"]
