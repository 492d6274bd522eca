"""Which tool outputs count as evidence: what the environment told the agent, not its own echo.

Two tools echo the agent's arguments back: `draft_credit_note` repeats the amount it was given,
and `recompute_invoice` lists overridden inputs under `assumptions`. Counting those would let
an agent launder an invented number ("credit 500.00, then cite 500.00"), so they are removed
before the provenance check. Everything else the tools print is evidence, free text included.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

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


def _without_echo(result: str) -> str:
    try:
        data = json.loads(result)
    except json.JSONDecodeError:
        return result
    if not isinstance(data, dict) or not isinstance(data.get("assumptions"), dict):
        return result
    assumptions = data["assumptions"]
    for name in data.get("overrides_applied", []):
        path = _ECHOED.get(name)
        if path is None:
            continue
        holder = assumptions
        for key in path[:-1]:
            holder = holder.get(key, {}) if isinstance(holder, dict) else {}
        if isinstance(holder, dict):
            holder.pop(path[-1], None)
    return json.dumps(data, ensure_ascii=False)


def evidence_outputs(tool_log: Iterable[ToolRecord]) -> list[str]:
    outputs = []
    for record in tool_log:
        if record.is_error or record.name == "draft_credit_note":
            continue
        if record.name == "recompute_invoice":
            outputs.append(_without_echo(record.result))
        else:
            outputs.append(record.result)
    return outputs
