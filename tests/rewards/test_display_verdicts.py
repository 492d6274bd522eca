"""Both readers judge a summary as a person sees it (rewards/README.md G2.0, G10.5, G10.6).

Properties, each checked through the reward (`rewards.provenance.trace_episode`) and the grader
(`eval.grounding`), which must agree citation by citation:
- markup, math or HTML around a shown amount keeps it traceable;
- markup or an invisible character that puts an invented digit right against a shown amount
  displays a number no tool printed: untraceable, whatever builds it;
- an invisible character anywhere inside a shown amount or id changes nothing;
- a line break inside a number shows two numbers, on two lines, and reads as two;
- an exact quotient written past the cent grounds its rounding to the cent; an inclusive period
  end one day before a shown exclusive end is derived; approximations are not.
"""

from __future__ import annotations

import json
from datetime import date, timedelta

from hypothesis import given
from hypothesis import strategies as st

from env.ledger_env import ToolRecord
from tests.rewards.test_numbers_properties import BOUNDED, _records, date_notation, verdicts

_WRAPS = [
    ("**", "**"), ("*", "*"), ("_", "_"), ("`", "`"), ("~~", "~~"), ("<b>", "</b>"),
    ("<strong>", "</strong>"), ("<span>", "</span>"), ("\\(", "\\)"), ("$", "$"), ("$$", "$$"),
    ("\\[", "\\]"), ("[", "](https://billing.example/inv)"), ("<p>", "</p>"), ("| ", " |"),
    ("Overcharge:", ""), ('amount="', '"'), ("\\( \\text{CAD}\\ ", " \\)"), ("&nbsp;", "&nbsp;"),
]  # fmt: skip
# what puts the digit before it right against what follows, as displayed
_JOINERS = [
    ("*", "*"), ("**", "**"), ("<b>", "</b>"), ("`", "`"), ("\\(", "\\)"), ("<span>", "</span>"),
    ("[", "](https://x.example)"), ("", "<!-- -->"), ("", "\u200b"), ("", "\u00ad"),
    ("", "\u2060"), ("", "\ufeff"), ("", "\x01"), ("", "\x1c"), ("", "&#8203;"), ("", "&shy;"),
    ("", "<wbr>"), ("\\(\\textbf{", "}\\)"), ("\\(", "\\!\\)"),
]  # fmt: skip
_INVISIBLE = ["\u200b", "\u200c", "\u200d", "\u2060", "\u00ad", "\ufeff", "\u200e", "\u200f",
              "\x00", "\x07", "\x1f", "\x7f", "\u034f", "\ufe0f", "\u2066", "\u2069"]  # fmt: skip
_LINE_BREAKS = ["\n", "\r\n"]  # break a line in every renderer
# mandatory breaks some renderers show as nothing (a browser joins `9<VT>226.04` into one number)
_AMBIGUOUS_BREAKS = ["\r", "\x0b", "\x0c", "\x85", "\u2028", "\u2029", "&#x2028;"]


def _invoice(total: str, **fields: str) -> str:
    return json.dumps({"invoice_id": "INV-7F3K2Q", "total": total, **fields})


def _amount(cents: int) -> str:
    return f"{cents // 100}.{cents % 100:02d}"


def _agree(summary: str, *outputs: str) -> tuple[dict[str, str], bool]:
    """{raw: status} of the summary's citations (the same in both readers) and the verdict."""
    ours, theirs, reward_ok, grader_ok = verdicts(summary, _records(*outputs))
    assert ours == theirs, summary
    assert reward_ok == grader_ok, summary
    return {raw: status for raw, _, status in ours}, reward_ok


@BOUNDED
@given(st.integers(100, 99_999_999), st.sampled_from(_WRAPS))
def test_markup_around_a_shown_amount_keeps_it_traceable(cents: int, wrap: tuple) -> None:
    left, right = wrap
    amount = _amount(cents)
    statuses, grounded = _agree(f"Refund {left}{amount}{right} on it.", _invoice(amount))
    assert grounded, statuses


@BOUNDED
@given(st.integers(100, 9_999_999), st.integers(1, 9), st.sampled_from(_JOINERS))
def test_a_digit_displayed_against_a_shown_amount_is_a_number_no_tool_printed(
    cents: int, digit: int, joiner: tuple
) -> None:
    # the person sees f"{digit}{amount}": one number, which no tool printed
    left, right = joiner
    amount = _amount(cents)
    statuses, grounded = _agree(f"We refunded {left}{digit}{right}{amount} today.",
                                _invoice(amount))  # fmt: skip
    assert not grounded, statuses
    assert "untraceable" in statuses.values(), statuses


@BOUNDED
@given(st.integers(100, 9_999_999), st.integers(1, 9), st.sampled_from(_JOINERS))
def test_a_calculation_cannot_launder_a_displayed_number(cents: int, n: int, joiner) -> None:
    # `*2*120.56 = 241.12` displays `2120.56 = 241.12`
    left, right = joiner
    amount, double = _amount(cents), _amount(cents * 2)
    summary = f"Owed {left}2{right}{amount} = {double}."
    statuses, grounded = _agree(summary, _invoice(amount))
    assert not grounded, statuses


@BOUNDED
@given(st.integers(100, 99_999_999), st.sampled_from(_INVISIBLE), st.data())
def test_an_invisible_character_inside_a_shown_amount_changes_nothing(
    cents: int, hidden: str, data: st.DataObject
) -> None:
    amount = _amount(cents)
    k = data.draw(st.integers(1, len(amount) - 1))
    statuses, grounded = _agree(f"Refund {amount[:k]}{hidden}{amount[k:]} on INV-7F{hidden}3K2Q.",
                                _invoice(amount))  # fmt: skip
    assert grounded, statuses


