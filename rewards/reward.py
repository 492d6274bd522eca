"""The training reward (design §5): shaped and binary, computed by code from the episode record.

`compute_reward(truth, record, config)` is pure: scenario truth + final database + findings +
tool outputs -> `RewardBreakdown` with every term, the total and the flags. Both variants
return the same breakdown, so logs compare across runs. rewards/README.md has the terms with an
example each and the grounding rules G1-G11 cited below. Decisions beyond the design:
- the evidence term needs a chain with a found fact (G4): at least one cited number found in a
  tool output that is not an echo of the agent's input; counts ("3 invoices"), times and the
  findings' own total never make a chain alone, so "no_error" guessed without looking is not free;
- echoes are never evidence (G1) and every number-like token is read whatever its notation,
  failing closed (G2) (`rewards.numbers`, `rewards.evidence`, `rewards.provenance`);
- the evidence term is paid for a chain that supports a right answer: label and amounts both
  right. Paid for any traceable findings, it lifted wrong answers above half marks (right
  label + a shown but wrong amount: 0.35 + 0.20; right amounts + wrong label + credits: 0.65;
  a no_error guess after one call: 0.20 on every faulted case; see `checks/hacks/cheats.py`).
  Grounding is still taught on wrong answers by the hallucination penalty (0 against -0.5);
- the amounts term also needs the episode to have acted as it reported: the credit notes
  drafted this episode equal the reported amounts (none for no_error). Otherwise a policy that
  investigates perfectly and never credits anything keeps 0.35 + 0.35 + 0.20 = 0.90 against a
  0.10 action term, and "never act" becomes a strategy (see `never_credit` in the suite);
  with it, that policy gets 0.35, and right amounts under a wrong label at most 0.45;
- the binary variant is grounded success (design §6): eval success, no untraceable or
  echo-only number, and an evidence chain with at least one found fact (G8, `rewards.provenance`);
  the grader computes the same verdict with its own code, `python -m checks.agreement` checks it
  (G9). With lambda > 0 it is 1 - lambda x calls for a grounded success, -lambda x calls
  otherwise (design §5, third release); the breakdown carries lambda (`config`) and `tool_calls`;
- a number no tool printed is grounded by a right calculation on found facts written in the
  summary, and a wrong calculation is a hallucination (G10, `rewards.derived`);
- a `no_error` verdict earns the root-cause, amounts, action and evidence terms, and grounded
  success, only when its summary cites a found fact of a disputed invoice's own record, as a
  read of it showed (G11): a blind guess, or a read with nothing of it cited, earns nothing;
- amounts are right only when the reported map equals the truth exactly, so an amount
  claimed for an unaffected invoice is a wrong amount (and costs the extra-invoice penalty).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from decimal import Decimal
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from env.episode import EpisodeRecord, drafted_credits
from env.scenario import Truth
from rewards.claims import episode_claims
from rewards.evidence import examined_invoices
from rewards.provenance import ProvenanceReport, trace_episode

Variant = Literal["shaped", "binary"]


class RewardConfig(BaseModel):
    """Reward settings as a run records them; defaults are the design's weights."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    variant: Variant = "shaped"
    root_cause: float = Field(0.35, description="root cause correct")
    amounts: float = Field(0.35, description="exact per-invoice overcharges, none wrong")
    action: float = Field(0.10, description="credit notes equal the true overcharges")
    evidence: float = Field(
        0.20, description="every cited number traceable, for a right label and amounts"
    )
    false_reversal: float = Field(-1.0, description="any invoice credited beyond its overcharge")
    hallucination: float = Field(-0.5, description="any cited number not traceable")
    extra_invoice: float = Field(-0.10, description="each unaffected invoice beyond the first")
    tool_call_cost: float = Field(0.0, ge=0.0, description="lambda: cost per tool call")


@dataclass(frozen=True)
class RewardBreakdown:
    variant: str
    total: float
    terms: dict[str, float]
    false_reversal: bool
    hallucinated_numbers: bool
    submitted: bool
    truncated: bool
    success: bool  # the eval-success conditions as the reward sees them
    untraceable: tuple[str, ...] = ()
    credits: dict[str, int] = field(default_factory=dict)
    config: dict[str, object] = field(default_factory=dict)
    grounded: bool = False  # success with traceable findings and a found fact: the binary reward
    investigated: bool = True  # G11: not a no_error verdict, or it read a disputed invoice
    tool_calls: int = 0  # what `tool_cost` charged lambda (config["tool_call_cost"]) for

    def as_metrics(self) -> dict[str, float]:
        """Flat numbers for logging (trajectory metrics must be numbers or bools)."""
        metrics = {f"reward/{name}": value for name, value in self.terms.items()}
        metrics.update(
            {
                "reward/total": self.total,
                "false_reversal": float(self.false_reversal),
                "hallucinated_numbers": float(self.hallucinated_numbers),
                "submitted": float(self.submitted),
                "truncated": float(self.truncated),
                "reward_success": float(self.success),
                "reward_grounded_success": float(self.grounded),
                "reward_investigated": float(self.investigated),
            }
        )
        return metrics

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


