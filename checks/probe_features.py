"""Surface features of a scenario and the probe's samples built from them.

Every feature is read from the public scenario database (the tables the agent's tools expose),
never from the truth, and no record is compared with another: counts of rows, flags, currencies,
local hours of timestamps, memo/notes present, event-type counts, payments per invoice; and,
named `recorded_*`, the values of the invoices' recorded billing inputs (seats, rates, units,
proration offsets). A deep row adds the fingerprint tokens, the comparison checks that fire
and the pair search's numbers.
If one of these predicts a label, the world gives its answer away (design §1.2). The truth is
read solely for the label (and the overcharged invoices) a model is fitted to and scored on.
"""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from functools import cache, cached_property
from zoneinfo import ZoneInfo

import numpy as np

from checks.probe_comparisons import fired_on
from checks.probe_fingerprints import tokens_of
from checks.probe_ledger import ledger_of
from checks.probe_pairs import pair_features
from checks.probe_topics import plausible_classes
from env.cli import map_seeds
from env.engine.money import parse_amount, parse_rate
from env.generation.generator import generate
from env.generation.splits import split_assignment, split_seeds
from env.labels import ROOT_CAUSES
from env.scenario import reveal_truth

TABLES = (
    "plans", "plan_prices", "coupons", "subscriptions", "subscription_events", "tax_rates",
    "fx_rates", "usage_records", "invoices", "invoice_lines", "payments", "credit_notes",
)  # fmt: skip
EVENT_TYPES = (
    "created", "trial_started", "trial_ended", "plan_changed", "seats_changed", "coupon_applied",
    "coupon_removed", "cancel_requested", "canceled", "renewed", "reactivated",
)  # fmt: skip
CURRENCIES = ("USD", "EUR", "GBP", "CAD", "AUD")
SUB_STATUSES = ("active", "canceled", "trialing", "past_due")
INVOICE_STATUSES = ("paid", "open", "void", "uncollectible")
PAYMENT_STATUSES = ("succeeded", "failed", "refunded")
INPUT_FLAGS = (  # invoice inputs fields whose mere presence could be a tell
    "previous_plan", "previous_seats", "plan_change_date", "proration_start", "proration_end",
    "coupon", "usage_units",
)  # fmt: skip
NIGHT = (22, 23, 0, 1)  # local hours "near midnight"
RECORDED = "recorded_"  # the recorded-input value features: only in the surface+inputs models


@cache
def _zone(name: str) -> ZoneInfo:
    return ZoneInfo(name)


def _local_hours(stamps: list[str], zone: ZoneInfo) -> list[int]:
    return [datetime.fromisoformat(s.replace("Z", "+00:00")).astimezone(zone).hour for s in stamps]


def _hour_features(prefix: str, hours: list[int]) -> dict[str, float]:
    night = sum(h in NIGHT for h in hours)
    return {
        f"{prefix}_night": float(night),
        f"{prefix}_any_night": float(night > 0),
        f"{prefix}_min_hour": float(min(hours, default=12)),
        f"{prefix}_max_hour": float(max(hours, default=12)),
        f"{prefix}_midnight": float(sum(h == 0 for h in hours)),
    }


def _count(db: sqlite3.Connection, sql: str) -> float:
    return float(db.execute(sql).fetchone()[0] or 0)


def features_of_database(image: bytes) -> dict[str, float]:
    """Feature name -> value for one scenario's database image (bytes as the agent gets it)."""
    db = sqlite3.connect(":memory:")
    try:
        db.deserialize(image)
        return _features(db)
    finally:
        db.close()


def _spread(values: list[float], name: str) -> dict[str, float]:
    return {
        f"{RECORDED}{name}_max": max(values, default=0.0),
        f"{RECORDED}{name}_min": min(values, default=0.0),
        f"{RECORDED}{name}_values": float(len(set(values))),
    }


def _days(later: str | None, earlier: str | None) -> float | None:
    if later is None or earlier is None:
        return None
    return float((date.fromisoformat(later) - date.fromisoformat(earlier)).days)


