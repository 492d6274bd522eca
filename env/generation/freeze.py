"""Freezing a world draft (`env.generation.world`) into the bytes of its SQLite database.

The schema is `data/schema.sql`; every row is written in the draft's order, and the image's
header is zeroed where SQLite stamps it, so the same draft always gives the same bytes. The
payments written are the draft's as recorded (`WorldDraft.recorded_payments`: a kept balance's
applications with them).
"""

from __future__ import annotations

import json
import sqlite3
from functools import cache
from importlib import resources

from env.engine.records import inputs_to_json
from env.generation.world import WorldDraft


@cache
def _schema() -> str:
    return resources.files("env.generation").joinpath("data/schema.sql").read_text(encoding="utf-8")


@cache
def _empty_image() -> bytes:
    """The schema alone, built once: parsing it for every scenario was half of `freeze`."""
    db = sqlite3.connect(":memory:")
    db.execute("PRAGMA page_size = 1024")  # small images: reset is a copy of these bytes
    db.executescript(_schema())
    image = db.serialize()
    db.close()
    return image


def freeze(draft: WorldDraft) -> bytes:
    """Writes the draft into a fresh in-memory SQLite database and returns its image."""
    db = sqlite3.connect(":memory:")
    db.deserialize(_empty_image())
    c = draft.customer
    cert = c.exemption or (None, None, None)
    db.execute(
        "INSERT INTO customers VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
        (
            c.id,
            c.name,
            c.email,
            c.company,
            c.country,
            c.region,
            c.tax_jurisdiction,
            c.timezone,
            c.currency,
            *cert,
            c.notes,
            c.created_at,
            c.previous_jurisdiction,
            c.jurisdiction_since,
            (c.exemption_jurisdiction or c.tax_jurisdiction) if c.exemption else None,
            *(c.fx_lock or (None, None, None, None)),
            *(c.kept_credit or (None, None, None)),
            *(c.seat_commitment or (None, None, None, None)),
        ),
    )
    for p in draft.plans:
        db.execute(
            "INSERT INTO plans VALUES (?,?,?,?,?,?,?,?)",
            (
                p.id,
                p.name,
                p.interval,
                "per_seat" if p.per_seat else "flat",
                p.trial_days,
                p.included_units,
                p.overage_unit_price_cents,
                p.unit_name,
            ),
        )
        db.executemany(
            "INSERT INTO plan_prices VALUES (?,?,?,?)", [(p.id, *price) for price in p.prices]
        )
    db.executemany(
        "INSERT INTO coupons VALUES (?,?,?,?,?,?,?)",
        [
            (
                k.code,
                k.percent_off,
                k.amount_off_cents,
                k.valid_from,
                k.valid_until,
                k.duration,
                k.duration_periods,
            )
            for k in draft.coupons
        ],
    )
    for s in draft.subscriptions:
        db.execute(
            "INSERT INTO subscriptions VALUES (?,?,?,?,?,?,?,?)",
            (
                s.id,
                s.customer_id,
                s.plan_id,
                s.seats,
                s.status,
                s.coupon_code,
                s.started_at,
                s.anchor_day,
            ),
        )
        db.executemany(
            "INSERT INTO subscription_events VALUES (?,?,?,?,?)",
            [
                (s.id, i + 1, e.occurred_at, e.type, json.dumps(e.details, sort_keys=True))
                for i, e in enumerate(s.events)
            ],
        )
        db.executemany("INSERT INTO usage_records VALUES (?,?,?,?)", [(s.id, *u) for u in s.usage])
        db.executemany(
            "INSERT INTO usage_corrections VALUES (?,?,?,?,?,?)",
            [(s.id, *u) for u in s.usage_corrections],
        )
        if s.supply_site is not None:
            db.execute("INSERT INTO supply_sites VALUES (?,?,?,?)", (s.id, *s.supply_site))
    db.executemany("INSERT INTO tax_rates VALUES (?,?,?,?)", draft.tax_rates)
    db.executemany("INSERT INTO fx_rates VALUES (?,?,?,?)", draft.fx_rates)
    for inv in draft.invoices:
        amounts = inv.billed_amounts()
        db.execute(
            "INSERT INTO invoices VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                inv.id,
                inv.customer_id,
                inv.subscription_id,
                inv.billed.period_start.isoformat(),
                inv.billed.period_end.isoformat(),
                inv.issued_at,
                inv.billed.currency,
                inv.status,
                inv.memo,
                inputs_to_json(inv.billed),
                amounts.subtotal_cents,
                amounts.discount_cents,
                amounts.tax_cents,
                amounts.total_cents,
            ),
        )
        db.executemany(
            "INSERT INTO invoice_lines VALUES (?,?,?,?,?)",
            [
                (inv.id, n + 1, line.description, line.quantity, line.amount_cents)
                for n, line in enumerate(amounts.lines)
            ],
        )
    db.executemany(
        "INSERT INTO payments VALUES (?,?,?,?,?,?,?,?,?)",
        [
            (
                p.id,
                p.invoice_id,
                p.customer_id,
                p.amount_cents,
                p.currency,
                p.paid_at,
                p.method,
                p.status,
                p.applied_from,
            )
            for p in draft.recorded_payments()
        ],
    )
    db.executemany(
        "INSERT INTO credit_notes VALUES (?,?,?,?,?,?,?,?)",
        [
            (n.id, n.invoice_id, n.amount_cents, n.currency, n.reason, n.status, None, n.created_at)
            for n in draft.credit_notes
        ],
    )
    if draft.dispute:
        db.execute(
            "INSERT INTO disputes VALUES (?,?,?,?)", (draft.dispute[0], c.id, *draft.dispute[1:])
        )
    db.commit()
    image = bytearray(db.serialize())
    db.close()
    # A deserialized database stamps its header's change counter (bytes 24-27) and
    # version-valid-for / library version (92-99) on commit; a plain :memory: one never did.
    # Zeroed, the image is byte-identical to one built from the schema script every time.
    image[24:28] = bytes(4)
    image[92:100] = bytes(8)
    return bytes(image)