def _over_credited(truth: Truth, credits: dict[str, int]) -> bool:
    # credits are summed per invoice before this check: many small notes must not dodge it
    return any(cents > truth.overcharges.get(invoice, 0) for invoice, cents in credits.items())


def compute_reward(
    truth: Truth, record: EpisodeRecord, config: RewardConfig | None = None
) -> RewardBreakdown:
    config = config or RewardConfig()
    credits = drafted_credits(record.final_database, record.episode_id)
    false_reversal = _over_credited(truth, credits)
    findings = record.findings
    terms = dict.fromkeys(
        (
            "root_cause",
            "amounts",
            "action",
            "evidence",
            "false_reversal",
            "hallucination",
            "extra_invoices",
            "tool_cost",
        ),
        0.0,
    )
    untraceable: tuple[str, ...] = ()
    label_right = amounts_right = action_right = chain = False
    investigated = True
    if findings is not None:
        claims = episode_claims(record.final_database)  # G3.1: the complaint is a claim
        report = trace_episode(findings, record.tool_log, claims)  # rewards/README.md G1-G10
        untraceable = tuple(number.raw for number in report.untraceable)  # hallucinated: G8
        chain = report.grounded  # traceable and a chain with a found fact: G8, G4
        reported = {item.invoice_id: item.overcharge_cents for item in findings.affected_invoices}
        label_right = findings.root_cause == truth.label
        # what the findings say must also be what the episode did (module docstring)
        amounts_right = reported == truth.overcharges and credits == reported
        action_right = credits == truth.expected_credits
        investigated = _investigated(findings.root_cause, truth, record, report)  # G11
        unaffected = sum(1 for invoice in reported if invoice not in truth.overcharges)
        terms["root_cause"] = config.root_cause * (label_right and investigated)
        terms["amounts"] = config.amounts * (amounts_right and investigated)
        terms["action"] = config.action * (action_right and investigated)
        # a chain earns credit only when it supports a right answer (module docstring)
        right = label_right and amounts_right and investigated
        terms["evidence"] = config.evidence * (chain and right)
        terms["hallucination"] = config.hallucination * bool(untraceable)
        terms["extra_invoices"] = config.extra_invoice * max(0, unaffected - 1)
    terms["false_reversal"] = config.false_reversal * false_reversal
    terms["tool_cost"] = -config.tool_call_cost * record.tool_calls
    success = label_right and amounts_right and action_right and not false_reversal
    grounded = success and chain and investigated
    if config.variant == "binary":
        # grounded success, by construction, less the tool cost (design §5)
        total = round(float(grounded) + terms["tool_cost"], 6)
    else:
        total = round(sum(terms.values()), 6)
    return RewardBreakdown(
        variant=config.variant,
        total=total,
        terms={name: round(value, 6) + 0.0 for name, value in terms.items()},  # no -0.0
        false_reversal=false_reversal,
        hallucinated_numbers=bool(untraceable),
        submitted=findings is not None,
        truncated=record.truncated,
        success=success,
        untraceable=untraceable,
        credits=credits,
        config=config.model_dump(),
        grounded=grounded,
        investigated=investigated,
        tool_calls=record.tool_calls,
    )


def _investigated(
    verdict: str, truth: Truth, record: EpisodeRecord, report: ProvenanceReport
) -> bool:
    """rewards/README.md G11: a no_error verdict counts only when its summary cites a found
    fact of a disputed invoice's own record as a read showed it (G11.2, G11.3); any other
    verdict needs nothing more."""
    if verdict != "no_error":
        return True
    disputed = set(truth.disputed_invoices)
    reads = {i for i, invoice in examined_invoices(record.tool_log).items() if invoice in disputed}
    recomputes = {i for i in reads if record.tool_log[i].name == "recompute_invoice"}
    for t in report.traces:
        if t.status != "evidence" or t.allowed_kind or not reads.intersection(t.sources):
            continue
        fact = _fact(t.cited.kind, t.cited.value)
        if fact == "fact" or (fact == "zero" and recomputes.intersection(t.sources)):
            return True
    return False


def _fact(kind: str, value: str) -> str:
    """G11.3: a date or month-day, a number or percentage ("zero" apart: every invoice shows
    0.00 somewhere, so a zero counts only as a recompute's answer), or no fact (an id, a
    word, a month, a year, a time)."""
    if kind in ("date", "month_day"):
        return "fact"
    if kind not in ("number", "percent"):
        return "none"
    try:
        return "fact" if Decimal(value) != 0 else "zero"
    except ArithmeticError:
        return "none"
