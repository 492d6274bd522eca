"""Tool specs and dispatch, generated from the typed signatures and docstrings in `env.tools`.

The model reads the docstring's first paragraph and its `Args:` lines; the JSON schema comes
from the signature through pydantic, so the contract is written once. `dispatch` validates a
raw JSON argument string and turns every failure into `{"error": ...}`: no tool raises.
"""

from __future__ import annotations

import inspect
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from functools import cache
from typing import Any, get_type_hints

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from env.tool_errors import ToolError
from env.tools import TOOL_NAMES, WRITE_TOOLS, BillingTools

# The contract's version (design §3): names and result shapes are frozen; an additive result
# field bumps it. 1: the nine tools as released; 2: `usage_units_before_change` in an invoice's
# billing inputs and a recompute's assumptions (world v4: usage split at a plan change); 3: the
# look-alikes' additive fields (get_customer: previous_tax_jurisdiction, tax_jurisdiction_since,
# exemption_certificate.jurisdiction); 4 (world v5): the event vocabulary gains `reactivated` (after
# a confirmed cancellation only a reactivation changes a subscription), and `usage_start` and
# `scheduled_from_plan` join an invoice's billing inputs and a recompute's assumptions (trial usage
# is not billed, usage before a scheduled change bills on the plan it was used on); 5 (world v5,
# same-shape look-alikes): get_customer gains `fx_rate_lock` (a documented contract rate: invoices
# issued in its window convert at the rate of its `rate_date`, null when none) and
# `account_credit` (an overpayment the customer keeps on account: `payment_id`, `amount`, `since`);
# `get_subscription_timeline` gains `usage_corrections` (period_start, period_end, units,
# recorded_at, reason: units a period's usage gained after its first count) and the event
# `plan_change_start_moved` (to_plan_id, starts, requested_by: the day an immediate change's money
# starts when it is not the day it was logged, moved later by the customer or agreed earlier with
# sales; billing prorates from `starts`); 6 (world v5, same-shape look-alikes): the timeline gains
# `place_of_supply` (jurisdiction, until, reason: a service site of the subscription's own, where
# its invoices issued before `until`, null while still there, are taxed; null when none);
# get_customer gains `seat_commitment` (subscription_id, seats, periods_from, periods_until: its
# invoices for periods starting in the window bill at least `seats` seats, null when none) and
# the event vocabulary gains `exemption_withheld` (certificate_id, issued_from, issued_until,
# reason: the subscription's invoices issued in the window are taxed although the certificate
# covers them); 7 (world v6, a balance that moves): `list_payments` gains `applied_from` (a
# payment of method `account_credit` pays part of its invoice from the kept overpayment it
# names; null otherwise), `get_invoice` gains `balance_applied` (the part of `amount_paid` drawn
# from account credit), and a usage correction's `recorded_at` is a UTC time (it was a day).
TOOL_CONTRACT_VERSION = 7
MAX_ARGUMENT_CHARS = 20_000
MAX_NUMBER_DIGITS = 30  # JSON numbers beyond 10**30 (or below 10**-30) are refused
_ARG_LINE = re.compile(r"^    (\w+): (.*)$")


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    arguments: type[BaseModel]
    writes: bool

    def openai(self) -> dict[str, Any]:
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": parameters_schema(self.arguments),
            },
        }


def parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """Splits a Google-style docstring into its first paragraph and per-argument text."""
    text = inspect.cleandoc(doc)
    summary, _, rest = text.partition("\n\n")
    body = rest.split("Args:\n", 1)[1] if "Args:\n" in rest else ""
    args: dict[str, str] = {}
    current = None
    for line in body.splitlines():
        match = _ARG_LINE.match(line)
        if match:
            current = match.group(1)
            args[current] = match.group(2).strip()
        elif current and line.startswith("        "):
            args[current] += " " + line.strip()
    description = " ".join(summary.split())
    extra = rest.split("Args:\n", 1)[0].strip()
    if extra:
        description += " " + " ".join(extra.split())
    return description, args


def _arguments_model(
    name: str, method: Callable[..., Any], docs: dict[str, str]
) -> type[BaseModel]:
    hints = get_type_hints(method, include_extras=True)
    fields: dict[str, Any] = {}
    for param in list(inspect.signature(method).parameters.values())[1:]:
        default = ... if param.default is inspect.Parameter.empty else param.default
        fields[param.name] = (hints[param.name], Field(default, description=docs[param.name]))
    config = ConfigDict(extra="forbid")
    return create_model(f"{name}_arguments", __config__=config, **fields)


def _inline(schema: Any, defs: dict[str, Any]) -> Any:
    if isinstance(schema, dict):
        if "$ref" in schema:
            return _inline(defs[schema["$ref"].rsplit("/", 1)[1]], defs)
        return {k: _inline(v, defs) for k, v in schema.items() if k not in ("title", "$defs")}
    if isinstance(schema, list):
        return [_inline(item, defs) for item in schema]
    return schema


def _simplify_optional(schema: dict[str, Any]) -> dict[str, Any]:
    """`anyOf: [X, null]` with default null -> X: optional is said by `required`, not by type."""
    props = schema.get("properties", {})
    for name, prop in props.items():
        options = prop.get("anyOf")
        if options and len(options) == 2 and {"type": "null"} in options:
            kept = next(o for o in options if o != {"type": "null"})
            props[name] = {
                **kept,
                **{k: v for k, v in prop.items() if k not in ("anyOf", "default")},
            }
    return schema