@BOUNDED
@given(st.integers(1300, 9_999_999), st.integers(1, 9), st.sampled_from(_LINE_BREAKS))
def test_a_line_break_inside_a_number_shows_and_reads_two(cents: int, n: int, brk: str) -> None:
    amount = _amount(cents)
    statuses, grounded = _agree(f"Seats {n}{brk}{amount} refunded.", _invoice(amount))
    assert grounded, statuses
    assert statuses.get(str(n)) == "allowed" and statuses.get(amount) == "evidence", statuses


@BOUNDED
@given(st.integers(1300, 9_999_999), st.integers(1, 9), st.sampled_from(_AMBIGUOUS_BREAKS))
def test_a_break_some_renderers_hide_inside_a_number_leaves_it_unreadable(
    cents: int, n: int, brk: str
) -> None:
    """`9<VT>226.04`: a browser shows 9226.04, a terminal two lines; fail closed (G2.0)."""
    amount = _amount(cents)
    statuses, grounded = _agree(f"Seats {n}{brk}{amount} refunded.", _invoice(amount))
    assert not grounded and statuses.get(f"{n}{amount}") == "untraceable", statuses
    between = amount[:-3] + brk + amount[-3:]  # before the decimal point
    statuses, grounded = _agree(f"Refunded {between} today.", _invoice(amount))
    assert not grounded, statuses


def test_a_direction_override_makes_what_follows_unreadable() -> None:
    # RLO shows `40.622` as `226.04`: read as written it would be a number no tool printed
    statuses, grounded = _agree("Refund \u202e40.622 today.", _invoice("40.62"))
    assert not grounded and statuses["40.622"] == "untraceable", statuses


def test_an_exact_quotient_grounds_its_rounding_to_the_cent_and_nothing_rougher() -> None:
    shown = _invoice("1647.65")
    for summary in (
        "Half: 1647.65 / 2 = 823.825, 823.83 to the cent.",
        "A third: 1647.65 / 3 = 549.2166…, so 549.22.",
        "A third: 1647.65 / 3 = 549.21667 ≈ 549.22.",
        "Per day \\( \\frac{1647.65}{3} = 549.216\\overline{6} \\approx 549.22 \\)",
    ):
        statuses, grounded = _agree(summary, shown)
        assert grounded, (summary, statuses)
    for summary, bad in (
        ("A third: 1647.65 / 3 = 549.2166, about 549.", "549"),
        ("A third: 1647.65 / 3 = 549.2168, so 549.22.", "549.2168"),  # neither rounded nor cut
        ("About 823.83.", "823.83"),  # no calculation shown
    ):
        statuses, grounded = _agree(summary, shown)
        assert not grounded and statuses[bad] == "untraceable", (summary, statuses)


def test_an_inclusive_period_end_is_the_day_before_a_shown_exclusive_end() -> None:
    shown = _invoice("306.16", period_start="2025-10-01", period_end="2025-11-01")
    for summary in (
        "Period 2025-10-01 to 2025-10-31, total 306.16.",
        "Billed October 1 – October 31, 2025: 306.16.",
        "Billed Oct 1 through Oct 31: 306.16.",
    ):
        statuses, grounded = _agree(summary, shown)
        assert grounded, (summary, statuses)
    for day in ("2025-10-30", "2025-11-02"):
        statuses, grounded = _agree(f"Period ends {day}, total 306.16.", shown)
        assert statuses[day] == "untraceable" and not grounded, statuses


def test_a_period_end_the_agent_supplied_grounds_no_last_day() -> None:
    arguments = {"invoice_id": "INV-7F3K2Q", "period_end": "2025-11-01"}
    result = {"invoice_id": "INV-7F3K2Q", "assumptions": {"period_end": "2025-11-01"},
              "total": "306.16"}  # fmt: skip
    recompute = ToolRecord("recompute_invoice", json.dumps(arguments), json.dumps(result), False)
    ours, theirs, reward_ok, grader_ok = verdicts("Through 2025-10-31: 306.16.", [recompute])
    assert ours == theirs and not reward_ok and not grader_ok
    assert dict((raw, status) for raw, _, status in ours)["2025-10-31"] == "untraceable"


@BOUNDED
@given(
    st.dates(date(2000, 1, 2), date(2099, 12, 31)),
    st.integers(-2, 1),
    st.sampled_from(["period_end", "proration_end", "until", "period_start", "issued_at"]),
    st.booleans(),
    st.data(),
)
def test_both_readers_derive_the_same_last_days(
    end: date, offset: int, field: str, supplied: bool, data: st.DataObject
) -> None:
    # G10.6 in both readers alike: only the day before an exclusive end the call found
    cited = data.draw(date_notation(end + timedelta(days=offset)))
    arguments = {"invoice_id": "INV-7F3K2Q", **({field: end.isoformat()} if supplied else {})}
    result = {"invoice_id": "INV-7F3K2Q", field: end.isoformat(), "total": "306.16"}
    record = ToolRecord("recompute_invoice", json.dumps(arguments), json.dumps(result), False)
    ours, theirs, reward_ok, grader_ok = verdicts(f"Total 306.16, through {cited}.", [record])
    assert ours == theirs and reward_ok == grader_ok, cited
    exclusive = field in ("period_end", "proration_end", "until") and not supplied
    if offset == -1 and exclusive:
        assert reward_ok, (cited, ours)
