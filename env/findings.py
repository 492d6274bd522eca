"""The findings an agent submits with `submit_findings` (design §3), validated at the edge.

Amounts are two-decimal strings outside and integer cents inside; a number such as 12.5 is
accepted and read as "12.50", but a third decimal or a sign is refused, not rounded.
"""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict, Field, field_validator

from env.labels import RootCause
from env.money import parse_amount

INVOICE_ID = re.compile(r"^INV-[0-9A-Z]{4,12}$")


class AffectedInvoice(BaseModel):
    model_config = ConfigDict(extra="forbid")

    invoice_id: str = Field(description="Invoice id, e.g. 'INV-7F3K2Q'.")
    overcharge_amount: str = Field(
        description="Overcharge in the invoice currency, two decimals, e.g. '12.40'."
    )

    @field_validator("overcharge_amount", mode="before")
    @classmethod
    def _amount_as_text(cls, value: object) -> str:
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            raise ValueError("overcharge_amount must be a decimal string such as '12.40'")
        text = value if isinstance(value, str) else repr(value)
        cents = parse_amount(text)
        if cents <= 0:
            raise ValueError("overcharge_amount must be greater than 0.00")
        return f"{cents // 100}.{cents % 100:02d}"

    @field_validator("invoice_id")
    @classmethod
    def _invoice_id_shape(cls, value: str) -> str:
        if not INVOICE_ID.match(value):
            raise ValueError(f"invoice_id {value[:40]!r} is not an invoice id like 'INV-7F3K2Q'")
        return value

    @property
    def overcharge_cents(self) -> int:
        return parse_amount(self.overcharge_amount)


class Findings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    root_cause: RootCause = Field(description="One root-cause label.")
    affected_invoices: list[AffectedInvoice] = Field(
        default_factory=list,
        description="Every overcharged invoice with its overcharge; empty for no_error.",
        max_length=50,
    )
    summary: str = Field(
        default="", description="Short explanation citing tool evidence.", max_length=4000
    )

    @field_validator("affected_invoices")
    @classmethod
    def _unique_invoices(cls, items: list[AffectedInvoice]) -> list[AffectedInvoice]:
        ids = [item.invoice_id for item in items]
        if len(ids) != len(set(ids)):
            raise ValueError("each invoice may be listed once in affected_invoices")
        return items
