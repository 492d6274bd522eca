"""Which parts of the tool outputs are evidence, and which are echoes of the agent's own input.

Design §5, "Echoes are never evidence" (rewards/README.md G1): a value a tool returns because
the agent supplied it does not make a number traceable. Per tool call (`split_call`):
- an error output, and the `submit_findings` output, are neither evidence nor echo;
- a `draft_credit_note` result repeats the amount and reason it was given: all echo;
- every other output is evidence, except
  - any value equal to one the agent passed in that call's arguments (a date or jurisdiction
    passed to a look-up, every `recompute_invoice` override, dates included, a list filter,
    wherever the output repeats it: `assumptions`, `tax.rate`, line quantities and text),
    except a found look-up (G1.1): the key a tool resolved to a record (`LOOKUP_KEYS`: the
    invoice id `get_invoice` or `recompute_invoice` returned, the customer id of
    `get_customer`, `list_invoices`, `list_payments`, the subscription id of the timeline, the
    invoice id `list_payments` was filtered by) is a found fact of that output;
  - in `get_invoice`, this episode's own credit notes (amount, reason) and `amount_credited`,
    a sum over them, once the episode has drafted any.
Derived values stay evidence: a recompute's lines, tax, total and difference under an override
are the billing engine's answer, and are how an agent proves an overcharge.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from env.ledger_env import ToolRecord


@dataclass(frozen=True)
class CallParts:
    """One tool call split for the provenance check: output texts that are evidence, texts that
    are echoes, and the agent's own argument values (removed from this call's evidence)."""

    evidence: tuple[Any, ...]
    echo: tuple[Any, ...]
    arguments: tuple[Any, ...]


_NOTHING = CallParts((), (), ())

# G1.1: the argument of each tool that names the record it resolves. Found when the call is no
# error and the output's own top-level field of that name repeats it exactly; list_payments'
# invoice filter is checked by the tool (an unknown invoice is an error) and has no such field.
LOOKUP_KEYS: dict[str, tuple[str, ...]] = {
    "get_customer": ("customer_id",),
    "list_invoices": ("customer_id",),
    "get_invoice": ("invoice_id",),
    "list_payments": ("customer_id", "invoice_id"),
    "get_subscription_timeline": ("subscription_id",),
    "recompute_invoice": ("invoice_id",),
}
_FILTER_KEYS = frozenset({("list_payments", "invoice_id")})


def _json(text: str, **options: Any) -> Any:
    try:
        return json.loads(text, **options)
    except (ValueError, RecursionError):
        return text


def drafted_note_ids(tool_log: Iterable[ToolRecord]) -> frozenset[str]:
    """Credit notes this episode drafted, as their ids (read from the draft results; the
    grader reads them from the database diff instead)."""
    ids = set()
    for record in tool_log:
        if record.name == "draft_credit_note" and not record.is_error:
            data = _json(record.result)
            note = data.get("credit_note") if isinstance(data, dict) else None
            if isinstance(note, dict) and isinstance(note.get("credit_note_id"), str):
                ids.add(note["credit_note_id"])
    return frozenset(ids)


def _without_own_notes(data: Any, own: frozenset[str]) -> tuple[Any, tuple[Any, ...]]:
    """(the invoice without this episode's notes, what was taken out): G1, own notes echo."""
    if not own or not isinstance(data, dict) or not isinstance(data.get("credit_notes"), list):
        return data, ()
    mine = [
        n for n in data["credit_notes"] if isinstance(n, dict) and n.get("credit_note_id") in own
    ]
    if not mine:
        return data, ()
    kept = {key: value for key, value in data.items() if key != "amount_credited"}
    kept["credit_notes"] = [n for n in data["credit_notes"] if n not in mine]
    return kept, (*mine, data.get("amount_credited"))


def split_call(record: ToolRecord, own_notes: frozenset[str]) -> CallParts:
    """One call's evidence, echo and arguments under G1 (the module docstring's list)."""
    if record.is_error or record.name == "submit_findings":
        return _NOTHING  # G1: neither evidence nor echo
    data = _json(record.result)
    if record.name == "draft_credit_note":
        return CallParts((), (data,), ())  # G1: repeats what it was given, all echo
    arguments = _free_arguments(
        record.name, _json(record.arguments or "{}", parse_float=Decimal), data
    )
    removed: tuple[Any, ...] = ()
    if record.name == "get_invoice":
        data, removed = _without_own_notes(data, own_notes)
    return CallParts((data,), removed, (arguments,))


def _free_arguments(name: str, arguments: Any, data: Any) -> Any:
    """The arguments less the found look-ups (G1.1): what stays is echoed wherever shown."""
    if not isinstance(arguments, dict) or not isinstance(data, dict):
        return arguments
    found = {
        key
        for key in LOOKUP_KEYS.get(name, ())
        if isinstance(arguments.get(key), str)
        and ((name, key) in _FILTER_KEYS or data.get(key) == arguments[key])
    }
    return {key: value for key, value in arguments.items() if key not in found}


def split_log(tool_log: Iterable[ToolRecord]) -> list[CallParts]:
    """Every call of the episode, in call order (indices are the `sources` of a trace)."""
    log = tuple(tool_log)
    own = drafted_note_ids(log)
    return [split_call(record, own) for record in log]


def examined_invoices(tool_log: Iterable[ToolRecord]) -> dict[int, str]:
    """rewards/README.md G11.2: the calls that read an invoice's own record, by index in the
    log, with that invoice: a `get_invoice` or `recompute_invoice` result, not an error, whose
    `invoice_id` is the invoice's."""
    seen = {}
    for index, record in enumerate(tool_log):
        if record.is_error or record.name not in ("get_invoice", "recompute_invoice"):
            continue
        data = _json(record.result)
        if isinstance(data, dict) and isinstance(data.get("invoice_id"), str):
            seen[index] = data["invoice_id"]
    return seen
