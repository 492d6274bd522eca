"""Where a failed episode went wrong: its first wrong step and the evidence it had read by then.

An episode is diagnosed when it is not a grounded success (not a success, where the log predates
grounded success). Its first wrong step is the first credit note it drafted that the truth does
not hold (an invoice and amount of `expected_credits`, each usable once), or else the last read
before its wrong verdict (the accepted `submit_findings`; the end of the episode when it never
submitted). The evidence is the truth's reference reads, each marked made or not by then; the
first one not made is the episode's first missing fact, named by tool and argument kind
(`get_invoice(faulted invoice)`, `recompute_invoice(faulted invoice, plan_id)`), so failures of
different scenarios cluster together. The truth comes from regenerating the line's (split, seed),
as the viewer does; a run stamped by another generator, or a line whose label the regenerated
scenario does not share, is not diagnosed (its reason is recorded).
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from env.engine.money import BadAmount, parse_amount
from env.scenario import ToolCall, Truth, reveal_truth
from env.tools import READ_TOOLS, TERMINAL_TOOLS, WRITE_TOOLS
from eval.report.episode_view import grade_value, grounded
from eval.report.load import EpisodeLine, RunData

# the terminal error classes, most decisive first: an episode gets the first that fits
ERROR_CLASSES = (
    "error (no grade)",
    "no submit",
    "false reversal",
    "wrong root cause",
    "wrong invoices",
    "wrong amount",
    "wrong credit",
    "books changed",
    "untraceable number",
    "no_error without reading a disputed invoice",
    "no found fact",
)
# what names the subject of a read, per tool (recompute_invoice adds its override names)
_SUBJECT = {
    "get_customer": "customer_id",
    "list_invoices": "customer_id",
    "get_invoice": "invoice_id",
    "list_payments": "invoice_id",
    "get_subscription_timeline": "subscription_id",
    "get_tax_rate": "jurisdiction",
    "recompute_invoice": "invoice_id",
}
_KIND = {
    "customer_id": "customer",
    "subscription_id": "subscription",
    "jurisdiction": "jurisdiction",
}


@dataclass(frozen=True)
class Step:
    """The first wrong step: `index` into the tool log (None when the episode made no call)."""

    kind: (
        str  # "wrong write" | "last read before the verdict" | "last read, no verdict" | "no read"
    )
    index: int | None
    tool: str | None
    arguments: dict[str, Any]


@dataclass(frozen=True)
class Evidence:
    fact: str  # tool(argument kind): what clusters failures across scenarios
    arguments: dict[str, Any]
    made: bool


@dataclass(frozen=True)
class Diagnosis:
    step: Step
    evidence: tuple[Evidence, ...]

    @property
    def first_missing(self) -> str | None:
        return next((item.fact for item in self.evidence if not item.made), None)


def is_diagnosed(line: EpisodeLine) -> bool:
    """Every episode that is not a grounded success (not a success, in logs before grounding)."""
    verdict = grounded(line)
    return not line.success if verdict is None else not verdict


def error_class(line: EpisodeLine) -> str:
    """The terminal error: the first of ERROR_CLASSES that the line's grade shows."""
    if line.error is not None or not line.grade:
        return ERROR_CLASSES[0]
    checks = (
        not grade_value(line, "submitted"),
        bool(grade_value(line, "false_reversal")),
        not grade_value(line, "label_correct"),
        not grade_value(line, "invoices_correct"),
        not grade_value(line, "amounts_correct"),
        not grade_value(line, "credits_correct"),
        not grade_value(line, "database_clean"),
        bool(grade_value(line, "hallucinated_numbers")),
        grade_value(line, "investigated") is False,
    )
    hits = zip(ERROR_CLASSES[1:], checks, strict=False)  # the last class is what is left
    return next((name for name, hit in hits if hit), ERROR_CLASSES[-1])


def arguments_of(call: dict[str, Any]) -> dict[str, Any]:
    """A logged call's arguments (JSON text as the model sent it); {} when they do not parse."""
    raw = call.get("arguments")
    if isinstance(raw, dict):
        return raw
    try:
        value = json.loads(raw) if isinstance(raw, str) else None
    except json.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


def _norm(arguments: dict[str, Any]) -> dict[str, str]:
    return {k: str(v).strip().upper() for k, v in arguments.items() if v is not None}


