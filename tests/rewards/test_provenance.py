"""Provenance rules (rewards/provenance.py docstring), one hand-worked example or more per rule."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from env.engine.money import format_cents
from env.findings import Findings
from rewards.provenance import check_provenance, extract_cited


def kinds(summary: str) -> list[tuple[str, str, str]]:
    """(raw, kind, value) of every citation the summary makes."""
    return [(c.raw, c.kind, c.value) for c in extract_cited(findings(summary))]


def findings(summary: str = "", invoices: dict[str, str] | None = None) -> Findings:
    items = [{"invoice_id": i, "overcharge_amount": a} for i, a in (invoices or {}).items()]
    root_cause = "wrong_tax_rate" if items else "no_error"
    return Findings.model_validate(
        {"root_cause": root_cause, "affected_invoices": items, "summary": summary}
    )


def output(**fields: object) -> str:
    return json.dumps(fields)


def untraceable(summary: str, *outputs: str, invoices: dict[str, str] | None = None) -> list[str]:
    """The raw text of every untraceable citation, for short assertions."""
    report = check_provenance(findings(summary, invoices), outputs)
    return [c.raw for c in report.untraceable]


INVOICE = output(
    invoice_id="INV-7F3K2Q",
    customer_id="CUS-4Q2P9A",
    period_start="2026-03-15",
    issued_at="2026-03-15T02:30:00Z",
    subtotal="1234.50",
    tax_rate="0.0825",
    tax="101.85",
    total="1336.35",
)


# Rule 1: amounts normalise (symbols, codes, separators, trailing zeros, sign).


def test_a_dollar_amount_with_a_thousands_separator_matches_the_plain_decimal() -> None:
    assert untraceable("Subtotal was $1,234.50.", output(subtotal="1234.5")) == []
    assert untraceable("Subtotal was 1234.5.", output(memo="subtotal $1,234.50")) == []


def test_trailing_zeros_and_currency_codes_do_not_matter() -> None:
    tax = output(tax="101.85", fee="12.4")
    assert untraceable("Tax 101.850 USD, EUR 101.85, 12.40€ and £12.4.", tax) == []


def test_a_negative_difference_is_cited_but_grounds_no_overcharge() -> None:
    """G7.1: a difference shown -12.40 (undercharged) is no overcharge of 12.40; the summary
    cites it by its figure either way."""
    recompute = output(billed_total="148.20", difference="-12.40")
    assert untraceable("", recompute, invoices={"INV-7F3K2Q": "12.40"}) == ["INV-7F3K2Q", "12.40"]
    assert untraceable("", output(difference="12.40"), invoices={"INV-7F3K2Q": "12.40"}) == [
        "INV-7F3K2Q"
    ]
    assert untraceable("The difference was -12.40.", recompute) == []
    assert untraceable("Overcharged by −$12.40.", output(difference="12.40")) == []


def test_an_amount_one_cent_off_is_untraceable() -> None:
    assert untraceable("Overcharged $12.41.", output(difference="12.40")) == ["$12.41"]


@given(st.integers(min_value=1, max_value=10**11))
def test_any_amount_written_with_symbol_and_separators_matches_its_tool_form(cents: int) -> None:
    written = f"${cents // 100:,}.{cents % 100:02d}"
    assert untraceable(f"Refund {written} now.", output(amount=format_cents(cents))) == []


# Rule 2: percentages and decimal rates support each other.


def test_a_percentage_in_the_summary_is_supported_by_the_decimal_rate() -> None:
    assert untraceable("Tax was charged at 8.25% instead.", INVOICE) == []


def test_a_decimal_rate_in_the_summary_is_supported_by_a_percentage_in_an_output() -> None:
    note = output(memo="Texas rate 8.25% applies from 2026-01-01")
    assert untraceable("The rate 0.0825 was used.", note) == []


def test_a_coupon_percentage_is_supported_by_its_bare_figure() -> None:
    coupon = output(code="SPRING20", percent_off="20", valid_from="2026-01-01")
    assert untraceable("SPRING20 gives 20% off (20 percent).", coupon) == []


def test_a_percentage_absent_from_the_outputs_is_untraceable() -> None:
    assert untraceable("The correct rate is 7.25%.", INVOICE) == ["7.25%"]


# Rule 3: dates normalise to ISO; timestamps support their date; times are not cited.


@pytest.mark.parametrize(
    "written",
    [
        "2026-03-15",
        "2026/03/15",
        "15 March 2026",
        "March 15, 2026",
        "Mar 15 2026",
        "15th of March 2026",
        "15/03/2026",
        "03/15/2026",
        "15.03.2026",
    ],
)
def test_a_date_in_any_common_format_matches_the_iso_date(written: str) -> None:
    assert kinds(f"Billed on {written}.") == [(written.replace(",", ""), "date", "2026-03-15")]
    assert untraceable(f"Billed on {written}.", output(period_start="2026-03-15")) == []


def test_an_ambiguous_slash_date_is_traceable_when_either_reading_is_evidence() -> None:
    # 03/04/2026 is 3 April (day first) or 4 March (month first); both are real days.
    assert untraceable("Charged 03/04/2026.", output(date="2026-04-03")) == []
    assert untraceable("Charged 03/04/2026.", output(date="2026-03-04")) == []
    assert untraceable("Charged 03/04/2026.", output(date="2026-05-06")) == ["03/04/2026"]


def test_a_timestamp_supports_its_date_and_its_time_is_not_cited() -> None:
    summary = "The invoice was issued on March 15, 2026 at 02:30 UTC (10:30 pm local)."
    assert [c.raw for c in extract_cited(findings(summary))] == ["March 15 2026", "02:30", "10:30"]
    assert untraceable(summary, output(issued_at="2026-03-15T02:30:00Z")) == []
    report = check_provenance(findings(summary), [output(issued_at="2026-03-15T02:30:00Z")])
    assert [t.status for t in report.traces] == ["evidence", "allowed", "allowed"]


def test_an_early_utc_timestamp_supports_the_previous_local_day_only() -> None:
    # 02:30 UTC is still the previous evening west of UTC (e.g. 21:30 on 28 Feb in UTC-5),
    # but no timezone (at most UTC+14) makes it the next day.
    canceled = output(type="canceled", occurred_at="2026-03-01T02:30:00Z")
    assert untraceable("Canceled locally on 2026-02-28.", canceled) == []
    assert untraceable("Canceled on 2026-03-02.", canceled) == ["2026-03-02"]


def test_a_late_utc_timestamp_supports_the_next_local_day_only() -> None:
    changed = output(type="plan_changed", occurred_at="2026-03-15T23:30:00Z")
    assert untraceable("Changed on 16 March 2026 local time.", changed) == []
    assert untraceable("Changed on 14 March 2026.", changed) == ["14 March 2026"]


def test_a_plain_date_in_an_output_does_not_support_its_neighbours() -> None:
    assert untraceable("Period began 2026-03-14.", INVOICE.replace("T02:30:00Z", "")) == [
        "2026-03-14"
    ]


def test_a_date_without_a_year_needs_that_month_and_day() -> None:
    assert untraceable("Since March 15 the seats changed.", INVOICE) == []
    assert untraceable("Since March 17 the seats changed.", INVOICE) == ["March 17"]


def test_a_month_needs_an_evidence_date_in_that_month() -> None:
    assert untraceable("The March 2026 invoice (period 2026-03).", INVOICE) == []
    assert untraceable("The May 2026 invoice.", INVOICE) == ["May 2026"]


# Rule 4: ids are atomic; digits glued to letters are never numbers.


def test_digits_inside_an_id_are_not_evidence() -> None:
    invoice = output(invoice_id="INV-74K2Q9", total="10.00")
    assert untraceable("74 seats were billed.", invoice) == ["74"]


def test_an_id_in_the_summary_is_cited_whole_in_any_case() -> None:
    assert kinds("See inv-7f3k2q for customer CUS-4Q2P9A.") == [
        ("inv-7f3k2q", "id", "INV-7F3K2Q"),
        ("CUS-4Q2P9A", "id", "CUS-4Q2P9A"),
    ]
    assert untraceable("See inv-7f3k2q for customer CUS-4Q2P9A.", INVOICE) == []
    assert untraceable("See inv-7f3k2z.", INVOICE) == ["inv-7f3k2z"]


def test_an_invented_invoice_id_is_untraceable() -> None:
    assert untraceable("", INVOICE, invoices={"INV-FAKE99": "101.85"}) == ["INV-FAKE99"]
    assert untraceable("Also PAY-9Z9Z9Z was refunded.", INVOICE) == ["PAY-9Z9Z9Z"]


def test_digits_glued_to_letters_are_read_whole_and_need_that_word_in_an_output() -> None:
    coupon = output(code="SAVE20")
    assert untraceable("Coupon save20 applies.", coupon) == []
    assert untraceable("Coupon SAVE20 in Q1, billed 3x, plan v2.", coupon) == ["Q1", "3x", "v2"]


# Rule 5: small counts and the findings' own total need no evidence.


def test_a_count_of_three_is_allowed_but_thirteen_is_not() -> None:
    assert untraceable("3 invoices and 12 seats.", INVOICE) == []
    assert untraceable("13 invoices.", INVOICE) == ["13"]


def test_a_small_count_written_as_money_still_needs_evidence() -> None:
    assert untraceable("A fee of 3.00 was added.", INVOICE) == ["3.00"]


def test_the_total_of_the_findings_own_amounts_needs_no_evidence() -> None:
    recomputes = (
        output(invoice_id="INV-AAAA01", difference="12.40"),
        output(invoice_id="INV-AAAA02", difference="122.27"),
    )
    invoices = {"INV-AAAA01": "12.40", "INV-AAAA02": "122.27"}
    # 12.40 + 122.27 = 134.67, printed by no tool
    assert untraceable("In total $134.67 over 2 invoices.", *recomputes, invoices=invoices) == []
    assert untraceable("In total $134.68.", *recomputes, invoices=invoices) == ["$134.68"]


def test_a_single_invented_amount_is_not_excused_as_its_own_total() -> None:
    invoices = {"INV-7F3K2Q": "99.99"}
    assert untraceable("Overcharge 99.99.", INVOICE, invoices=invoices) == ["99.99"]


# Rule 6: only this episode's tool outputs are evidence.


def test_a_number_only_in_the_complaint_is_untraceable() -> None:
    complaint = "Hi, I'm CUS-4Q2P9A and I was charged $250.00 twice on INV-7F3K2Q!"
    assert "250.00" in complaint  # the agent read it there, but the complaint is a claim
    assert untraceable("The customer was charged $250.00.", INVOICE) == ["$250.00"]


def test_a_number_from_another_episode_is_untraceable() -> None:
    episode_a = [INVOICE]
    episode_b = [output(invoice_id="INV-B0B0B0", total="777.77")]
    claim = findings("Total 777.77 on INV-B0B0B0.")
    assert check_provenance(claim, episode_b).traceable
    assert [c.raw for c in check_provenance(claim, episode_a).untraceable] == [
        "777.77",
        "INV-B0B0B0",
    ]


def test_an_error_output_is_not_evidence() -> None:
    error = output(error="unknown invoice INV-FAKE99; ids look like 'INV-7F3K2Q'")
    assert untraceable("", error, invoices={"INV-FAKE99": "10.00"}) == ["INV-FAKE99", "10.00"]


# Rule 7: years.


def test_the_year_inside_a_date_is_not_cited_separately() -> None:
    assert kinds("On 2026-03-15.") == [("2026-03-15", "date", "2026-03-15")]


def test_a_bare_year_is_traceable_when_an_evidence_date_has_that_year() -> None:
    assert untraceable("Every invoice in 2026 is affected.", INVOICE) == []
    assert untraceable("Every invoice in 2025 is affected.", INVOICE) == ["2025"]


# Rule 8: every value of an output is evidence, free text included.


def test_a_number_in_a_free_text_memo_is_evidence() -> None:
    memo = output(invoice_id="INV-7F3K2Q", memo="as agreed, refund 500.00")
    assert untraceable("The memo promised a 500.00 refund.", memo) == []


def test_json_numbers_and_escaped_strings_are_evidence() -> None:
    raw = output(seats=14, fx_rate=1.3712, memo="refund €12.40\n500.00 later")
    assert "\\u20ac" in raw and "\\n500" in raw  # json.dumps escaped both
    assert untraceable("14 seats at 1.3712; €12.40 then 500.00.", raw) == []


def test_output_that_is_not_json_is_read_as_text() -> None:
    text = "Invoice INV-7F3K2Q total: $148.20 (USD), due 2026-04-01"
    assert untraceable("INV-7F3K2Q: 148.20 due April 1, 2026.", text) == []


def test_a_compact_json_list_of_integers_is_read_as_separate_values() -> None:
    units = json.dumps({"units": [14, 200]}, separators=(",", ":"))
    assert untraceable("Usage 14 then 200 units.", units) == []
    assert untraceable("Usage 14,200 units.", units) == ["14,200"]


# Decisions beyond the rules: times, version strings, the report.


def test_times_of_day_are_allowed_and_version_strings_need_that_word() -> None:
    report = check_provenance(findings("At 02:30, 23:59:59 and 10:15 pm, client 1.2.3."), [])
    assert [(t.cited.raw, t.status) for t in report.traces] == [
        ("02:30", "allowed"),
        ("23:59:59", "allowed"),
        ("10:15", "allowed"),
        ("1.2.3", "untraceable"),
    ]


def test_findings_that_cite_nothing_are_traceable() -> None:
    report = check_provenance(findings("The price rise was announced."), [])
    assert report.cited == () and report.traceable


def test_the_report_lists_citations_in_order_once_each() -> None:
    report = check_provenance(
        findings("Tax 101.85 on INV-7F3K2Q; 101.85 again; 13 seats.", {"INV-7F3K2Q": "101.85"}),
        [INVOICE],
    )
    assert [c.raw for c in report.cited] == ["INV-7F3K2Q", "101.85", "13"]
    assert [c.raw for c in report.untraceable] == ["13"]
    assert not report.traceable


_PIECES = [*'0123456789 .,-/:$€£%−TZ"[]{}\nxs', "March", "May", "INV-", "USD", " percent", "th of"]


@given(st.lists(st.sampled_from(_PIECES), max_size=40).map("".join))
def test_arbitrary_text_never_breaks_extraction(text: str) -> None:
    # a reward must not crash an episode, whatever an agent or a tool printed
    report = check_provenance(findings(text), [text])
    assert set(report.untraceable) <= set(report.cited)
