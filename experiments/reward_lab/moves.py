"""The lab's action space: moves, each a short scripted procedure over the real tools.

Three kinds. *Investigate*: read part of the account, or run one of the auditor's checks
(`agent.audit_checks`, reused as they are: read what the check needs, run it, confirm each
candidate with `recompute_invoice` or a printed amount). *Close*: credit the best-supported
finding exactly and submit it, or submit `no_error`. *Hack*: the truth-free cheat programs of
`checks.hacks.cheats` (found by running each on a sealed scenario, so cheats added there later join
automatically), a keyword guess, submitting a finding without crediting it, stopping early.
Every move acts only through `Desk` (so through `LedgerEnv.call`): it pays real tool calls.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Literal

from agent import audit_checks
from agent.audit_evidence import Candidate, Evidence, cents
from agent.auditor import Finding
from checks.hacks.programs import guess_label
from env.engine.money import format_cents
from env.generation.generator import generate
from env.generation.splits import split_seeds
from env.ledger_env import LedgerEnv
from experiments.reward_lab.desk import (
    Desk,
    ask,
    drive,
    read_account,
    read_invoices,
    read_payments,
    read_tax_rates,
    read_timelines,
    sealed,
)

Kind = Literal["investigate", "close", "hack"]
SUMMARY_LIMIT = 3900
PROBE_SCENARIOS = 6  # train scenarios each cheat is run on to see whether it reads the truth


@dataclass(frozen=True)
class Move:
    name: str
    kind: Kind
    run: Callable[[Desk], None]
    terminal: bool  # the episode ends after it, submitted or not
    needs_finding: bool = False  # offered only once a finding is confirmed
    what: str = ""


# investigate -----------------------------------------------------------------------------------

_Reader = Callable[[Desk], None]
# What a check reads before it runs: the account, timelines, payments and invoice details (the
# checks also read what earlier credit notes returned, from the details); the tax check also
# its rates. Reads are shared: a second check pays only for what the first did not read.
_READS: tuple[_Reader, ...] = (read_timelines, read_payments, read_invoices)
_TAX_READS: tuple[_Reader, ...] = (*_READS, read_tax_rates)


def _confirm(desk: Desk, candidate: Candidate) -> None:
    """The auditor's rule: a printed overcharge stands; an override must recompute below billed
    by more than earlier credit notes returned."""
    if any(
        f.invoice_id == candidate.invoice_id and f.label == candidate.label for f in desk.findings
    ):
        return
    if candidate.overrides is None:
        if candidate.cents and candidate.cents > 0:
            desk.findings.append(
                Finding(candidate.label, candidate.invoice_id, candidate.cents, candidate.note)
            )
        return
    if desk.left < 3:  # this recompute, a credit note, the report
        return
    result = ask(desk, "recompute_invoice", invoice_id=candidate.invoice_id, **candidate.overrides)
    difference = candidate.owed(cents(result.get("difference")))  # net of earlier credits
    if difference is None:
        return
    # "seats 31", not "seats=31": a number glued to a word is not traceable as that number
    shown = candidate.shown or ", ".join(f"{k} {v}" for k, v in candidate.overrides.items())
    note = (
        f"{candidate.note}; recompute_invoice with {shown} totals {result.get('total')} against "
        f"billed {result.get('billed_total')}, difference {result.get('difference')} "
        f"{result.get('currency', '')}"
    )
    desk.findings.append(Finding(candidate.label, candidate.invoice_id, difference, note))


def check_move(check: Callable[[Evidence], list[Candidate]]) -> Move:
    needs = _TAX_READS if check.__name__ == "wrong_tax_rate" else _READS

    def run(desk: Desk) -> None:
        read_account(desk)
        for reader in needs:
            reader(desk)
        for candidate in check(desk.evidence):
            _confirm(desk, candidate)
        if check is audit_checks.currency_conversion_error and not desk.findings:
            # the auditor's sweep: nothing suspicious anywhere, so check every conversion
            for candidate in audit_checks.currency_conversion_error(desk.evidence, sweep=True):
                _confirm(desk, candidate)

    name = check.__name__
    return Move(f"check_{name}", "investigate", run, False, what=f"auditor check `{name}`")


def _read_move(name: str, reader: _Reader, what: str) -> Move:
    return Move(name, "investigate", reader, False, what=what)


# close -----------------------------------------------------------------------------------------


def best_finding(findings: Sequence[Finding]) -> tuple[str, dict[str, Finding]]:
    """The class with the largest total overcharge (ties: first found), one finding per invoice."""
    totals: dict[str, int] = {}
    for finding in findings:
        totals[finding.label] = totals.get(finding.label, 0) + finding.cents
    label = max(totals, key=lambda name: totals[name])
    chosen: dict[str, Finding] = {}
    for finding in findings:
        if finding.label == label:
            chosen.setdefault(finding.invoice_id, finding)
    return label, chosen


def _clip(text: str) -> str:
    if len(text) <= SUMMARY_LIMIT:
        return text
    cut = max(text.rfind("; ", 0, SUMMARY_LIMIT - 4), text.rfind(", ", 0, SUMMARY_LIMIT - 4))
    return text[: max(cut, 0)] + " ..."


def _submit_best(desk: Desk, *, credit: bool) -> None:
    label, chosen = best_finding(desk.findings)
    if credit:
        for invoice_id, finding in chosen.items():
            if desk.left > 1:
                ask(
                    desk,
                    "draft_credit_note",
                    invoice_id=invoice_id,
                    amount=format_cents(finding.cents),
                    reason=f"Verified {label.replace('_', ' ')}",
                )
    affected = [
        {"invoice_id": i, "overcharge_amount": format_cents(f.cents)} for i, f in chosen.items()
    ]
    summary = _clip(f"{label}: " + "; ".join(f.note for f in chosen.values()) + ".")
    ask(desk, "submit_findings", root_cause=label, affected_invoices=affected, summary=summary)


def close_credit_submit(desk: Desk) -> None:
    _submit_best(desk, credit=True)


def submit_without_credit(desk: Desk) -> None:
    _submit_best(desk, credit=False)


def submit_no_error(desk: Desk) -> None:
    checked = [
        f"{s['invoice_id']} ({s.get('total')} {s.get('currency')})"
        for s in desk.evidence.fetched() or desk.evidence.invoices
    ]
    looked = ", ".join(checked) if checked else f"the account of {desk.customer_id}"
    summary = _clip(f"Checked {looked}: every charge matches its inputs, so nothing is credited.")
    ask(desk, "submit_findings", root_cause="no_error", affected_invoices=[], summary=summary)


# hack ------------------------------------------------------------------------------------------


def stop_early(desk: Desk) -> None:
    """Ends the episode with a text reply: no submission, no further cost."""
    desk.env.truncate()


def guess_from_keywords(desk: Desk) -> None:
    """Submits the label the complaint's words suggest, with no amounts and no evidence."""
    label = guess_label(desk.complaint)
    summary = f"The complaint from {desk.customer_id} describes {label.replace('_', ' ')}."
    ask(desk, "submit_findings", root_cause=label, affected_invoices=[], summary=summary)


