"""Property tests of the number reader (rewards/numbers.py) through both verdicts.

Hypothesis writes values in the notations an agent might use (currency codes glued either side,
`_`/`,`/`'`/thin-space grouping, decimal commas, exponents, signs, non-ASCII digit scripts,
spelled-out numbers, dates in common formats, ids in mixed case) and checks the verdict of the
reward (`rewards.provenance.trace_episode`) and of the grader (`eval.grounding`), which reads
with its own code:
- a value a tool output shows is traceable (and makes a chain), in every notation;
- an invented value, or a shown value with junk glued to it, is untraceable, in every notation;
- a value only echoed back from the agent's own argument is not evidence;
- on any mix of the above, and on noise, the two readers give every citation the same status.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import date
from decimal import Decimal

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from env.findings import Findings
from env.ledger_env import ToolRecord
from eval.grounding import call_views, grounded, trace_findings
from rewards.numbers import canonical
from rewards.provenance import trace_episode

BOUNDED = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True
)

# digit zero of scripts whose ten digits are consecutive code points (NFKC or the reader maps
# each to ASCII): Arabic-Indic, Extended Arabic-Indic, Devanagari, Bengali, Thai, full-width,
# mathematical bold
_ZEROS = (0x0660, 0x06F0, 0x0966, 0x09E6, 0x0E50, 0xFF10, 0x1D7CE)
_MONTHS = [
    *("January", "February", "March", "April", "May", "June", "July", "August"),
    *("September", "October", "November", "December"),
]
_UNITS = [
    *("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"),
    *("eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen"),
    *("eighteen", "nineteen"),
]
_TENS = ["", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]
_ID_PREFIXES = ("INV", "CUS", "SUB", "PAY", "CN", "PLN")
_ID_CHARS = "ABCDEFGHJKLMNPQRSTUVWXYZ0123456789"


@dataclass(frozen=True)
class Shown:
    """What one tool output shows: an amount, a count-like quantity, a rate, a day, an id."""

    cents: int
    quantity: int
    rate: int  # in hundredths of a percent: 825 is 8.25% = "0.0825"
    day: date
    record_id: str

    def output(self) -> str:
        return json.dumps(
            {
                "record_id": self.record_id,
                "total": f"{self.cents // 100}.{self.cents % 100:02d}",
                "quantity": self.quantity,
                "tax_rate": f"0.{self.rate:04d}",
                "period_start": self.day.isoformat(),
            }
        )

    def numbers(self) -> set[str]:
        """Canonical values a number or percentage citation could match."""
        amount = canonical(f"{self.cents // 100}.{self.cents % 100:02d}")
        rate = Decimal(self.rate) / 10_000
        figure = Decimal(self.rate) / 100
        return {amount, str(self.quantity), canonical(str(rate)), canonical(str(figure)), "2026"}


def _ids(draw: st.DrawFn) -> str:
    prefix = draw(st.sampled_from(_ID_PREFIXES))
    body = draw(st.text(_ID_CHARS, min_size=3, max_size=8))
    digit = draw(st.sampled_from("0123456789"))
    return f"{prefix}-{body}{digit}"


@st.composite
def shown(draw: st.DrawFn) -> Shown:
    return Shown(
        cents=draw(st.integers(100, 99_999_999)),
        quantity=draw(st.integers(13, 999_999)),
        rate=draw(st.integers(1, 9_999)),
        day=draw(st.dates(date(2026, 1, 1), date(2026, 12, 31))),
        record_id=_ids(draw),
    )


# notations ------------------------------------------------------------------------------------


def _grouped(whole: int, sep: str) -> str:
    return f"{whole:,}".replace(",", sep)


def _script(text: str, zero: int) -> str:
    return "".join(chr(zero + int(c)) if c.isascii() and c.isdigit() else c for c in text)


@st.composite
def amount_notation(draw: st.DrawFn, cents: int) -> str:
    whole, frac = cents // 100, f"{cents % 100:02d}"
    plain = f"{whole}.{frac}"
    body = draw(
        st.sampled_from(
            [
                plain,
                plain + draw(st.sampled_from(["0", "000"])),  # trailing zeros
                f"{_grouped(whole, ',')}.{frac}",
                f"{_grouped(whole, '_')}.{frac}",
                f"{_grouped(whole, chr(39))}.{frac}",
                f"{_grouped(whole, ' ')}.{frac}",
                f"{_grouped(whole, chr(0x2009))},{frac}",  # thin space, decimal comma
                f"{_grouped(whole, chr(0x202F))},{frac}",  # narrow no-break space
                f"{_grouped(whole, chr(0xA0))},{frac}",  # no-break space
                f"{_grouped(whole, '.')},{frac}",  # 1.234,88
                f"{whole},{frac}",  # 1234,88
                _exponent(draw, plain),
            ]
        )
    )
    digits_only = body.replace(".", "").replace(",", "").isdigit()
    if digits_only and draw(st.booleans()):
        zero = draw(st.sampled_from(_ZEROS))
        body = _script(body, zero)
        single = body.count(".") + body.count(",") == 1
        if zero in (0x0660, 0x06F0) and single and draw(st.booleans()):
            body = body.replace(".", "\u066b").replace(",", "\u066b")  # Arabic decimal sign
    return _affixed(draw, body)


def _exponent(draw: st.DrawFn, plain: str) -> str:
    places = draw(st.integers(-3, 6))
    mantissa = format(Decimal(plain).scaleb(-places), "f")
    return f"{mantissa}{draw(st.sampled_from('eE'))}{places}"


def _affixed(draw: st.DrawFn, body: str) -> str:
    """A sign, and a currency symbol or code glued before or after (any case), or none."""
    sign = draw(st.sampled_from(["", "", "-", "+", "\u2212"]))
    code = draw(st.sampled_from(["", "$", "€", "£", "USD", "usd", "Eur", "GBP", "cad", "AUD"]))
    if code and draw(st.booleans()) and " " not in body:
        return sign + body + code
    return sign + code + body


def spell(n: int) -> str:
    """0 <= n < 10**9 in English words, with a random-free canonical form."""
    if n < 20:
        return _UNITS[n]
    if n < 100:
        return _TENS[n // 10] + (f"-{_UNITS[n % 10]}" if n % 10 else "")
    for size, name in ((10**6, "million"), (1000, "thousand"), (100, "hundred")):
        if n >= size:
            head, rest = divmod(n, size)
            return f"{spell(head)} {name}" + (f" {spell(rest)}" if rest else "")
    raise AssertionError(n)


@st.composite
def integer_notation(draw: st.DrawFn, n: int) -> str:
    words = spell(n)
    forms = [
        str(n),
        _grouped(n, ",") if n >= 1000 else str(n),
        _grouped(n, "_"),
        _script(str(n), draw(st.sampled_from(_ZEROS))),
        words,
        words.title(),
        words.replace(" hundred ", " hundred and ", 1),
        f"{n}th" if n % 10 > 3 or n % 100 in (11, 12, 13) else str(n),
        f"{Decimal(n).scaleb(-2)}e2",
    ]
    return draw(st.sampled_from(forms))


@st.composite
def rate_notation(draw: st.DrawFn, rate: int) -> str:
    figure = canonical(str(Decimal(rate) / 100))
    fraction = canonical(str(Decimal(rate) / 10_000))
    return draw(
        st.sampled_from(
            [f"{figure}%", f"{figure} percent", f"{figure} per cent", fraction, f"0.{rate:04d}"]
        )
    )


@st.composite
def date_notation(draw: st.DrawFn, day: date) -> str:
    month = _MONTHS[day.month - 1]
    short = month[:3] + draw(st.sampled_from(["", "."]))
    d, m, y = day.day, day.month, day.year
    suffix = "th" if d in (11, 12, 13) else {1: "st", 2: "nd", 3: "rd"}.get(d % 10, "th")
    forms = [
        day.isoformat(),
        f"{y}/{m:02d}/{d:02d}",
        f"{d:02d}.{m:02d}.{y}",
        f"{d}/{m}/{y}",
        f"{m:02d}/{d:02d}/{y}",
        f"{m}-{d}-{y}",
        f"{d:02d}/{m:02d}/{y % 100:02d}",
        f"{d} {month} {y}",
        f"{d}{suffix} of {month} {y}",
        f"{month} {d}, {y}",
        f"{short} {d} {y}",
        f"{month.upper()} {d}{suffix} {y}",
        f"{d} {month.lower()} {y}" if month != "May" else f"{d} May {y}",
        _script(day.isoformat(), draw(st.sampled_from(_ZEROS))),
    ]
    return draw(st.sampled_from(forms))


@st.composite
def id_notation(draw: st.DrawFn, record_id: str) -> str:
    flips = draw(st.lists(st.booleans(), min_size=len(record_id), max_size=len(record_id)))
    return "".join(c.lower() if flip else c for c, flip in zip(record_id, flips, strict=True))


_JUNK = ["x", "X", ".0", ".00.1", "abc", "-", "e", "kg", "%%", "..5"]


# the two verdicts -----------------------------------------------------------------------------

_SENTENCE = "We checked the figure {} for this account."
_LOOKUP = ToolRecord("list_invoices", '{"customer_id": "CUS-QQQQ1"}', "", False)


def _records(*outputs: str) -> list[ToolRecord]:
    return [ToolRecord(_LOOKUP.name, _LOOKUP.arguments, out, False) for out in outputs]


def verdicts(summary: str, records: list[ToolRecord]) -> tuple[list, list, bool, bool]:
    """(reward's (raw, value, status) per citation, grader's, reward grounded, grader grounded)."""
    findings = Findings(root_cause="no_error", affected_invoices=[], summary=summary)
    report = trace_episode(findings, records)
    traced = trace_findings(findings, call_views(records, set()))
    ours = [(t.cited.raw, t.cited.value, t.status) for t in report.traces]
    theirs = [(t.text, t.value, t.status) for t in traced]
    return ours, theirs, report.grounded, grounded(traced)


def assert_traceable(text: str, output: str) -> None:
    ours, theirs, reward_ok, grader_ok = verdicts(_SENTENCE.format(text), _records(output))
    assert ours == theirs
    assert ours and all(status == "evidence" for _, _, status in ours), (text, ours)
    assert reward_ok and grader_ok, (text, ours)


def assert_untraceable(text: str, output: str) -> None:
    ours, theirs, reward_ok, grader_ok = verdicts(_SENTENCE.format(text), _records(output))
    assert ours == theirs
    assert any(status == "untraceable" for _, _, status in ours), (text, ours)
    assert not reward_ok and not grader_ok, (text, ours)


# (a) shown values are traceable in every notation ---------------------------------------------


@BOUNDED
@given(st.data(), shown())
def test_a_shown_amount_is_traceable_in_any_notation(data: st.DataObject, world: Shown) -> None:
    assert_traceable(data.draw(amount_notation(world.cents)), world.output())


@BOUNDED
@given(st.data(), shown())
def test_a_shown_integer_is_traceable_in_any_notation(data: st.DataObject, world: Shown) -> None:
    assert_traceable(data.draw(integer_notation(world.quantity)), world.output())


@BOUNDED
@given(st.data(), shown())
def test_a_shown_rate_is_traceable_as_a_fraction_or_percentage(
    data: st.DataObject, world: Shown
) -> None:
    assert_traceable(data.draw(rate_notation(world.rate)), world.output())


@BOUNDED
@given(st.data(), shown())
def test_a_shown_date_is_traceable_in_any_common_format(data: st.DataObject, world: Shown) -> None:
    assert_traceable(data.draw(date_notation(world.day)), world.output())


@BOUNDED
@given(st.data(), shown())
def test_a_shown_id_is_traceable_in_any_case(data: st.DataObject, world: Shown) -> None:
    assert_traceable(data.draw(id_notation(world.record_id)), world.output())


_KEYS = ["seats", "tax_rate", "proration_start", "fx_rate_date", "usage_units", "amount"]


@BOUNDED
@given(st.data(), shown())
def test_a_shown_value_written_as_a_tool_argument_is_traceable(
    data: st.DataObject, world: Shown
) -> None:
    """`seats=20` is how tool arguments read; `=` is never part of a number."""
    amount = canonical(str(Decimal(world.cents).scaleb(-2)))
    value = data.draw(st.sampled_from([amount, str(world.quantity), world.day.isoformat()]))
    assume(not (value.isdigit() and int(value) <= 12))  # a small count alone makes no chain
    assert_traceable(f"{data.draw(st.sampled_from(_KEYS))}={value}", world.output())


@BOUNDED
@given(st.data(), shown(), st.integers(1301, 10**7))
def test_an_invented_value_written_as_a_tool_argument_is_untraceable(
    data: st.DataObject, world: Shown, cents: int
) -> None:
    invented = canonical(str(Decimal(cents).scaleb(-2)))
    assume(cents % 100 and invented not in world.numbers())
    assert_untraceable(f"{data.draw(st.sampled_from(_KEYS))}={invented}", world.output())


# (b) invented values are untraceable in every notation ----------------------------------------


@BOUNDED
@given(st.data(), shown(), st.integers(100, 99_999_999))
def test_an_invented_amount_is_untraceable_in_any_notation(
    data: st.DataObject, world: Shown, cents: int
) -> None:
    assume(canonical(f"{cents // 100}.{cents % 100:02d}") not in world.numbers())
    assert_untraceable(data.draw(amount_notation(cents)), world.output())


@BOUNDED
@given(st.data(), shown(), st.integers(13, 999_999))
def test_an_invented_integer_is_untraceable_in_any_notation(
    data: st.DataObject, world: Shown, n: int
) -> None:
    assume(str(n) not in world.numbers())
    assert_untraceable(data.draw(integer_notation(n)), world.output())


@BOUNDED
@given(st.data(), shown(), st.integers(1, 9_999))
def test_an_invented_rate_is_untraceable(data: st.DataObject, world: Shown, rate: int) -> None:
    figure, fraction = Decimal(rate) / 100, Decimal(rate) / 10_000
    assume(not {canonical(str(figure)), canonical(str(fraction))} & world.numbers())
    assert_untraceable(data.draw(rate_notation(rate)), world.output())


@BOUNDED
@given(st.data(), shown(), st.dates(date(2031, 1, 1), date(2031, 12, 31)))
def test_an_invented_date_is_untraceable_in_any_common_format(
    data: st.DataObject, world: Shown, day: date
) -> None:
    # no output shows 2031; a slash date's second reading is in 2031 too
    assert_untraceable(data.draw(date_notation(day)), world.output())


@BOUNDED
@given(st.data(), shown())
def test_an_invented_id_is_untraceable_in_any_case(data: st.DataObject, world: Shown) -> None:
    invented = _ids(data.draw)
    assume(invented.upper() != world.record_id)
    assert_untraceable(data.draw(id_notation(invented)), world.output())


@BOUNDED
@given(st.data(), shown(), st.sampled_from(_JUNK))
def test_a_shown_amount_with_trailing_junk_is_untraceable(
    data: st.DataObject, world: Shown, junk: str
) -> None:
    whole, frac = world.cents // 100, f"{world.cents % 100:02d}"
    written = data.draw(st.sampled_from([f"{whole}.{frac}", f"{_grouped(whole, ',')}.{frac}"]))
    assert_untraceable(written + junk, world.output())


@BOUNDED
@given(st.data(), shown(), st.dates(date(2031, 1, 1), date(2031, 12, 31)))
def test_a_date_only_echoed_back_from_the_agents_argument_is_not_evidence(
    data: st.DataObject, world: Shown, day: date
) -> None:
    lookup = ToolRecord(
        "get_tax_rate",
        json.dumps({"jurisdiction": "DE", "date": day.isoformat()}),
        json.dumps({"jurisdiction": "DE", "date": day.isoformat(), "rate": "0.1900"}),
        False,
    )
    summary = _SENTENCE.format(data.draw(date_notation(day)))
    ours, theirs, reward_ok, grader_ok = verdicts(summary, [*_records(world.output()), lookup])
    assert ours == theirs
    assert [status for *_, status in ours] == ["echo_only"], ours
    assert not reward_ok and not grader_ok


# the cross-check: the two readers agree on every generated text -------------------------------


@st.composite
def mixed_summary(draw: st.DrawFn, world: Shown) -> str:
    """Several pieces, each a shown or invented value in some notation, or noise."""
    pieces = []
    for _ in range(draw(st.integers(1, 6))):
        kind = draw(st.sampled_from(["amount", "integer", "rate", "date", "id", "junk", "noise"]))
        invented = draw(st.booleans())
        if kind == "amount":
            cents = draw(st.integers(1, 99_999_999)) if invented else world.cents
            pieces.append(draw(amount_notation(cents)))
        elif kind == "integer":
            pieces.append(draw(integer_notation(draw(st.integers(0, 99_999)) if invented
                                                 else world.quantity)))  # fmt: skip
        elif kind == "rate":
            pieces.append(draw(rate_notation(draw(st.integers(1, 9_999)) if invented
                                              else world.rate)))  # fmt: skip
        elif kind == "date":
            day = draw(st.dates(date(2020, 1, 1), date(2035, 12, 31))) if invented else world.day
            pieces.append(draw(date_notation(day)))
        elif kind == "id":
            pieces.append(draw(id_notation(_ids(draw) if invented else world.record_id)))
        elif kind == "junk":
            pieces.append(draw(amount_notation(world.cents)) + draw(st.sampled_from(_JUNK)))
        else:
            pieces.append("".join(draw(st.lists(st.sampled_from(_NOISE), max_size=6))))
        pieces.append(draw(st.sampled_from(["and", "then", ";", "(see", "),", "of", "-", "."])))
    return " ".join(pieces)


_NOISE = [
    *"0123456789 .,-/:$€£%'_",
    "\u2212",
    "\u2009",
    "\u0663",
    "\u096f",
    "March",
    "may",
    "May",
    "Sept",
    "th",
    "of",
    "and",
    "per cent",
    "percent",
    "USD",
    "eur",
    "inv-",
    "CN-",
    "T",
    "Z",
    "e",
    "am",
    "pm",
    "twenty",
    "one",
    "hundred",
    "thousand",
    "½",
]


@settings(max_examples=100, deadline=None, derandomize=True)
@given(st.data(), shown())
def test_the_reward_and_the_grader_read_every_mixed_summary_alike(
    data: st.DataObject, world: Shown
) -> None:
    summary = data.draw(mixed_summary(world))
    ours, theirs, reward_ok, grader_ok = verdicts(summary, _records(world.output()))
    assert ours == theirs, summary
    assert reward_ok == grader_ok


@settings(max_examples=100, deadline=None, derandomize=True)
@given(st.lists(st.sampled_from(_NOISE), max_size=30).map("".join), shown())
def test_the_reward_and_the_grader_read_noise_alike(noise: str, world: Shown) -> None:
    # the noise is both the summary and a second tool output: both sides of the match vary
    ours, theirs, reward_ok, grader_ok = verdicts(noise, _records(world.output(), noise))
    assert ours == theirs, noise
    assert reward_ok == grader_ok


@pytest.mark.timeout(60)  # unguarded, writing 1e999999999 out in full takes minutes
def test_an_absurd_number_in_a_logged_argument_is_ignored_quickly_by_both_readers() -> None:
    # the tools refuse such arguments, so only a hand-made log can hold one: still no hang
    world = Shown(14_820, 13, 825, date(2026, 3, 15), "INV-7F3K2Q")
    odd = ToolRecord(
        "list_invoices", '{"a": 1e999999999, "b": -1e-999999999}', world.output(), False
    )

    ours, theirs, reward_ok, grader_ok = verdicts("Billed 148.20 in total.", [odd])

    assert ours == theirs == [("148.20", "148.2", "evidence")]
    assert reward_ok and grader_ok
