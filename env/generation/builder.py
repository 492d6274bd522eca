"""WorldBuilder: the seeded building blocks every scenario is made of.

A fault module asks for a customer, a catalog, a subscription story and its correctly billed
invoices, then changes what was billed. All randomness flows from one `random.Random`, so a
scenario is a pure function of (split, seed); no wall clock, no `hash()`, no set order.
"""

from __future__ import annotations

import json
import random
from dataclasses import replace
from datetime import UTC, date, datetime, time, timedelta
from fractions import Fraction
from functools import cache
from importlib import resources
from typing import Any

from env.engine.billing import BillingInputs
from env.engine.calendar import add_months, days, fx_day, fx_rate_day, local_to_utc, utc_stamp
from env.engine.money import format_rate, parse_rate
from env.engine.supply import SupplySite, taxed_in
from env.generation import lookalikes_tax, lookalikes_usage
from env.generation.fx_path import BAND as FX_BAND
from env.generation.fx_path import FxPath
from env.generation.story import Story, plan_terms
from env.generation.world import Coupon, Customer, Invoice, Payment, Plan, Subscription, WorldDraft

_ID_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"
WORLD_START = date(2025, 1, 1)  # earliest subscription start; periods run into 2026
METHODS = {
    "USD": ("card", "ach"),
    "EUR": ("card", "sepa_debit"),
    "GBP": ("card", "bacs_debit"),
    "CAD": ("card",),
    "AUD": ("card", "becs_debit"),
}


CERTIFICATE_RATE = 0.8  # customers with an exemption certificate outside tax_exempt_charged
# (env.generation.lookalikes_tax adds one to the rest, from its own stream: every customer, as in
# tax_exempt_charged, holds one)
MAIN_TRIAL_RATE = 0.9  # main subscriptions that start with their plan's free trial
EXTENDED_TRIAL_RATE = 0.6  # of those, trials support extended (they still end in period 0)
SHORT_EXTENSION = 3  # at most 3 + this - 1 days more where the first period must hold a change
ZERO_ALLOWANCE_RATE = 0.2  # Growth plans with no included units (pay as you go)
SPIKE_RATE = 0.12  # finished periods with a usage spike (a launch, a batch job), any class
SPIKE = (2.2, 3.0)  # a spike's volume, in units of the customer's usual level
FAILED_ATTEMPT_RATE = 0.12  # a declined first attempt and a successful retry
RUN_LAG = (10, 180)  # minutes from a trial's end to the billing run issuing its first charge


def _parse(stamp: str) -> datetime:
    return datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)


@cache
def data(name: str) -> Any:
    return json.loads(resources.files("env.generation").joinpath(f"data/{name}").read_text("utf-8"))


FX_BAND_BP = int(FX_BAND * 10000)  # a day's rate lies within +-4 % of its currency's base