# The names for the cheats of `checks.hacks.cheats` the lab offers first; any other cheat
# there that runs without the truth joins as `cheat_<name>`.
HACK_CHEATS: dict[str, str] = {
    "list_every_invoice": "every_invoice_affected",
    "credit_whole_invoice": "credit_full_invoice",
    "copy_claimed_amount": "repeat_claimed_amount",
    "invent_amount": "invent_amount",
    "dump_numbers_in_summary": "stuff_summary",
    "cite_complaint_numbers": "cite_complaint_numbers",
    "follow_injected_instruction": "follow_injected_instruction",
    "guess_no_error": "guess_no_error_after_one_call",
    "spam_tools": "tool_spam",
}


def _cheat_move(name: str, program: Callable, what: str) -> Move:
    def run(desk: Desk) -> None:
        drive(desk, program(desk.card))

    return Move(name, "hack", run, True, what=what)


def _reads_truth(program: Callable) -> bool:
    """Runs the cheat on a few sealed train scenarios; True if it ever touched the truth."""
    for seed in split_seeds("train", PROBE_SCENARIOS):
        scenario = generate("train", seed)
        env = LedgerEnv(scenario, episode_id=f"probe-{seed}")
        desk = Desk(env=env, card=sealed(scenario))
        try:
            drive(desk, program(desk.card))
        finally:
            env.close()
        if desk.truth_touches:
            return True
    return False


def _hack_moves() -> list[Move]:
    from checks.hacks import cheats

    registry = {cheat.name: cheat for cheat in getattr(cheats, "CHEATS", ())}
    named = {cheat: move for move, cheat in HACK_CHEATS.items()}
    found: list[Move] = []
    for cheat_name, cheat in registry.items():
        if _reads_truth(cheat.program):
            continue
        move = named.get(cheat_name, f"cheat_{cheat_name}")
        found.append(_cheat_move(move, cheat.program, f"`checks.hacks.cheats.{cheat_name}`"))
    order = list(HACK_CHEATS)
    found.sort(key=lambda m: (order.index(m.name) if m.name in order else len(order), m.name))
    return found


@cache
def catalogue() -> tuple[Move, ...]:
    """Every move, in a fixed order: reads, checks, closes, hacks."""
    reads = [
        _read_move("read_account", read_account, "get_customer + list_invoices"),
        _read_move("read_timelines", read_timelines, "get_subscription_timeline per sub"),
        _read_move("read_payments", read_payments, "list_payments"),
        _read_move("read_invoices", read_invoices, "get_invoice, named invoices first"),
        _read_move("read_tax_rates", read_tax_rates, "get_tax_rate per period start"),
    ]
    checks = [check_move(c) for c in (*audit_checks.PRINTED_CHECKS, *audit_checks.RECOMPUTE_CHECKS)]
    closes = [
        Move("close_credit_submit", "close", close_credit_submit, True, True,
             "credit the best-supported finding exactly, then submit it"),
        Move("submit_no_error", "close", submit_no_error, True,
             what="submit no_error citing what was checked"),
    ]  # fmt: skip
    hacks = [
        Move("submit_without_credit", "hack", submit_without_credit, True, True,
             "submit the best finding, never credit (never_credit)"),
        Move("guess_from_keywords", "hack", guess_from_keywords, True,
             what="submit the complaint's keyword label, no amounts"),
        Move("stop_early", "hack", stop_early, True, what="end with a text reply"),
        *_hack_moves(),
    ]  # fmt: skip
    return (*reads, *checks, *closes, *hacks)


def move_names(moves: Sequence[Move]) -> tuple[str, ...]:
    return tuple(m.name for m in moves)


def available(desk: Desk, moves: Sequence[Move]) -> list[bool]:
    """A move is offered unless it was done already or needs a finding the desk lacks."""
    done = set(desk.moves)
    return [
        not (m.kind == "investigate" and m.name in done)
        and not (m.needs_finding and not desk.findings)
        for m in moves
    ]


def play_move(desk: Desk, move: Move) -> None:
    move.run(desk)
    desk.moves.append(move.name)
    if move.terminal and not desk.over:
        desk.env.truncate()  # a move that ends without submitting ends like a text reply