def parameters_schema(model: type[BaseModel]) -> dict[str, Any]:
    raw = model.model_json_schema()
    schema = _inline(raw, raw.get("$defs", {}))
    schema["additionalProperties"] = False
    return _simplify_optional(schema)


@cache
def tool_specs() -> tuple[ToolSpec, ...]:
    specs = []
    for name in TOOL_NAMES:
        method = getattr(BillingTools, name)
        description, docs = parse_docstring(method.__doc__ or "")
        model = _arguments_model(name, method, docs)
        specs.append(ToolSpec(name, description, model, name in WRITE_TOOLS))
    return tuple(specs)


@cache
def specs_by_name() -> dict[str, ToolSpec]:
    return {spec.name: spec for spec in tool_specs()}


@cache
def _openai_tools_json() -> str:
    return json.dumps([spec.openai() for spec in tool_specs()])


def openai_tools() -> list[dict[str, Any]]:
    """The nine specs in OpenAI function format; a fresh copy each call (callers may mutate)."""
    return json.loads(_openai_tools_json())  # type: ignore[no-any-return]


def _validation_message(name: str, exc: ValidationError) -> str:
    problems = []
    for error in exc.errors()[:5]:
        where = ".".join(str(part) for part in error["loc"]) or "arguments"
        problems.append(f"{where}: {error['msg']}")
    accepted = ", ".join(
        f"{field}{'' if info.is_required() else '?'}"
        for field, info in specs_by_name()[name].arguments.model_fields.items()
    )
    return f"invalid arguments for {name}: {'; '.join(problems)}. Accepted: {{{accepted}}}"


def _undecodable(arguments: dict[str, Any]) -> str | None:
    """The path of the first string (key or value) that cannot be encoded as UTF-8, if any."""
    stack: list[tuple[str, Any]] = [(str(key), value) for key, value in arguments.items()]
    stack.extend((key, key) for key in arguments)
    while stack:
        path, value = stack.pop()
        if isinstance(value, str):
            if not _encodable(value):
                return _encodable_text(path)
        elif isinstance(value, dict):
            stack.extend((f"{path}.{key}", v) for key, v in value.items())
            stack.extend((path, key) for key in value)
        elif isinstance(value, list):
            stack.extend((f"{path}[{i}]", v) for i, v in enumerate(value))
    return None


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _encodable_text(text: str) -> str:
    return text.encode("utf-8", "backslashreplace").decode("utf-8")[:60]


class _OutOfRange(ValueError):
    """A JSON number no tool argument can mean, and whose exact value is costly to expand:
    `1e999999999` as an exact decimal is a billion digits (and as seats, a billion-digit int)."""


def _decimal(text: str) -> Decimal:
    value = Decimal(text)
    if value.is_finite() and abs(value.adjusted()) > MAX_NUMBER_DIGITS:
        raise _OutOfRange(text[:40])
    return value


def _integer(text: str) -> int:
    if len(text.lstrip("-")) > MAX_NUMBER_DIGITS:
        raise _OutOfRange(text[:40] + ("..." if len(text) > 40 else ""))
    return int(text)


def dispatch(tools: BillingTools, name: object, raw_arguments: object) -> dict[str, Any]:
    """Runs one tool call from raw JSON text; returns its result or `{"error": ...}`."""
    if not isinstance(name, str):
        return {
            "error": f"unknown tool: the name must be a string, one of: {', '.join(TOOL_NAMES)}"
        }
    spec = specs_by_name().get(name)
    if spec is None:
        shown = _encodable_text(name)
        return {"error": f"unknown tool {shown!r}; available tools: {', '.join(TOOL_NAMES)}"}
    if not isinstance(raw_arguments, str) or len(raw_arguments) > MAX_ARGUMENT_CHARS:
        return {"error": f"arguments must be a JSON object string under {MAX_ARGUMENT_CHARS} chars"}
    try:  # numbers as exact decimals: 165.4899999999999999999 must not become 165.49
        parsed = json.loads(raw_arguments or "{}", parse_float=_decimal, parse_int=_integer)
    except _OutOfRange as exc:
        return {
            "error": f"number {exc} in the arguments of {name} is out of range; send numbers "
            f"of at most {MAX_NUMBER_DIGITS} digits, written without an exponent"
        }
    except (ValueError, RecursionError):  # ValueError also covers ints over 4300 digits
        return {"error": f"arguments for {name} are not valid JSON; send a JSON object"}
    if not isinstance(parsed, dict):
        return {"error": f"arguments for {name} must be a JSON object, not {type(parsed).__name__}"}
    broken = _undecodable(parsed)
    if broken is not None:
        return {
            "error": f"argument {broken} of {name} contains undecodable text (a lone UTF-16 "
            "surrogate such as \\ud800); send valid Unicode text"
        }
    try:
        arguments = spec.arguments.model_validate(parsed)
    except ValidationError as exc:
        return {"error": _validation_message(name, exc)}
    try:
        # the model's fields as keyword arguments (`dict(model)` is the same, built slower)
        return getattr(tools, name)(**arguments.__dict__)
    except ToolError as exc:
        return {"error": str(exc)}
    except Exception as exc:  # a bug of ours must not end the agent's episode
        return {"error": f"internal error in {name} ({type(exc).__name__}); try other arguments"}