def covers(call: dict[str, Any], reference: ToolCall) -> bool:
    """Did this logged call read what the reference call reads? Same tool, same arguments
    (ids compared case-blind), and no error; list_payments without an invoice filter covers the
    filtered call (it shows every payment of the customer)."""
    if call.get("name") != reference.name or call.get("is_error"):
        return False
    made, wanted = _norm(arguments_of(call)), _norm(reference.arguments)
    if reference.name == "list_payments" and "invoice_id" not in made:
        wanted.pop("invoice_id", None)
    return made == wanted


def _invoice_kind(invoice: str, truth: Truth) -> str:
    if invoice in truth.overcharges:
        return "faulted invoice"
    if invoice in truth.disputed_invoices:
        return "disputed invoice"
    return "other invoice"


def fact_name(reference: ToolCall, truth: Truth) -> str:
    """`tool(argument kind)`: the fact a reference read establishes, free of this scenario's ids."""
    key = _SUBJECT.get(reference.name, "")
    value = reference.arguments.get(key)
    if key == "invoice_id":
        kind = "customer" if value is None else _invoice_kind(str(value), truth)
    else:
        kind = _KIND.get(key, key or "no argument")
    overrides = sorted(k for k in reference.arguments if k != "invoice_id")
    if reference.name == "recompute_invoice" and overrides:
        kind += ", " + "+".join(overrides)
    return f"{reference.name}({kind})"


def _wrong_write(tool_log: list[dict[str, Any]], truth: Truth) -> int | None:
    """The first credit note drafted that the truth does not hold (each true note used once)."""
    left = Counter(truth.expected_credits.items())
    for index, call in enumerate(tool_log):
        if call.get("name") not in WRITE_TOOLS or call.get("is_error"):
            continue  # a refused note wrote nothing
        arguments = arguments_of(call)
        try:
            note = (
                str(arguments.get("invoice_id", "")).upper(),
                parse_amount(str(arguments["amount"])),
            )
        except (KeyError, BadAmount):
            return index
        if left[note] <= 0:
            return index
        left[note] -= 1
    return None


def first_wrong_step(tool_log: list[dict[str, Any]], truth: Truth) -> Step:
    """The first wrong write, or else the last read before the verdict (or the end)."""
    written = _wrong_write(tool_log, truth)
    if written is not None:
        call = tool_log[written]
        return Step("wrong write", written, str(call.get("name")), arguments_of(call))
    verdict = next(
        (
            i
            for i, call in enumerate(tool_log)
            if call.get("name") in TERMINAL_TOOLS and not call.get("is_error")
        ),
        None,
    )
    before = tool_log if verdict is None else tool_log[:verdict]
    reads = [i for i, call in enumerate(before) if call.get("name") in READ_TOOLS]
    if not reads:
        tool = None if verdict is None else str(tool_log[verdict].get("name"))
        return Step("no read", verdict, tool, {})
    kind = "last read, no verdict" if verdict is None else "last read before the verdict"
    call = tool_log[reads[-1]]
    return Step(kind, reads[-1], str(call.get("name")), arguments_of(call))


def diagnose(tool_log: list[dict[str, Any]], truth: Truth) -> Diagnosis:
    """The first wrong step and which reference reads the episode had made by then (a wrong
    write: the calls before it; a read: up to and including it)."""
    step = first_wrong_step(tool_log, truth)
    if step.index is None:
        seen: list[dict[str, Any]] = []
    else:
        seen = tool_log[: step.index + (step.kind != "wrong write")]
    evidence = tuple(
        Evidence(fact_name(ref, truth), dict(ref.arguments), any(covers(c, ref) for c in seen))
        for ref in truth.reference
        if ref.name in READ_TOOLS
    )
    return Diagnosis(step, evidence)


@lru_cache(maxsize=4096)
def _truth(split: str, seed: int) -> Truth:
    """The truth only: the samples of a scenario share it, and its database is not needed."""
    from env.generation.generator import generate

    return reveal_truth(generate(split, seed))


@lru_cache(maxsize=1)
def _current_generator() -> str:
    from env.versions import generator_hash

    return generator_hash()


def truth_for(run: RunData, line: EpisodeLine) -> tuple[Truth | None, str | None]:
    """(the line's truth, or why there is none to diagnose it against)."""
    stamped = run.config.get("generator")
    if stamped is not None and stamped != _current_generator():
        return None, "run made by another generator"
    if line.tool_log is None:
        return None, "no tool log in this line"
    try:
        truth = _truth(line.split, line.seed)
    except Exception:  # an unknown split or seed: the episode keeps its error class only
        return None, "scenario not regenerable"
    if truth.label != line.label:
        return None, "the regenerated scenario has another label"
    return truth, None
