"""The grader on hand-made episodes: tool calls played through LedgerEnv, then graded."""

from __future__ import annotations

import ast
import dataclasses
import json
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import pytest

from env.engine.money import format_cents
from env.episode import EpisodeRecord, record_episode
from env.generation.generator import generate
from env.generation.splits import split_seeds
from env.ledger_env import LedgerEnv, open_database
from env.scenario import Scenario, reveal_truth
from eval.grader import grade_episode

Call = tuple[str, dict[str, Any]]


def _scenario(label: str, *, invoices: int = 1) -> Scenario:
    """The first eval scenario of this label with exactly `invoices` overcharged invoices and at
    least one invoice that is not overcharged."""
    for seed in split_seeds("eval"):
        scenario = generate("eval", seed)
        truth = reveal_truth(scenario)
        unaffected = _invoice_ids(scenario) - truth.overcharges.keys()
        if truth.label == label and len(truth.overcharges) == invoices and unaffected:
            return scenario
    raise LookupError(label)


@pytest.fixture(scope="module")
def faulted() -> Scenario:
    return _scenario("wrong_tax_rate")


@pytest.fixture(scope="module")
def no_error() -> Scenario:
    return _scenario("no_error", invoices=0)


def reference(scenario: Scenario) -> list[Call]:
    return [(step.name, dict(step.arguments)) for step in reveal_truth(scenario).reference]


def investigation(scenario: Scenario) -> list[Call]:
    """The reference calls before any credit note or submission."""
    return [c for c in reference(scenario) if c[0] not in ("draft_credit_note", "submit_findings")]


def play(scenario: Scenario, calls: list[Call]) -> EpisodeRecord:
    env = LedgerEnv(scenario)
    try:
        for name, arguments in calls:
            env.call(name, json.dumps(arguments))
        return record_episode(env)
    finally:
        env.close()


def grade(scenario: Scenario, calls: list[Call]):
    return grade_episode(reveal_truth(scenario), play(scenario, calls), scenario.database)


def submit(label: str, affected: dict[str, str], summary: str = "") -> Call:
    items = [{"invoice_id": i, "overcharge_amount": a} for i, a in affected.items()]
    return (
        "submit_findings",
        {"root_cause": label, "affected_invoices": items, "summary": summary},
    )


def credit(invoice_id: str, amount: str) -> Call:
    return ("draft_credit_note", {"invoice_id": invoice_id, "amount": amount, "reason": "verified"})


def only_invoice(scenario: Scenario) -> tuple[str, int]:
    ((invoice, cents),) = reveal_truth(scenario).overcharges.items()
    return invoice, cents


def test_the_reference_solution_is_a_clean_success(faulted):
    result = grade(faulted, reference(faulted))

    assert result.success and result.database_clean
    assert result.credits == reveal_truth(faulted).expected_credits
    assert not result.false_reversal and not result.hallucinated_numbers
    assert result.changed_tables == () and result.untraceable == ()
    assert result.tool_calls == len(reference(faulted))


def test_a_no_error_episode_that_credits_nothing_is_a_success(no_error):
    result = grade(no_error, [*investigation(no_error), submit("no_error", {})])

    assert result.success and result.credits == {}


def test_an_amount_one_cent_off_fails_though_the_label_and_credit_are_right(faulted):
    invoice, cents = only_invoice(faulted)
    calls = [*investigation(faulted), credit(invoice, format_cents(cents))]
    calls.append(submit("wrong_tax_rate", {invoice: format_cents(cents - 1)}))

    result = grade(faulted, calls)

    assert result.label_correct and result.invoices_correct and result.credits_correct
    assert not result.amounts_correct and not result.success


def test_reporting_an_extra_invoice_fails_on_the_invoice_set(faulted):
    invoice, cents = only_invoice(faulted)
    other = _unaffected_invoice(faulted, invoice)
    calls = [*investigation(faulted), credit(invoice, format_cents(cents))]
    calls.append(submit("wrong_tax_rate", {invoice: format_cents(cents), other: "1.00"}))

    result = grade(faulted, calls)

    assert not result.invoices_correct and not result.amounts_correct and not result.success


