"""What a fault module returns, and small helpers for writing reference investigations.

A fault builds its story with `WorldBuilder`, bills it correctly, then changes what was billed.
It returns the evidence a careful agent would gather (tool calls whose outputs show every
overcharge literally) and a summary citing only numbers those outputs contain.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from env.generation.story import Story
from env.generation.world import Invoice
from env.scenario import ToolCall


@dataclass
class FaultOutcome:
    label: str
    story: Story
    focus: list[Invoice]  # invoices the reference inspects (affected first, then decoys)
    evidence: list[ToolCall]  # fault-specific calls after the common opening look-ups
    summary: str
    slots: dict[str, Any] = field(default_factory=dict)  # complaint template values
    traps: list[str] = field(default_factory=list)
    variant: str = ""  # which flavour of the fault (for tables and debugging)


def call(name: str, **arguments: Any) -> ToolCall:
    return ToolCall(name, arguments)


def recompute(invoice: Invoice, **overrides: Any) -> ToolCall:
    return ToolCall("recompute_invoice", {"invoice_id": invoice.id, **overrides})