def recorded_features(db: sqlite3.Connection) -> dict[str, float]:
    """The values of the invoices' recorded inputs, summed up per scenario: each read from one
    record only (a comparison with another record is a check of `checks.probe_comparisons`)."""
    inputs = [json.loads(r[0]) for r in db.execute("SELECT inputs FROM invoices")]
    metered = [i for i in inputs if i["plan"]["overage_unit_price"] != "0.00"]
    used = [i for i in metered if i["usage_units"] is not None]
    f: dict[str, float] = {}
    f.update(_spread([float(i["seats"]) for i in inputs], "seats"))
    f.update(_spread([float(parse_amount(i["plan"]["unit_price"])) for i in inputs], "unit_price"))
    f.update(_spread([float(parse_rate(i["tax_rate"])) for i in inputs], "tax_rate"))
    f.update(_spread([float(parse_rate(i["fx_rate"])) for i in inputs], "fx_rate"))
    f.update(_spread([float(i["usage_units"]) for i in used], "usage_units"))
    ratios = [i["usage_units"] / max(1, i["plan"]["included_units"]) for i in used]
    f.update(_spread(ratios, "usage_ratio"))
    f[f"{RECORDED}included_zero_metered"] = float(
        sum(i["plan"]["included_units"] == 0 for i in metered)
    )
    f[f"{RECORDED}plans"] = float(len({i["plan"]["plan_id"] for i in inputs}))
    f[f"{RECORDED}jurisdictions"] = float(len({i["tax_jurisdiction"] for i in inputs}))
    f[f"{RECORDED}fx_date_not_period_start"] = float(
        sum(i["fx_rate_date"] != i["period_start"] for i in inputs)
    )
    coupons = [i["coupon"] for i in inputs if i["coupon"]]
    percents = [float(parse_rate(c["percent_off"])) for c in coupons if c["percent_off"]]
    f[f"{RECORDED}coupon_percent_max"] = max(percents, default=0.0)
    f[f"{RECORDED}coupon_amount_off"] = float(sum(c["amount_off"] is not None for c in coupons))
    f[f"{RECORDED}coupon_codes"] = float(len({c["coupon_code"] for c in coupons}))
    offsets = {
        "proration_start_offset": [_days(i["proration_start"], i["period_start"]) for i in inputs],
        "proration_end_offset": [_days(i["period_end"], i["proration_end"]) for i in inputs],
        "change_offset": [_days(i["period_start"], i["plan_change_date"]) for i in inputs],
        "period_days": [_days(i["period_end"], i["period_start"]) for i in inputs],
        "seats_delta": [
            None if i["previous_seats"] is None else float(i["seats"] - i["previous_seats"])
            for i in inputs
        ],
    }
    for name, values in offsets.items():
        f.update(_spread([v for v in values if v is not None], name))
    return f


def _features(db: sqlite3.Connection) -> dict[str, float]:
    f = recorded_features(db)
    for table in TABLES:
        f[f"rows_{table}"] = _count(db, f"SELECT COUNT(*) FROM {table}")
    f.update(_customer(db))
    zone = _zone(db.execute("SELECT timezone FROM customers").fetchone()[0])
    f.update(_plans(db))
    f.update(_subscriptions(db))
    f.update(_events(db, zone))
    f.update(_invoices(db, zone))
    f.update(_payments(db, zone))
    opened = [r[0] for r in db.execute("SELECT opened_at FROM disputes")]
    f.update(_hour_features("dispute", _local_hours(opened, zone)))
    return f


def _customer(db: sqlite3.Connection) -> dict[str, float]:
    cert, notes, currency, region = db.execute(
        "SELECT exemption_certificate_id, notes, currency, region FROM customers"
    ).fetchone()
    f = {
        "customer_has_exemption": float(cert is not None),
        "customer_notes_present": float(bool(notes.strip())),
        "customer_has_region": float(region is not None),
    }
    f.update({f"currency_{c}": float(currency == c) for c in CURRENCIES})
    f["currency_non_usd"] = float(currency != "USD")
    return f


def _plans(db: sqlite3.Connection) -> dict[str, float]:
    return {
        "plans_per_seat": _count(db, "SELECT COUNT(*) FROM plans WHERE pricing='per_seat'"),
        "plans_with_trial": _count(db, "SELECT COUNT(*) FROM plans WHERE trial_days>0"),
        "plans_metered": _count(db, "SELECT COUNT(*) FROM plans WHERE overage_unit_price_cents>0"),
        "plans_yearly": _count(db, "SELECT COUNT(*) FROM plans WHERE interval='year'"),
        "prices_announced": _count(
            db, "SELECT COUNT(*) FROM plan_prices WHERE announced_at IS NOT NULL"
        ),
        "coupons_percent": _count(db, "SELECT COUNT(*) FROM coupons WHERE percent_off IS NOT NULL"),
        "coupons_forever": _count(db, "SELECT COUNT(*) FROM coupons WHERE duration='forever'"),
        "coupons_once": _count(db, "SELECT COUNT(*) FROM coupons WHERE duration='once'"),
    }