def test_two_small_notes_over_the_true_overcharge_are_a_false_reversal(faulted):
    invoice, cents = only_invoice(faulted)
    half = format_cents(cents // 2 + 1)  # each note alone is under the overcharge
    calls = [*investigation(faulted), credit(invoice, half), credit(invoice, half)]
    calls.append(submit("wrong_tax_rate", {invoice: format_cents(cents)}))

    result = grade(faulted, calls)

    assert result.false_reversal and not result.success
    assert result.over_credited == {invoice: 2 * (cents // 2 + 1) - cents}


def test_any_credit_in_a_no_error_case_is_a_false_reversal(no_error):
    invoice = _unaffected_invoice(no_error, "")
    result = grade(no_error, [*investigation(no_error), credit(invoice, "0.01")])

    assert result.false_reversal and result.over_credited == {invoice: 1}
    assert not result.submitted and not result.success


def test_a_change_to_any_other_table_is_detected_in_the_image(faulted):
    record = play(faulted, reference(faulted))
    tampered = _tamper(record.final_database, "UPDATE invoices SET memo = memo || ' edited'")

    result = grade_episode(
        reveal_truth(faulted), tampered_record(record, tampered), faulted.database
    )

    assert result.changed_tables == ("invoices",)
    assert not result.database_clean and not result.success


def test_a_credit_note_written_outside_the_episode_is_not_clean(faulted):
    record = play(faulted, reference(faulted))
    mine = f"WHERE episode_id = '{record.episode_id}'"  # the world may hold older notes
    tampered = _tamper(
        record.final_database, f"UPDATE credit_notes SET episode_id = 'someone-else' {mine}"
    )

    result = grade_episode(
        reveal_truth(faulted), tampered_record(record, tampered), faulted.database
    )

    assert result.credits_correct and not result.database_clean and not result.success


def test_an_invoice_id_no_tool_showed_is_a_hallucinated_number(faulted):
    invoice, cents = only_invoice(faulted)
    calls = [*investigation(faulted), credit(invoice, format_cents(cents))]
    calls.append(submit("wrong_tax_rate", {invoice: format_cents(cents), "INV-ZZZZ9999": "3.00"}))

    result = grade(faulted, calls)

    assert result.hallucinated_numbers
    assert "INV-ZZZZ9999" in result.untraceable


def test_an_amount_seen_only_in_a_credit_note_echo_is_hallucinated(faulted):
    invoice, _ = only_invoice(faulted)
    made_up = absent_amount(faulted, investigation(faulted))
    calls = [*investigation(faulted), credit(invoice, made_up)]
    calls.append(submit("wrong_tax_rate", {invoice: made_up}))

    result = grade(faulted, calls)

    assert result.untraceable == (made_up,)
    (echoed,) = [t for t in result.number_trace if t.where == "amount"]
    assert echoed.status == "echo_only" and echoed.sources == (len(calls) - 2,)


# grounded success: a success whose every cited number a non-echo tool output showed


def test_the_reference_solution_is_a_grounded_success_with_every_citation_traced(faulted):
    calls = reference(faulted)
    record = play(faulted, calls)
    result = grade_episode(reveal_truth(faulted), record, faulted.database)

    assert result.success and result.grounded_success
    assert result.number_trace and {t.status for t in result.number_trace} <= {
        "evidence",
        "allowed",
    }
    invoice, cents = only_invoice(faulted)
    wheres = {(t.where, t.value) for t in result.number_trace}
    amount = format_cents(cents)  # traces drop trailing zeros: 62.50 is traced as 62.5
    shown = {amount, amount.rstrip("0").rstrip(".")}
    assert ("invoice_id", invoice) in wheres and any(("amount", a) in wheres for a in shown)
    for traced in result.number_trace:
        if traced.status == "evidence":
            assert traced.sources, traced
        for index in traced.sources:  # indices into the tool-call log: non-echo reads only
            assert record.tool_log[index].name not in ("draft_credit_note", "submit_findings")
            assert not record.tool_log[index].is_error


def test_a_success_citing_an_invented_number_is_not_grounded(faulted):
    invented = absent_amount(faulted, reference(faulted), start=9_876_543)
    calls = reference(faulted)
    name, arguments = calls[-1]
    calls[-1] = (name, {**arguments, "summary": f"{arguments['summary']} (about ${invented})"})

    result = grade(faulted, calls)

    assert result.success and not result.grounded_success
    assert result.hallucinated_numbers and result.untraceable == (f"${invented}",)
    (traced,) = [t for t in result.number_trace if t.text == f"${invented}"]
    assert (traced.where, traced.value, traced.status, traced.sources) == (
        "summary",
        invented,
        "untraceable",
        (),
    )


def test_a_success_citing_a_date_only_a_lookup_echoed_is_not_grounded(faulted):
    calls = reference(faulted)
    day = echo_only_day(faulted, calls)
    jurisdiction = next(a["jurisdiction"] for n, a in calls if n == "get_tax_rate")
    lookup = ("get_tax_rate", {"jurisdiction": jurisdiction, "date": day})
    name, arguments = calls[-1]
    summary = f"{arguments['summary']} Checked again on {day}."
    calls = [*calls[:-1], lookup, (name, {**arguments, "summary": summary})]

    result = grade(faulted, calls)

    assert result.success and not result.grounded_success
    (traced,) = [t for t in result.number_trace if t.text == day]
    assert traced.status == "echo_only" and traced.sources == (len(calls) - 2,)
    assert result.untraceable == (day,)


def test_a_no_error_answer_with_no_tool_call_and_a_count_is_not_grounded(no_error):
    result = grade(no_error, [submit("no_error", {}, "Checked 3 invoices, all correct.")])

    assert result.success and result.tool_calls == 1
    assert not result.grounded_success and not result.hallucinated_numbers
    assert [(t.text, t.where, t.value, t.status, t.sources) for t in result.number_trace] == [
        ("3", "summary", "3", "allowed", ())
    ]


def test_a_no_error_answer_citing_an_invoice_it_listed_is_grounded_once_it_read_the_disputed_one(
    no_error,
):
    listing = ("list_invoices", {"customer_id": no_error.customer_id})
    disputed = ("get_invoice", {"invoice_id": reveal_truth(no_error).disputed_invoices[0]})
    invoice = sorted(_invoice_ids(no_error))[0]
    summary = f"Checked 3 invoices; {invoice} is billed correctly."

    listed_only = grade(no_error, [listing, submit("no_error", {}, summary)])
    result = grade(no_error, [listing, disputed, submit("no_error", {}, summary)])

    # G11: the listing alone is a chain, but not the disputed invoice read
    assert listed_only.success and not listed_only.grounded_success
    assert not listed_only.investigated
    assert result.success and result.grounded_success and result.investigated
    statuses = [(t.text, t.status, t.sources[:1]) for t in result.number_trace]
    assert statuses == [("3", "allowed", ()), (invoice, "evidence", (0,))]


def test_an_episode_without_findings_fails_but_its_credits_still_count(faulted):
    invoice, cents = only_invoice(faulted)
    result = grade(faulted, [*investigation(faulted), credit(invoice, format_cents(cents))])

    assert not result.submitted and result.credits_correct and not result.success
    assert result.reported_label is None and not result.hallucinated_numbers


ROOT = Path(__file__).resolve().parents[2]


def _imports(path: Path) -> list[str]:
    """Every module an `import` or `from ... import` names in the file (in functions too);
    `from package import name` also as `package.name`, in case `name` is a module."""
    modules = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            modules.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            modules.append(node.module)
            modules.extend(f"{node.module}.{alias.name}" for alias in node.names)
    return modules


def _is_rewards(module: str) -> bool:
    return module == "rewards" or module.startswith("rewards.")


def _source(module: str) -> Path | None:
    base = ROOT.joinpath(*module.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def test_no_module_under_eval_but_agreement_imports_from_rewards():
    # agreement.py compares the two sides, so it is the one module that imports both
    checked = [
        p for p in sorted((ROOT / "eval").rglob("*.py")) if p != ROOT / "eval" / "agreement.py"
    ]
    offenders = {
        str(path.relative_to(ROOT)): [m for m in _imports(path) if _is_rewards(m)]
        for path in checked
    }

    names = ("notation", "read", "trace", "derive", "verdict")
    grounding = {f"grounding/{name}.py" for name in names}
    assert {"grader.py", *grounding} <= {str(p.relative_to(ROOT / "eval")) for p in checked}
    assert {path: found for path, found in offenders.items() if found} == {}


def test_the_graders_code_reaches_no_rewards_module_even_through_other_modules():
    seen: set[str] = set()
    pending = ["eval.grader", "eval.grounding"]
    reached_rewards = []
    while pending:
        module = pending.pop()
        if module in seen:
            continue
        seen.add(module)
        source = _source(module)
        if source is None:
            continue  # the standard library or an installed package
        for imported in _imports(source):
            if _is_rewards(imported):
                reached_rewards.append(f"{module} -> {imported}")
            pending.append(imported)

    grounding = {f"eval.grounding.{name}" for name in ("notation", "read", "trace", "verdict")}
    assert {"eval.grader", "eval.grounding", *grounding, "env.findings", "env.ledger_env"} <= seen
    assert reached_rewards == []


def _outputs(scenario: Scenario, calls: list[Call]) -> list[str]:
    return [r.result for r in play(scenario, calls).tool_log]


def absent_amount(scenario: Scenario, calls: list[Call], start: int = 7) -> str:
    """The first amount from `start` cents (not a multiple of ten, so its two decimals are its
    only form) whose digits no output of `calls` contains: provably not evidence."""
    outputs = _outputs(scenario, calls)
    for cents in range(start, start + 10_000):
        amount = format_cents(cents)
        if cents % 10 and not any(amount in out for out in outputs):
            return amount
    raise AssertionError("every candidate amount is shown")


def echo_only_day(scenario: Scenario, calls: list[Call]) -> str:
    """A day within the tax lookup's window that no output shows, nor its neighbours (an
    output timestamp supports the local days either side)."""
    outputs = _outputs(scenario, calls)
    jurisdiction, looked_up = next(
        (a["jurisdiction"], a["date"]) for n, a in calls if n == "get_tax_rate"
    )
    start = date.fromisoformat(looked_up)
    for back in range(1, 400):
        day = start - timedelta(days=back)
        near = [(day + timedelta(days=k)).isoformat() for k in (-1, 0, 1)]
        if any(n in out for n in near for out in outputs):
            continue
        answer = _outputs(scenario, [("get_tax_rate", {"jurisdiction": jurisdiction,
                                                        "date": day.isoformat()})])  # fmt: skip
        if "error" not in json.loads(answer[0]):
            return day.isoformat()
    raise AssertionError("no day is free of evidence")


def _invoice_ids(scenario: Scenario) -> set[str]:
    connection = open_database(scenario.database)
    try:
        return {row[0] for row in connection.execute("SELECT id FROM invoices")}
    finally:
        connection.close()


def _unaffected_invoice(scenario: Scenario, besides: str) -> str:
    ids = sorted(_invoice_ids(scenario) - reveal_truth(scenario).overcharges.keys() - {besides})
    return ids[0]


def _tamper(image: bytes, statement: str) -> bytes:
    connection = open_database(image)
    try:
        connection.execute(statement)
        return connection.serialize()
    finally:
        connection.close()


def tampered_record(record: EpisodeRecord, image: bytes) -> EpisodeRecord:
    return dataclasses.replace(record, final_database=image)