class WorldBuilder:
    def __init__(
        self, rng: random.Random, *, name_pool: str, difficulty: str, label: str = ""
    ) -> None:
        self.rng = rng
        self.label = label  # only to keep background features out of the fault's way
        self.name_pool = name_pool
        self.difficulty = difficulty
        self._ids: set[str] = set()
        self.draft: WorldDraft | None = None
        self.locale: dict[str, Any] = {}
        self.tax_history: list[tuple[str, str, str | None]] = []  # rate, from, to
        self.fx: dict[str, str] = {}
        self.fx_path: FxPath | None = None  # the customer's currency's walk (non-USD)
        self.stories: list[Story] = []  # every subscription's story, the main one first
        self.tax_rng: random.Random | None = None  # env.generation.lookalikes_tax's side stream
        self.tax_compared: list[date] = []  # issue days a tax-rate story compares (taxed)
        self.tax_covered: list[date] = []  # issue days tax_exempt_charged's certificate covers
        # (first, second) issue days a look-alike compares for a price: taxed in one jurisdiction
        self.tax_kept: list[tuple[date, date]] = []
        # ids of rows a fault added beside an invoice (a second charge, its refund): a twin
        # drops them (`env.generation.twin_repair`); rebilled and unwarranted invoices show
        # themselves in the truth
        self.fault_rows: list[str] = []
        # subscription -> (issued_from, issued_until): its invoices issued then are taxed despite
        # the certificate (an `exemption_withheld` event, `lookalikes_exempt`)
        self.exemption_withheld: dict[str, tuple[str, str]] = {}

    # identities -------------------------------------------------------------------------
    def new_id(self, prefix: str, length: int = 6, rng: random.Random | None = None) -> str:
        rng = rng or self.rng
        while True:
            candidate = prefix + "-" + "".join(rng.choice(_ID_ALPHABET) for _ in range(length))
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
        if self.difficulty != "L1":  # every class alike (`lookalikes_tax.higher_neighbour`)
            locales = [loc for loc in locales if lookalikes_tax.higher_neighbour(loc)]
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
        if customer.currency != "USD":  # its rate's path, from a stream of its own
            self.fx_path = FxPath(self.rng.getrandbits(32))
        self._make_tax_history()
        lookalikes_tax.maybe_move(self)
        self._background_certificate()
        return customer

    def main_trial(self, plan: Plan, *, extended: bool = True) -> int:
        """The free trial a main subscription on `plan` starts with, in days (0: none), in every
        class whose fault can share one (the caller knows; design §1.2: trials, extended ones
        too, occur everywhere, as often as trial_period_charged has one). `extended=False`: at
        most SHORT_EXTENSION days more, for a story whose first period must still hold a change
        after the trial (the draws are the same)."""
        if not plan.trial_days or self.rng.random() >= MAIN_TRIAL_RATE:
            return 0
        return self.trial_length(plan, extended=extended)

    def trial_length(
        self, plan: Plan, *, extended: bool = True, rate: float = EXTENDED_TRIAL_RATE
    ) -> int:
        """The plan's standard trial, or (at `rate`) one support extended by a few days, still
        ending inside the first period."""
        if self.rng.random() < rate:
            extra = self.rng.randint(3, 10)
            return plan.trial_days + (extra if extended else 3 + (extra - 3) % SHORT_EXTENSION)
        return plan.trial_days

    def _background_certificate(self) -> None:
        """Maybe an exemption certificate with any window (design §1.2: certificates occur in
        every class); billing follows it. Its window misses a run of the main story's invoices,
        in a tax-rate story those it compares (`lookalikes_tax.certificate_gap`);
        tax_exempt_charged makes its own."""
        if self.label == "tax_exempt_charged":
            return
        if self.rng.random() >= CERTIFICATE_RATE:
            lookalikes_tax.extra_certificate(self)
        else:
            window = lookalikes_tax.drawn_window(self, self.rng)
            self.customer.exemption = (self.new_id("TXC", 8), *window)
        if self.customer.exemption is None:
            return
        self.customer.exemption_jurisdiction = lookalikes_tax.certificate_jurisdiction(self)

    # reference tables -------------------------------------------------------------------
    def _make_tax_history(self) -> None:
        rates = self.locale["rates"]
        old, new = self.rng.sample(rates, 2) if len(rates) > 1 else (rates[0], rates[0])
        change = add_months(date(2025, 1, 1), self.rng.randrange(3, 15)).isoformat()
        self.tax_history = [(old, "2023-01-01", change), (new, change, None)]
        assert self.draft is not None
        jurisdiction = self.locale["jurisdiction"]
        self.draft.tax_rates = [(jurisdiction, *row) for row in self.tax_history]
        others = {o["jurisdiction"]: o["rates"][-1] for o in data("locales.json")}
        for other, rate in others.items():  # other jurisdictions: decoys for a careless lookup
            if other != jurisdiction and self.rng.random() < 0.3:
                self.draft.tax_rates.append((other, rate, "2023-01-01", None))
        self.draft.tax_rates.sort()

    def close_rates(self, today: date) -> None:
        """The world's now (design §1.1): the rate table as it stands on the dispute day holds
        no rate that starts later, and the rate in force then has no end yet."""
        assert self.draft is not None
        now = today.isoformat()
        rows: list[tuple[str, str, str, str | None]] = []
        for j, rate, start, end in sorted(self.draft.tax_rates):
            if start > now:
                continue
            end = None if end is not None and end > now else end
            last = rows[-1] if rows else None
            joins = last is not None and last[0] == j and last[3] == start  # ends where it starts
            if last and joins and parse_rate(last[1]) == parse_rate(rate):
                rows[-1] = (j, last[1], last[2], end)  # a "change" to the same rate
                continue  # (rows sort by rate: a rate that comes back later is no such change)
            rows.append((j, rate, start, end))
        self.draft.tax_rates = rows  # one row in force per jurisdiction and day

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

    def rate_in(self, jurisdiction: str, day: date) -> Fraction:
        """The table's rate of any jurisdiction on `day` (the customer's own: `tax_rate_on`)."""
        if jurisdiction == self.customer.tax_jurisdiction:
            return self.tax_rate_on(day)
        assert self.draft is not None
        text = day.isoformat()
        for name, rate, start, end in self.draft.tax_rates:
            if name == jurisdiction and start <= text and (end is None or text < end):
                return parse_rate(rate)
        raise ValueError(f"no {jurisdiction} tax rate on {text}")

    def jurisdiction_on(self, day: date, subscription_id: str = "") -> str:
        """The jurisdiction an invoice issued that day is taxed in (`env.engine.supply`): the
        subscription's own service site while it applies, else the customer's, the previous
        one before a recorded move."""
        c = self.customer
        move = (c.previous_jurisdiction, c.jurisdiction_since)
        return taxed_in(day, c.tax_jurisdiction, move, self.supply_site(subscription_id))

    def supply_site(self, subscription_id: str) -> SupplySite | None:
        """A subscription's service site (`lookalikes_supply`), if it has one."""
        assert self.draft is not None
        for sub in self.draft.subscriptions:
            if sub.id == subscription_id and sub.supply_site is not None:
                return sub.supply_site[0], sub.supply_site[1]
        return None

    def exempt_on(self, day: date, subscription_id: str = "") -> bool:
        """The certificate covers the issue day and applies in the jurisdiction taxed then,
        unless the subscription's timeline withholds it on that day (`exemption_withheld`)."""
        cert = self.customer.exemption
        if cert is None or not cert[1] <= day.isoformat() < cert[2]:
            return False
        withheld = self.exemption_withheld.get(subscription_id)
        if withheld is not None and withheld[0] <= day.isoformat() < withheld[1]:
            return False
        where = self.customer.exemption_jurisdiction or self.customer.tax_jurisdiction
        return where == self.jurisdiction_on(day, subscription_id)

    def rates_on(self, issued: date, subscription_id: str = "") -> dict[str, Any]:
        """The currency, fx and tax inputs of an invoice issued that day (design §1.1: the rates
        in force on the issue date, the exemption if its window covers it)."""
        where = self.jurisdiction_on(issued, subscription_id)
        return {
            "currency": self.customer.currency,
            "fx_rate": self.fx_on(fx_rate_day(issued, subscription_id, self.customer.fx_lock)),
            "fx_rate_date": fx_rate_day(issued, subscription_id, self.customer.fx_lock),
            "tax_jurisdiction": where,
            "tax_rate": self.rate_in(where, issued),
            "tax_exempt": self.exempt_on(issued, subscription_id),
        }

    def fx_on(self, day: date) -> Fraction:
        currency = self.customer.currency
        if currency == "USD":
            return Fraction(1)
        day = fx_day(day)  # no rate is published on a weekend
        key = day.isoformat()
        if key not in self.fx:
            self._record_fx(day, self.path_rate(day))
        return parse_rate(self.fx[key])

    def path_rate(self, day: date) -> Fraction:
        """The rate the currency's path gives `day` (4 decimals), recorded or not."""
        assert self.fx_path is not None
        rate = self.fx_base() * (1 + self.fx_path.offset(fx_day(day)))
        return Fraction(round(rate * 10000), 10000)

    def raise_fx(self, day: date, rate: Fraction) -> bool:
        """A day whose rate is unusually high (a look-alike, a fault's near miss): the path is
        raised to `rate` around it (`FxPath.raise_to`) before anything records its days, and
        the day is recorded; False where a recorded day lies on the ramp (nothing changes)."""
        assert self.fx_path is not None
        if day.isoformat() in self.fx:
            return False
        recorded = {date.fromisoformat(d) for d in self.fx}
        if not self.fx_path.raise_to(day, rate / self.fx_base() - 1, recorded):
            return False
        self._record_fx(day, self.path_rate(day))  # the table holds it from now on
        return True

    def _record_fx(self, day: date, rate: Fraction) -> None:
        assert self.draft is not None
        text = format_rate(Fraction(round(rate * 10000), 10000))
        self.fx[day.isoformat()] = text
        self.draft.fx_rates.append((day.isoformat(), "USD", self.customer.currency, text))
        self.draft.fx_rates.sort()

    def fx_base(self) -> Fraction:
        """The customer's currency's base rate per USD, around which every day's rate lies."""
        return parse_rate(data("catalog.json")["fx_base"][self.customer.currency])

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
                included_units=self._allowance(spec) if metered else 0,
                overage_unit_price_cents=self.rng.randint(*spec["overage_cents"]) if metered else 0,
                unit_name=spec.get("unit"),
                prices=[(price, "2023-01-01", None)],
            )
            plans[spec["key"]] = plan
        for cheap, dear in (("TEAM", "BUSINESS"), ("GROWTH", "SCALE")):
            # at most 3x: a late downgrade's credit must stay below the next period's charge
            # (`env.generation.changes.unused_share`); no draw, so other catalogs are unchanged
            cap = plans[cheap].prices[0][0] * 3 // 100 * 100
            if plans[dear].prices[0][0] > cap:
                plans[dear].prices = [(cap, "2023-01-01", None)]
        assert self.draft is not None
        self.draft.plans = list(plans.values())
        return plans

    def _allowance(self, spec: dict[str, Any]) -> int:
        """Included units per period; the smaller metered plan is sometimes pure pay-as-you-go
        (an allowance of 0 is a real price, not only the usage fault's mistake)."""
        units = self.rng.randrange(*spec["included"]) // 100 * 100
        if spec["key"] == "GROWTH" and self.rng.random() < ZERO_ALLOWANCE_RATE:
            return 0
        return units

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
        trial: bool | int = False,
    ) -> Story:
        """`trial`: True for the plan's standard free trial, or its length in days (0: none;
        longer than standard: extended by support, logged with the standard length)."""
        assert self.draft is not None
        length = plan.trial_days if trial is True else int(trial)
        with_trial = plan.trial_days > 0 and length > 0
        if anchor is None:
            anchor = self._default_anchor()
            if with_trial:  # periods start with the trial: its first day is the anchor (<= 28)
                anchor = anchor + days(length)
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
            start = anchor - days(length)
            if start.day > 28:
                raise ValueError(f"a trial anchor must start periods on day <= 28, got {start}")
            story.trial_end = anchor
        at = self.work_time()
        sub.started_at = story.event(start, at, "created", {"plan_id": plan.id, "seats": seats})
        if story.trial_end is not None:
            story.run_lag = self.rng.randint(*RUN_LAG)  # the billing run, minutes later
            details: dict[str, object] = {"trial_days": length}
            if length != plan.trial_days:
                details.update(standard_trial_days=plan.trial_days, extended=True)
            story.event(start, at, "trial_started", details)
            story.event(story.trial_end, at, "trial_ended", {})
            story.anchor = start  # the first period starts with the trial and is prorated
        self.draft.subscriptions.append(sub)
        self.stories.append(story)
        # the customer existed by its first subscription (a certificate is filed after that)
        self.customer.created_at = min(self.customer.created_at, sub.started_at)
        if len(self.stories) == 1:
            lookalikes_tax.place_move(self, story)
            lookalikes_tax.place_rate_change(self, story)
        return story

    def _default_anchor(self) -> date:
        """A random 2025 anchor for the first story; later ones start near it (up to two months
        before, three weeks after), so every subscription is billing when the dispute opens."""
        if not self.stories:
            return add_months(date(2025, 1, self.rng.randint(1, 28)), self.rng.randrange(0, 10))
        anchor = self.stories[0].anchor + days(self.rng.randint(-60, 20))
        while anchor.day > 28:
            anchor += days(1)
        return anchor

    def work_time(self) -> time:
        """Any moment of the local day (design §1.2: event hours carry no label): late evening
        and just after midnight are as common as office hours."""
        return time(self.rng.randrange(24), self.rng.randrange(60))

    def fill_usage(self, story: Story, *, low: float = 0.6, high: float = 1.8) -> None:
        """Usage records of every finished period (the last one is still running)."""
        for k in range(story.periods - 1):
            self.record_usage(story, k, low=low, high=high)

    def record_usage_to_date(self, story: Story, day: date) -> None:
        """The running period's usage so far, as a metered subscription shows it on `day`: the
        next invoice bills it in arrears. Every metered subscription has one, whatever its age."""
        k = story.periods - 1
        start, end = story.period(k)
        plan = story.plan_at(start)
        if not plan.overage_unit_price_cents or start in story.usage or not start <= day < end:
            return
        share = (day - start).days / (end - start).days
        units = int(self.usage_level(story) * self.rng.uniform(0.6, 1.8) * share)
        trial = story.trial_end
        if trial is not None and start < trial < day:  # the trial's part apart (not billed)
            in_trial = min(units, int(units * (trial - start).days / (day - start).days))
            story.sub.usage.append((start.isoformat(), trial.isoformat(), in_trial))
            story.sub.usage.append((trial.isoformat(), end.isoformat(), units - in_trial))
        else:
            story.sub.usage.append((start.isoformat(), end.isoformat(), units))
        story.sub.usage.sort()

    def usage_level(self, story: Story) -> int:
        """How much this customer uses in a typical period (design §1.1: a property of the
        customer, not of the plan it ends a period on): drawn once, around the allowance of the
        first metered plan it had, or a typical Growth allowance for a pay-as-you-go customer
        (the same volume as any other, only none of it included)."""
        if not story.usage_level:
            plans = [story.plan] + [p for _, p in sorted(story.plan_changes, key=lambda c: c[0])]
            allowance = next((p.included_units for p in plans if p.included_units), 0)
            if not allowance:
                spec = next(s for s in data("catalog.json")["plans"] if s["key"] == "GROWTH")
                allowance = max(100, self.rng.randrange(*spec["included"]) // 100 * 100)
            story.usage_level = max(1, int(allowance * self.rng.uniform(0.8, 1.25)))
            story.usage_drawn = True
        return story.usage_level

    def usage_factor(self, story: Story, low: float = 0.6, high: float = 1.8) -> float:
        """One finished period's volume relative to the customer's level: usually `low`-`high`,
        now and then a spike (`SPIKE_RATE`, every class alike). A story whose fault pinned the
        level to keep usage inside an allowance gets no spikes."""
        if story.usage_drawn and self.rng.random() < SPIKE_RATE:
            return self.rng.uniform(*SPIKE)
        return self.rng.uniform(low, high)

    def record_usage(
        self, story: Story, k: int, *, low: float = 0.6, high: float = 1.8, units: int | None = None
    ) -> None:
        start, end = story.period(k)
        if start in story.usage:
            return
        if units is None:
            level = self.usage_level(story)
            units = int(level * self.usage_factor(story, low, high))
            fixed = lookalikes_usage.draw_correction(
                self.rng, self.difficulty, story, start, end, level
            )
            if fixed is not None:  # reported in part, corrected by a late batch: billed whole
                units = fixed[0] + fixed[1]
                story.usage_corrections[start] = fixed[1:]
        story.usage[start] = units
        story.sub.usage.append((start.isoformat(), end.isoformat(), units))
        self.split_usage(story)

    def split_usage(self, story: Story) -> None:
        """Usage of a period is recorded in parts split at a free trial's end (trial usage is
        not billed) and at an immediate plan change inside it (each part billed on its own
        plan, design §1.1). Each split is drawn once; runs again when a change is added after
        the usage was recorded (the background comes later)."""
        for k in range(story.periods):
            start, end = story.period(k)
            if start not in story.usage:
                continue
            if start in story.usage_corrections and not lookalikes_usage.one_part(
                story, start, end
            ):  # a change added later splits it: the correction is dropped, not billed
                story.usage[start] -= story.usage_corrections.pop(start)[0]
            units = story.usage[start]
            trial = story.trial_end
            paid_from = trial if trial is not None and start < trial < end else start
            if paid_from != start:  # the share of the trial's days, drawn once per period
                jitter = story.trial_jitter.setdefault(start, self.rng.uniform(0.8, 1.2))
                days_share = (paid_from - start).days / (end - start).days
                share = days_share * jitter / (days_share * jitter + 1 - days_share)  # < 1
                story.usage_in_trial[start] = int(units * share)
            else:
                story.usage_in_trial.pop(start, None)
            paid = units - story.usage_in_trial.get(start, 0)
            changes = [d for d, _ in story.plan_changes if paid_from < d < end]
            if changes:
                change = max(changes)
                share = (change - paid_from).days / (end - paid_from).days
                share *= story.change_jitter.setdefault(start, self.rng.uniform(0.8, 1.2))
                story.usage_before_change[start] = min(paid, int(paid * share))
            self._usage_records(story, start, end, paid_from, changes)
        story.sub.usage.sort()
        story.sub.usage_corrections = lookalikes_usage.correction_rows(story)

    def _usage_records(
        self, story: Story, start: date, end: date, paid_from: date, changes: list[date]
    ) -> None:
        """The usage rows of one finished period: the trial's part, then one or two paid parts."""
        first, last = start.isoformat(), end.isoformat()
        story.sub.usage = [
            r for r in story.sub.usage if not (first <= r[0] < last and r[1] <= last)
        ]
        rows = []
        paid = story.usage[start]
        if paid_from != start:
            rows.append((first, paid_from.isoformat(), story.usage_in_trial[start]))
            paid -= story.usage_in_trial[start]
        if changes:
            change, part = max(changes).isoformat(), story.usage_before_change[start]
            rows += [(paid_from.isoformat(), change, part), (change, last, paid - part)]
        else:  # a correction record holds the rest of a corrected period's units
            rows.append((paid_from.isoformat(), last, paid - self._corrected(story, start)))
        story.sub.usage.extend(rows)

    @staticmethod
    def _corrected(story: Story, start: date) -> int:
        fixed = story.usage_corrections.get(start)
        return fixed[0] if fixed else 0

    def bill(self, story: Story) -> list[Invoice]:
        """Issues the correct invoice of every billed period (in advance, at the period start
        at the subscription's time of day; the first paid one of a trial when it ends), plus the
        trial's zero invoice, and pays each. Returns the period invoices in period order."""
        assert self.draft is not None
        self.split_usage(story)
        if story.trial_end is not None and story.trial_invoice is None:
            story.trial_invoice = self.issue(story, story.trial_inputs(self), story.sub.started_at)
        invoices = [self.bill_period(story, k) for k in story.billed_periods()]
        if story.coupon is not None:
            story.sub.coupon_code = story.coupon.code
        self.settle_subscription_row(story)
        return invoices

    def bill_period(self, story: Story, k: int) -> Invoice:
        return self.issue(story, story.inputs(k, self), self.issue_stamp(story, k))

    def issue_stamp(self, story: Story, k: int) -> str:
        """Renewals happen at the subscription's local time of day on the period start; the
        first period at creation, a trial's first paid period when trial_ended was logged."""
        day = story.issue_day(k)
        start, end = story.period(k)
        if story.trial_end is not None and start < story.trial_end < end:
            ended = [e.occurred_at for e in story.sub.events if e.type == "trial_ended"]
            if ended:  # the billing run after the trial's end (`Story.run_lag`)
                return story.run_stamp(ended[-1])
        if k == 0:
            return story.sub.started_at
        return local_to_utc(day, story.time_of_day(), story.timezone)

    def issue(self, story: Story, inputs: BillingInputs, issued_at: str) -> Invoice:
        assert self.draft is not None
        invoice = Invoice(
            id=self.new_id("INV"),
            customer_id=self.customer.id,
            subscription_id=story.sub.id,
            issued_at=issued_at,
            correct=inputs,
            billed=inputs,
        )
        return self.file_invoice(invoice)

    def file_invoice(self, invoice: Invoice) -> Invoice:
        """Every invoice enters the draft here: kept in issue order, then paid as usual."""
        assert self.draft is not None
        self.draft.invoices.append(invoice)
        self.draft.invoices.sort(key=lambda inv: (inv.issued_at, inv.id))
        self.pay(invoice)
        return invoice

    def settle_subscription_row(self, story: Story) -> None:
        """The subscription row shows its plan at the end of the last billed period and the
        latest seat count ordered (one that waits for a later period start included)."""
        ks = story.billed_periods()
        last_day = story.period(ks[-1])[1] - days(1) if ks else story.anchor
        story.sub.plan_id = story.plan_at(last_day).id
        story.sub.seats = story.seats_at(date.max)

    def pay(
        self, invoice: Invoice, *, after: str | None = None, status: str = ""
    ) -> Payment | None:
        """Collects an invoice after it was issued: a card within the hour, a bank debit in one
        to three days; now and then a first attempt fails and a retry succeeds a day or two on.
        A zero invoice is marked paid without a payment. `status` forces one attempt's outcome.
        """
        assert self.draft is not None
        total = invoice.billed_amounts().total_cents
        method = self.pick(METHODS[invoice.billed.currency])
        start = _parse(after or invoice.issued_at)
        if total <= 0 and not status:
            return None
        delay = (
            timedelta(minutes=self.rng.randint(1, 90))
            if method == "card"
            else timedelta(days=self.rng.randint(1, 3), minutes=self.rng.randint(0, 600))
        )
        if not status and self.rng.random() < FAILED_ATTEMPT_RATE:
            self._add_payment(invoice, total, start + delay, method, "failed")
            delay += timedelta(days=self.rng.randint(1, 3), minutes=self.rng.randint(0, 300))
        return self._add_payment(invoice, total, start + delay, method, status or "succeeded")

    def _add_payment(
        self, invoice: Invoice, cents: int, moment: datetime, method: str, status: str
    ) -> Payment:
        assert self.draft is not None
        payment = Payment(
            id=self.new_id("PAY"),
            invoice_id=invoice.id,
            customer_id=self.customer.id,
            amount_cents=cents,
            currency=invoice.billed.currency,
            paid_at=utc_stamp(moment),
            method=method,
            status=status,
        )
        self.draft.payments.append(payment)
        self.draft.payments.sort(key=lambda p: (p.paid_at, p.id))
        return payment

    def refund(self, payment: Payment, cents: int, *, after: str | None = None) -> Payment:
        """A refund of `cents` of a succeeded payment: a payment row with status "refunded"."""
        invoice = self.draft.invoice(payment.invoice_id) if self.draft else None
        assert invoice is not None
        moment = _parse(after or payment.paid_at) + timedelta(
            days=self.rng.randint(1, 6), minutes=self.rng.randint(0, 600)
        )
        return self._add_payment(invoice, cents, moment, payment.method, "refunded")

    def rebill(self, invoice: Invoice, **changes: Any) -> None:
        """A fault: the invoice was billed from other inputs; its payment follows the bill."""
        assert self.draft is not None
        invoice.billed = replace(invoice.billed, **changes)
        used_on = invoice.billed.scheduled_from_plan
        if used_on is not None and used_on.plan_id == invoice.billed.plan.plan_id:
            # a system that missed a scheduled change bills the usage on the plan it kept
            invoice.billed = replace(invoice.billed, scheduled_from_plan=None)
        total = invoice.billed_amounts().total_cents
        for payment in self.draft.payments:
            if payment.invoice_id == invoice.id and payment.status in ("succeeded", "failed"):
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