def _subscriptions(db: sqlite3.Connection) -> dict[str, float]:
    statuses = Counter(r[0] for r in db.execute("SELECT status FROM subscriptions"))
    f = {f"subs_{s}": float(statuses[s]) for s in SUB_STATUSES}
    f["subs_other_status"] = float(sum(statuses.values()) - sum(statuses[s] for s in SUB_STATUSES))
    f["subs_with_coupon"] = _count(
        db, "SELECT COUNT(*) FROM subscriptions WHERE coupon_code IS NOT NULL"
    )
    f["subs_max_seats"] = _count(db, "SELECT MAX(seats) FROM subscriptions")
    f["usage_subscriptions"] = _count(
        db, "SELECT COUNT(DISTINCT subscription_id) FROM usage_records"
    )
    return f


def _events(db: sqlite3.Connection, zone: ZoneInfo) -> dict[str, float]:
    rows = db.execute("SELECT type, occurred_at, details FROM subscription_events").fetchall()
    types = Counter(r[0] for r in rows)
    f = {f"events_{t}": float(types[t]) for t in EVENT_TYPES}
    f["events_other_type"] = float(len(rows) - sum(types[t] for t in EVENT_TYPES))
    f["events_max_per_sub"] = _count(
        db,
        "SELECT MAX(n) FROM (SELECT COUNT(*) AS n FROM subscription_events "
        "GROUP BY subscription_id)",
    )
    keys: Counter[str] = Counter()
    for _, _, details in rows:
        parsed = json.loads(details) if details else {}
        keys.update(f"event_detail_{k}" for k in parsed if isinstance(parsed, dict))
    f.update({k: float(v) for k, v in keys.items()})
    non_created = [r[1] for r in rows if r[0] != "created"]
    f.update(_hour_features("event", _local_hours(non_created, zone)))
    f.update(_hour_features("event_any", _local_hours([r[1] for r in rows], zone)))
    return f


def _invoices(db: sqlite3.Connection, zone: ZoneInfo) -> dict[str, float]:
    rows = db.execute(
        "SELECT issued_at, status, memo, inputs, discount_cents, tax_cents, total_cents "
        "FROM invoices"
    ).fetchall()
    statuses = Counter(r[1] for r in rows)
    f = {f"invoices_{s}": float(statuses[s]) for s in INVOICE_STATUSES}
    f["invoices_memo"] = float(sum(bool(r[2].strip()) for r in rows))
    f["invoices_discounted"] = float(sum(r[4] > 0 for r in rows))
    f["invoices_untaxed"] = float(sum(r[5] == 0 for r in rows))
    f["invoices_zero_total"] = float(sum(r[6] == 0 for r in rows))
    inputs = [json.loads(r[3]) for r in rows]
    for flag in INPUT_FLAGS:
        f[f"inputs_{flag}"] = float(sum(i.get(flag) is not None for i in inputs))
    f["inputs_tax_exempt"] = float(sum(bool(i.get("tax_exempt")) for i in inputs))
    f["invoice_subscriptions"] = _count(db, "SELECT COUNT(DISTINCT subscription_id) FROM invoices")
    f["lines_max_per_invoice"] = _count(
        db, "SELECT MAX(n) FROM (SELECT COUNT(*) AS n FROM invoice_lines GROUP BY invoice_id)"
    )
    f["lines_negative"] = _count(db, "SELECT COUNT(*) FROM invoice_lines WHERE amount_cents<0")
    f.update(_hour_features("issued", _local_hours([r[0] for r in rows], zone)))
    return f


