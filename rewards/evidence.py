"""Which tool outputs count as evidence: what the environment told the agent, not its own echo.

Three kinds of output repeat what the agent wrote, and counting them would let it launder an
invented number ("credit 500.00, then cite 500.00"), so they are removed before the provenance
check; everything else the tools print is evidence, free text included:
- `draft_credit_note` results repeat the amount and reason it was given (dropped whole);
- `get_invoice` lists this episode's credit notes (amount, reason) and their sum
  (`amount_credited`): the notes and the sum are dropped once the agent has drafted any;
- `recompute_invoice` echoes overridden inputs under `assumptions`, the overridden tax rate
  under `tax.rate`, and overridden counts (seats, usage units, included units) in its line
  quantities and descriptions; those values are dropped, derived amounts are kept.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

from env.ledger_env import ToolRecord

# recompute override -> the `assumptions` key that echoes it (numbers only; ids and dates are
# not worth laundering: a made-up one fails the grader's exact-match anyway)
_ECHOED = {
    "seats": ("seats",),
    "tax_rate": ("tax_rate",),
    "fx_rate": ("fx_rate",),
    "usage_units": ("usage_units",),
    "included_units": ("plan", "included_units"),
}
_COUNTS = ("seats", "usage_units", "included_units")


def _pop(holder: Any, path: tuple[str, ...]) -> Any:
    for key in path[:-1]:
        holder = holder.get(key, {}) if isinstance(holder, dict) else {}
    return holder.pop(path[-1], None) if isinstance(holder, dict) else None


def _drop_counts(lines: Any, counts: set[int]) -> None:
    """Removes echoed counts from line quantities and descriptions ("x 97 seats")."""
    if not counts or not isinstance(lines, list):
        return
    pattern = re.compile(r"(?<![\w.,])(?:" + "|".join(map(str, counts)) + r")(?![\w.]|,[0-9])")
    for line in lines:
        if not isinstance(line, dict):
            continue
        if line.get("quantity") in counts:
            line.pop("quantity")
        if isinstance(line.get("description"), str):
            line["description"] = pattern.sub("#", line["description"])


def _without_recompute_echo(result: str) -> str:
    try:
        data = json.loads(result)
    except json.JSONDecodeError:
        return result
    if not isinstance(data, dict) or not isinstance(data.get("assumptions"), dict):
        return result
    overridden = [n for n in data.get("overrides_applied", []) if isinstance(n, str)]
    counts: set[int] = set()
    for name in overridden:
        if name in _ECHOED:
            value = _pop(data["assumptions"], _ECHOED[name])
            if name in _COUNTS and isinstance(value, int) and not isinstance(value, bool):
                counts.add(value)
    if "tax_rate" in overridden and isinstance(data.get("tax"), dict):
        data["tax"].pop("rate", None)
    _drop_counts(data.get("lines"), counts)
    return json.dumps(data, ensure_ascii=False)


def _without_own_notes(result: str, own_notes: set[str]) -> str:
    if not any(note in result for note in own_notes):
        return result
    try:
        data = json.loads(result)
    except json.JSONDecodeError:
        return result
    if not isinstance(data, dict) or not isinstance(data.get("credit_notes"), list):
        return result
    data["credit_notes"] = [
        n
        for n in data["credit_notes"]
        if not (isinstance(n, dict) and n.get("credit_note_id") in own_notes)
    ]
    data.pop("amount_credited", None)  # a sum over the agent's own amounts
    return json.dumps(data, ensure_ascii=False)


def _drafted_note_ids(tool_log: Iterable[ToolRecord]) -> set[str]:
    ids = set()
    for record in tool_log:
        if record.name == "draft_credit_note" and not record.is_error:
            note = json.loads(record.result).get("credit_note", {})
            if isinstance(note, dict) and isinstance(note.get("credit_note_id"), str):
                ids.add(note["credit_note_id"])
    return ids


def evidence_outputs(tool_log: Iterable[ToolRecord]) -> list[str]:
    log = tuple(tool_log)
    own_notes = _drafted_note_ids(log)
    outputs = []
    for record in log:
        if record.is_error or record.name == "draft_credit_note":
            continue
        if record.name == "recompute_invoice":
            outputs.append(_without_recompute_echo(record.result))
        elif record.name == "get_invoice" and own_notes:
            outputs.append(_without_own_notes(record.result, own_notes))
        else:
            outputs.append(record.result)
    return outputs
