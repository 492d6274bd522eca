"""The findings an agent submits with `submit_findings` (design §3), validated at the edge.

Amounts are two-decimal strings outside and integer cents inside. A string such as "12.5", or a
JSON number that is exactly a two-decimal value (12.5, 12.40, 12.400), is read as "12.50"; a third
decimal (165.4899999999999999999 included: tool arguments are parsed as exact decimals, never
through a binary float), a sign or a separator is refused, not rounded. Ids match exactly (no
trailing newline). The findings are self-consistent: a fault label names at least one affected
invoice, `no_error` names none. Every refusal says what to send instead.
"""

from __future__ import annotations

import re
from decimal import Decimal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from env.engine.money import parse_amount
from env.labels import RootCause

INVOICE_ID = re.compile(r"INV-[0-9A-Z]{4,12}")  # used with fullmatch: no "$"-before-newline
MAX_ITEMS = 50
MAX_SUMMARY = 4000


def amount_text(value: object, name: str = "amount") -> str:
    """An amount argument as text, exactly: strings as given; JSON numbers (parsed as Decimal by
    the tool layer) without binary rounding, trailing zeros beyond the cents dropped."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool) or not isinstance(value, int | float | Decimal):
        raise ValueError(f"{name} must be a decimal string such as '12.40'")
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value)
    if not value.is_finite():
        raise ValueError(f"{name} must be a decimal string such as '12.40'")
    text = format(value, "f")
    if "." in text:
        whole, _, frac = text.partition(".")
        frac = frac.rstrip("0").ljust(2, "0") if len(frac) > 2 else frac
        text = f"{whole}.{frac}"
    return text


class AffectedInvoice(BaseModel):
    model_config = ConfigDict(extra="forbid")

    invoice_id: str = Field(description="Invoice id, e.g. 'INV-7F3K2Q'.")
    overcharge_amount: str = Field(
        description="Overcharge in the invoice currency, two decimals, e.g. '12.40'."
    )

    @field_validator("overcharge_amount", mode="before")
    @classmethod
    def _amount_as_text(cls, value: object) -> str:
        cents = parse_amount(amount_text(value, "overcharge_amount"))
        if cents <= 0:
            raise ValueError("overcharge_amount must be greater than 0.00")
        return f"{cents // 100}.{cents % 100:02d}"

    @field_validator("invoice_id")
    @classmethod
    def _invoice_id_shape(cls, value: str) -> str:
        if not INVOICE_ID.fullmatch(value):
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
    )
    summary: str = Field(default="", description="Short explanation citing tool evidence.")

    @field_validator("affected_invoices")
    @classmethod
    def _unique_invoices(cls, items: list[AffectedInvoice]) -> list[AffectedInvoice]:
        if len(items) > MAX_ITEMS:
            raise ValueError(
                f"affected_invoices lists {len(items)} invoices; at most {MAX_ITEMS} are accepted"
            )
        ids = [item.invoice_id for item in items]
        repeated = sorted({i for i in ids if ids.count(i) > 1})
        if repeated:
            raise ValueError(
                f"each invoice may be listed once in affected_invoices; {repeated[0]} is listed "
                "more than once: give one item per invoice with its whole overcharge"
            )
        return items

    @field_validator("summary")
    @classmethod
    def _summary_length(cls, value: str) -> str:
        if len(value) > MAX_SUMMARY:
            raise ValueError(
                f"summary is {len(value)} characters; shorten it to at most {MAX_SUMMARY}"
            )
        return value

    @model_validator(mode="after")
    def _consistent(self) -> Findings:
        if self.root_cause == "no_error" and self.affected_invoices:
            raise ValueError(
                "root_cause no_error cannot list affected invoices: send affected_invoices [] "
                "or name the root cause of the overcharge"
            )
        if self.root_cause != "no_error" and not self.affected_invoices:
            raise ValueError(
                f"root_cause {self.root_cause} needs at least one affected invoice with its "
                "overcharge; send no_error if nothing was overcharged"
            )
        return self