def _payments(db: sqlite3.Connection, zone: ZoneInfo) -> dict[str, float]:
    rows = db.execute("SELECT invoice_id, paid_at, method, status FROM payments").fetchall()
    statuses = Counter(r[3] for r in rows)
    f = {f"payments_{s}": float(statuses[s]) for s in PAYMENT_STATUSES}
    per_invoice = Counter(r[0] for r in rows)
    ok_per_invoice = Counter(r[0] for r in rows if r[3] == "succeeded")
    f["payments_max_per_invoice"] = float(max(per_invoice.values(), default=0))
    f["invoices_multi_payment"] = float(sum(n > 1 for n in per_invoice.values()))
    f["invoices_multi_succeeded"] = float(sum(n > 1 for n in ok_per_invoice.values()))
    f["payments_methods"] = float(len({r[2] for r in rows}))
    f["payments_minus_invoices"] = float(len(rows)) - _count(db, "SELECT COUNT(*) FROM invoices")
    f.update(_hour_features("paid", _local_hours([r[1] for r in rows], zone)))
    return f


# the probe's samples: features, complaint text, label and difficulty per scenario --------


@dataclass(frozen=True)
class Row:
    scenario_id: str
    label: str
    difficulty: str
    complaint: str
    features: dict[str, float]
    tokens: frozenset[str] = frozenset()  # deep rows only
    fired: dict[str, frozenset[str]] = field(default_factory=dict)  # check -> records it flags
    victims: frozenset[str] = frozenset()  # the overcharged invoices (truth, for scoring only)
    pairs: dict[str, float] = field(default_factory=dict)  # pair search: `pair|stat` -> value
    plausible: frozenset[str] = frozenset()  # the classes a complaint could blame (topic chance)


def row_of(split: str, seed: int) -> Row:
    scenario = generate.__wrapped__(split, seed)
    db = sqlite3.connect(":memory:")
    try:
        db.deserialize(scenario.database)
        plausible = plausible_classes(db)
    finally:
        db.close()
    return Row(
        scenario.scenario_id,
        reveal_truth(scenario).label,
        scenario.difficulty,
        scenario.complaint,
        features_of_database(scenario.database),
        plausible=plausible,
    )


def deep_row_of(split: str, seed: int) -> Row:
    """A row with the fingerprint tokens and the checks that fire (the probe's full read)."""
    scenario = generate.__wrapped__(split, seed)
    truth = reveal_truth(scenario)
    db = sqlite3.connect(":memory:")
    try:
        db.deserialize(scenario.database)
        features, tokens, led = _features(db), tokens_of(db), ledger_of(db)
        plausible = plausible_classes(db)
    finally:
        db.close()
    return Row(
        scenario.scenario_id, truth.label, scenario.difficulty, scenario.complaint, features,
        tokens, fired_on(led), frozenset(truth.overcharges), pair_features(led), plausible,
    )  # fmt: skip


@dataclass
class Sample:
    """Rows of one or more splits as arrays; `names` orders the feature columns."""

    name: str
    rows: list[Row]
    names: list[str] = field(default_factory=list)

    @cached_property
    def X(self) -> np.ndarray:
        return np.array([[r.features.get(n, 0.0) for n in self.names] for r in self.rows])

    @cached_property
    def y(self) -> np.ndarray:
        return np.array([r.label for r in self.rows])

    @cached_property
    def difficulty(self) -> np.ndarray:
        return np.array([r.difficulty for r in self.rows])

    @cached_property
    def texts(self) -> list[str]:
        return [r.complaint for r in self.rows]

    def __len__(self) -> int:
        return len(self.rows)


def load(
    split: str, seeds: Sequence[int], workers: int | None = None, *, deep: bool = False
) -> list[Row]:
    return map_seeds(deep_row_of if deep else row_of, split, seeds, workers)


def train_seeds(offset: int, count: int) -> list[int]:
    return split_seeds("train", offset + count)[offset:]


def feature_names(rows: Sequence[Row], *, recorded: bool = False) -> list[str]:
    """Every feature any fitting row has, sorted: a fixed column order for a run. The
    recorded-input values only when asked (the surface+inputs models)."""
    names = {name for r in rows for name in r.features}
    return sorted(n for n in names if recorded or not n.startswith(RECORDED))


def eval_priors() -> dict[str, float]:
    """Each label's share of the eval split: the rate at which an evaluation meets it."""
    labels = [split_assignment("eval", s).label for s in split_seeds("eval")]
    return {label: labels.count(label) / len(labels) for label in ROOT_CAUSES}
