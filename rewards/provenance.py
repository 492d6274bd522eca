"""Provenance: is every number an agent cites in its findings traceable to this episode's tools?

Design §5 ("Traceability"). Findings and tool outputs are read by one tokenizer, so a number is
normalised the same way on both sides, and a cited number is traceable when its key is in the
episode's evidence. Pure, and fast enough to run on every rollout: `python -m
rewards.provenance` times a typical episode (15 outputs of ~1 KB, a 300-character summary).

Rules:
 1. Amounts and numbers normalise to a canonical decimal: currency symbols and codes ($ € £ USD
    EUR GBP CAD AUD), thousands separators and trailing zeros are dropped, so `$1,234.50` ≡
    `1234.5` ≡ `1234.50 USD`. Signs are dropped on both sides ("-12.40" cites 12.40): a
    difference is signed either way round.
 2. Percentages: `8.25%` (or "8.25 percent") is the rate 0.0825. A cited percentage is traceable
    when the evidence holds the rate (0.0825) or the bare figure (8.25, e.g. `percent_off: 20`
    supports "20%"); a percentage in a tool output supports both its rate and its figure.
 3. Dates normalise to ISO: 2026-03-15, 2026/03/15, 15 March 2026, March 15, 2026, Mar 15 2026,
    15th of March 2026, 15.03.2026 (dotted: always day first). For 15/03/2026 and 03/15/2026 the
    reading that is a valid date is used; when both are (03/04/2026) the citation is traceable if
    either reading is in the evidence: the agent is not punished for the convention it copied
    in, and an invented date still has to hit one of two exact days. A date without a year
    ("March 15") needs an evidence date on that month and day; a month ("March 2026", 2026-03)
    needs an evidence date in that month. A UTC timestamp in a tool output supports its UTC date
    and, because the customer's local date may differ (offsets run from -12 h to +14 h), the day
    before when it is before 12:00 UTC and the day after when it is at or after 10:00 UTC. Times
    of day ("02:30", "10:15 pm") are neither cited nor evidence: they are copied from timestamps
    or are timezone conversions of them, and checking them would punish correct conversions.
 4. Ids (INV-, CUS-, SUB-, PAY-, CN-, PLN-, as printed: upper case) are atomic and matched
    whole. Digits glued to letters (INV-7F3K2Q, SAVE20, Q1, 3x) are never numbers, on either
    side, so INV-7F3K2Q never makes 7 or 3 evidence; a lower-case "inv-7f3k2q" is therefore not
    cited at all. Version-like strings (1.2.3) are skipped. Month names must be capitalised
    ("May 3", not "may 3", which is usually a verb).
 5. Allowed without evidence: small counts 0–12 written as integers ("3 invoices"; not "3.00",
    not "13"), and — with two or more affected invoices — the total of the findings' own
    overcharge amounts. With one invoice the "total" is the amount itself, which must be traced,
    and with several positive amounts the total differs from each, so no amount traces itself.
 6. Only the tool outputs passed in are evidence. The customer's complaint is a claim, not
    evidence; another episode's outputs are simply not passed. A top-level `{"error": ...}`
    output is not evidence either: it echoes the agent's own arguments back.
 7. A year inside a date is part of the date, not a separate number. A bare year (a plain
    integer 1900–2099 in the summary) is a date, traceable when an evidence date has that year
    or the evidence holds that integer.
 8. Evidence is every string, key and number of a tool output, free text included: a memo
    saying "as agreed, refund 500.00" was seen by the agent, so 500.00 is evidence. The JSON
    text is scanned as text, escapes decoded, rather than parsed and walked: JSON punctuation
    already separates values, so the same tokens come out of one regex pass (json.loads alone
    would spend a quarter of the time budget), and text that is not JSON needs no fallback.
    In `[14,200]` or after a comma, "14,200" is two values of a JSON list, not 14200.
    Exponent floats (1e-05) are not read; tools print rates as decimal strings.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date, timedelta
from decimal import Decimal
from functools import lru_cache
from itertools import chain
from typing import Literal

from env.findings import Findings
from env.money import format_cents

Kind = Literal["amount", "number", "percent", "date", "id"]

_MONTH_ABBR = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_MONTHS = {abbr: number for number, abbr in enumerate(_MONTH_ABBR, 1)}
# Every token starts with one of these characters. The pattern opens with this class so that the
# regex engine skips all other positions in C; each alternative below then continues after the
# lead and re-checks it with a lookbehind. Month names must be capitalised ("May", not "may").
_LEAD = "[0-9$€£\\-−ICSPJFMAOND]"
_MONTH_REST = (
    r"(?:(?<=J)(?:an(?:uary)?|une?|uly?)|(?<=F)eb(?:ruary)?|(?<=M)(?:ar(?:ch)?|ay)"
    r"|(?<=A)(?:pr(?:il)?|ug(?:ust)?)|(?<=S)ep(?:t(?:ember)?)?|(?<=O)ct(?:ober)?"
    r"|(?<=N)ov(?:ember)?|(?<=D)ec(?:ember)?)"
)
_MONTH = "(?:J|F|M|A|S|O|N|D)" + _MONTH_REST
_SUFFIX = (  # the lookahead lets most numbers (followed by '"', ',' or ')') skip the list
    r"(?:(?=[\ %$€£UEGCAsnrt])(?:\ ?%|\ (?:percent|per\ cent)\b|\ ?(?:USD|EUR|GBP|CAD|AUD)\b"
    r"|[$€£]|(?:st|nd|rd|th)\b))?"
)
_BODY = r"(?:[0-9]{1,3}(?:,[0-9]{3})+|[0-9]+)(?:\.[0-9]+)?"
# A plain number is tried first (most tokens are); it steps aside when a date, a time or a
# version string continues after it, and `num2` takes it back when none of those matched.
_NOT_CONTINUED = rf"(?!\w|[.:/-][0-9]|\s+(?:of\s+)?{_MONTH}(?![a-z]))"
_NUM_REST = (  # possessive: a number that steps aside must not retry its shorter prefixes
    r"[0-9]*+"
    # thousands groups, looked for only when ",ddd" follows at most three digits that do not
    # open a JSON list item ("[14,200]" is two values)
    r"(?:(?=,[0-9]{3})(?<![0-9]{4})(?<![\[,][0-9])(?<![\[,][0-9]{2})(?<![\[,][0-9]{3})"
    r"(?:,[0-9]{3}(?![0-9]))++)?+"
    rf"(?:\.[0-9]++)?+{_SUFFIX}"
)
_TOKEN_SOURCE = rf"""
    {_LEAD}
    (?:
      (?<=[0-9])(?<![\w.][0-9])(?<![A-Za-z_]-[0-9])    # a digit not glued to a word
      (?:
        (?P<num>{_NUM_REST}{_NOT_CONTINUED})
      | (?P<iso>[0-9]{{3}}-[0-9]{{1,2}}-[0-9]{{1,2}}
            (?:[T\ ][0-9]{{1,2}}:[0-9]{{2}}(?::[0-9]{{2}}(?:\.[0-9]+)?)?
               \ ?(?:Z|UTC|[+-][0-9]{{2}}:?[0-9]{{2}})?)?(?![\w-]))
      | (?P<ymd>[0-9]{{3}}/[0-9]{{1,2}}/[0-9]{{1,2}}(?![\w/]))
      | (?P<dmy>[0-9]?(?:/[0-9]{{1,2}}/|\.[0-9]{{1,2}}\.|-[0-9]{{1,2}}-)[0-9]{{4}}(?!\w))
      | (?P<dname>[0-9]?(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH}\.?
            (?:,?\s+[0-9]{{4}}(?![0-9]))?(?![A-Za-z]))
      | (?P<ym>[0-9]{{3}}-[0-9]{{2}}(?![\w-]))
      | (?P<skip>[0-9]?:[0-9]{{2}}(?::[0-9]{{2}}(?:\.[0-9]+)?)?(?:\ ?[AaPp]\.?[Mm]\b\.?)?(?![\w:])
            | [0-9]*(?:\.[0-9]+){{2,}}(?!\w))           # times of day, version strings
      | (?P<num2>{_NUM_REST}(?!\w|\.[0-9]))
      )
    | (?<=[$€£\-−])(?<![\w.][-−])(?<![0-9.][$€£])    # a currency symbol or a sign
      (?P<signed>[-−]?[$€£]?{_BODY}{_SUFFIX}(?!\w|\.[0-9]))
    | (?<![\w-][A-Z])(?=[NUALaeupco])                  # a capital not glued to a word,
      (?:                                              # then a letter an id or month can have
        (?P<id>(?:(?<=I)NV|(?<=C)US|(?<=S)UB|(?<=P)AY|(?<=C)N|(?<=P)LN)-[0-9A-Z]{{2,}}(?![\w-]))
      | {_MONTH_REST}\.?
        (?:
          (?P<my>,?\s+[0-9]{{4}}(?![0-9]))
        | (?P<mname>\s+[0-9]{{1,2}}(?![0-9])(?:st|nd|rd|th)?
              (?:(?:,\s*|\s+)[0-9]{{4}}(?![0-9]))?(?![A-Za-z]))
        )
      )
    )
    """
# Scanning uses a copy without groups (findall then returns plain strings); each distinct token
# is classified once by matching it alone against the named version (`_read`, cached).
_SCAN = re.compile(re.sub(r"\(\?P<\w+>", "(?:", _TOKEN_SOURCE), re.VERBOSE)
_TOKEN = re.compile(_TOKEN_SOURCE, re.VERBOSE)
_NUMBER = re.compile(r"([-−]?)[$€£]?([-−]?)[$€£]?([0-9,]+(?:\.[0-9]+)?)(.*)", re.S)
_TIME = re.compile(r"[T ]([0-9]{1,2}):")
_UTC_STAMP = re.compile(r"([0-9]{4}-[0-9]{2}-[0-9]{2})(?:T([0-9]{2}):[0-9]{2}:[0-9]{2}Z)?")
_CURRENCY_CODES = frozenset({"USD", "EUR", "GBP", "CAD", "AUD"})
_DIGITS = re.compile(r"[0-9]+")
_MONTH_NAME = re.compile(_MONTH)
_ERROR_OUTPUT = re.compile(r'\s*\{\s*"error"\s*:')
_ESCAPE = re.compile(r"\\(?:u([0-9a-fA-F]{4})|(.))", re.S)
_UNESCAPED = {"n": "\n", "t": "\t", "r": "\r", "b": " ", "f": " "}


@dataclass(frozen=True)
class CitedNumber:
    """One number in the findings. `value` is the key matched against evidence: a canonical
    decimal ("1234.5"; a percentage as its rate, "0.0825"), an ISO date ("2026-03-15"), a month
    ("2026-03"), a month-day ("--03-15"), a year ("2026"), an id, or for an ambiguous numeric
    date both readings joined by "|" ("2026-03-04|2026-04-03")."""

    raw: str
    kind: Kind
    value: str


@dataclass(frozen=True)
class ProvenanceReport:
    """Every citation in the findings, in order and once each, and those without evidence; the
    reward's evidence-chain and hallucination terms read `traceable`."""

    cited: tuple[CitedNumber, ...]
    untraceable: tuple[CitedNumber, ...]

    @property
    def traceable(self) -> bool:
        return not self.untraceable


@dataclass(frozen=True)
class Evidence:
    """Everything this episode's tool outputs showed, as normalised keys (see CitedNumber)."""

    numbers: frozenset[str]
    dates: frozenset[str]
    months: frozenset[str]
    month_days: frozenset[str]
    years: frozenset[str]
    ids: frozenset[str]


def _canon(digits: str) -> str:
    """'1,234.50' -> '1234.5'; '007' -> '7'; '0.0825' stays."""
    whole, _, frac = digits.replace(",", "").partition(".")
    whole = whole.lstrip("0") or "0"
    frac = frac.rstrip("0")
    return f"{whole}.{frac}" if frac else whole


def _shift(canon: str, places: int) -> str:
    """Moves the decimal point: ('8.25', -2) -> '0.0825'."""
    return _canon(format(Decimal(canon).scaleb(places), "f"))


def _iso(year: str | int, month: str | int, day: str | int) -> str:
    return f"{int(year):04d}-{int(month):02d}-{int(day):02d}"


def _valid(year: int, month: int, day: int) -> bool:
    try:
        date(year, month, day)
    except ValueError:
        return False
    return True


def _numeric_date(token: str) -> str:
    """15/03/2026 -> one reading; 03/04/2026 -> both readings; 15.03.2026 -> day first."""
    a, b, year = _DIGITS.findall(token)
    y, first, second = int(year), int(a), int(b)
    day_first = _iso(y, second, first)
    if token[len(a)] == ".":
        return day_first
    month_first = _iso(y, first, second)
    readings = {
        r
        for r, ok in (
            (day_first, _valid(y, second, first)),
            (month_first, _valid(y, first, second)),
        )
        if ok
    }
    return "|".join(sorted(readings)) or day_first  # no valid reading: never traceable


def _month(token: str) -> int:
    match = _MONTH_NAME.search(token)
    assert match is not None  # the token matched a month-name alternative
    return _MONTHS[match.group()[:3].lower()]


def _read_number(token: str) -> CitedNumber:
    match = _NUMBER.match(token)
    assert match is not None  # the token matched a number alternative
    sign = match[1] or match[2]
    digits, suffix = match[3], match[4].strip()
    value = _canon(digits)
    if suffix.startswith(("%", "per")):
        return CitedNumber(token, "percent", _shift(value, -2))
    currency = "$" in token or "€" in token or "£" in token or suffix in _CURRENCY_CODES
    if currency or len(digits.partition(".")[2]) == 2:
        return CitedNumber(token, "amount", value)
    if not sign and len(digits) == 4 and "1900" <= digits <= "2099":
        return CitedNumber(token, "date", digits)  # rule 7: a bare year
    return CitedNumber(token, "number", value)


@lru_cache(maxsize=16384)
def _read(token: str) -> tuple[CitedNumber | None, str]:
    """A scanned token -> its citation and alternative name; None for times and versions.
    Cached: an episode's outputs repeat the same amounts and dates many times."""
    match = _TOKEN.match(token)
    assert match is not None and match.lastgroup is not None  # the scanner found this token
    group = match.lastgroup
    if group in ("num", "num2", "signed"):
        return _read_number(token), group
    if group == "id":
        return CitedNumber(token, "id", token), group
    if group == "iso":
        value = _iso(*_DIGITS.findall(token)[:3])
    elif group == "ymd":
        value = _iso(*token.split("/"))
    elif group == "dmy":
        value = _numeric_date(token)
    elif group in ("dname", "mname"):
        numbers, month = _DIGITS.findall(token), _month(token)
        day = int(numbers[0])
        value = _iso(numbers[1], month, day) if len(numbers) > 1 else f"--{month:02d}-{day:02d}"
    elif group == "my":
        value = f"{_DIGITS.findall(token)[0]}-{_month(token):02d}"
    elif group == "ym":
        value = token
    else:
        return None, group
    return CitedNumber(token, "date", value), group


@lru_cache(maxsize=32768)
def _evidence_keys(token: str) -> tuple[tuple[str, str], ...]:
    """(field of Evidence, key) pairs that one token of a tool output contributes."""
    if token.replace(".", "", 1).isdigit():  # most tokens of an output: "148.20", "14"
        return (("numbers", _canon(token)),)
    stamp = _UTC_STAMP.fullmatch(token)  # the tools' own date forms skip the general reader
    if stamp is not None:
        return _date_keys(stamp[1], stamp[2])
    cited, group = _read(token)
    if cited is None:
        return ()
    kind, value = cited.kind, cited.value
    if kind == "id":
        return (("ids", value),)
    if kind == "percent":
        return (("numbers", value), ("numbers", _shift(value, 2)))
    if kind != "date" or len(value) == 4:
        return (("numbers", value),)  # a bare year in an output is a number seen
    if value.startswith("--"):
        return (("month_days", value),)
    if len(value) == 7:
        return (("months", value),)
    if "|" in value:
        return tuple(("dates", v) for v in value.split("|"))
    time = _TIME.search(token) if group == "iso" else None
    return _date_keys(value, time[1] if time else None)


def _date_keys(day: str, utc_hour: str | None) -> tuple[tuple[str, str], ...]:
    """A date; for a UTC timestamp also the neighbouring day that the customer's local date
    may be (rule 3): UTC-12 puts 02:30 UTC on the day before, UTC+14 puts 10:00 on the next."""
    if utc_hour is None or not _valid(*map(int, day.split("-"))):
        return (("dates", day),)
    utc_day, hour = date.fromisoformat(day), int(utc_hour)
    keys = [("dates", day)]
    if hour < 12:
        keys.append(("dates", (utc_day - timedelta(days=1)).isoformat()))
    if hour >= 10:
        keys.append(("dates", (utc_day + timedelta(days=1)).isoformat()))
    return tuple(keys)


def _unescape(match: re.Match[str]) -> str:
    if match[1]:
        return chr(int(match[1], 16))
    return _UNESCAPED.get(match[2], match[2])


@lru_cache(maxsize=4096)
def _output_keys(output: str) -> frozenset[tuple[str, str]]:
    """One output's evidence as (field, key) pairs. Cached on the text, because the rollouts of
    one scenario repeat many calls; the per-token work runs in C (map, chain, frozenset)."""
    if _ERROR_OUTPUT.match(output):
        return frozenset()  # rule 6: an error echoes the agent's own arguments
    if "\\" in output:
        output = _ESCAPE.sub(_unescape, output)
    return frozenset(chain.from_iterable(map(_evidence_keys, set(_SCAN.findall(output)))))


def evidence_index(tool_outputs: Iterable[str]) -> Evidence:
    """Builds the episode's evidence once; pass the result to check_provenance to reuse it."""
    found: dict[str, set[str]] = {f: set() for f in ("numbers", "dates", "months", "month_days")}
    found["ids"] = set()
    for field, key in frozenset[tuple[str, str]]().union(*map(_output_keys, tool_outputs)):
        found[field].add(key)
    dates = frozenset(found["dates"])
    months = found["months"] | {d[:7] for d in dates}
    return Evidence(
        numbers=frozenset(found["numbers"]),
        dates=dates,
        months=frozenset(months),
        month_days=frozenset(found["month_days"] | {"--" + d[5:] for d in dates}),
        years=frozenset(m[:4] for m in months),
        ids=frozenset(found["ids"]),
    )


def extract_cited(findings: Findings) -> tuple[CitedNumber, ...]:
    """Invoice ids and overcharge amounts, then every number, date and id in the summary."""
    cited: list[CitedNumber | None] = []
    for item in findings.affected_invoices:
        cited.append(CitedNumber(item.invoice_id, "id", item.invoice_id))
        amount = item.overcharge_amount
        cited.append(CitedNumber(amount, "amount", _canon(amount)))
    cited.extend(_read(token)[0] for token in _SCAN.findall(findings.summary))
    return tuple(c for c in dict.fromkeys(cited) if c is not None)


def _supported(c: CitedNumber, ev: Evidence, own_total: str | None) -> bool:
    value = c.value
    if c.kind == "id":
        return value in ev.ids
    if c.kind == "percent":
        return value in ev.numbers or _shift(value, 2) in ev.numbers
    if c.kind == "date":
        if len(value) == 4:
            return value in ev.years or value in ev.numbers
        if value.startswith("--"):
            return value in ev.month_days
        if len(value) == 7:
            return value in ev.months
        return any(v in ev.dates for v in value.split("|"))
    if value in ev.numbers or value == own_total:
        return True
    # rule 5: small counts, written as integers
    return c.kind == "number" and value.isdigit() and int(value) <= 12 and "." not in c.raw


def check_provenance(
    findings: Findings, tool_outputs: Iterable[str] | Evidence
) -> ProvenanceReport:
    """Which cited numbers this episode's tool outputs do not support. Example: an agent whose
    get_invoice showed "tax": "12.40" may cite "$12.40" and "3 invoices", but not "$13.00".
    Pass an Evidence from evidence_index to check several findings against one episode."""
    ev = tool_outputs if isinstance(tool_outputs, Evidence) else evidence_index(tool_outputs)
    items = findings.affected_invoices
    own_total = (
        _canon(format_cents(sum(i.overcharge_cents for i in items))) if len(items) >= 2 else None
    )
    cited = extract_cited(findings)
    return ProvenanceReport(
        cited=cited,
        untraceable=tuple(c for c in cited if not _supported(c, ev, own_total)),
    )


def _typical_episode() -> tuple[Findings, list[str]]:
    """15 invoice-like outputs of about 1.2 KB, with different numbers, and a 300-char summary."""
    outputs = []
    for n in range(15):
        cents, day = 14820 + 1371 * n, f"2026-{1 + n % 12:02d}-{1 + n:02d}"
        lines = ", ".join(
            f'{{"description": "Pro plan, seat block {k}", "quantity": {3 + n}, '
            f'"amount": "{format_cents(cents + 7 * k)}"}}'
            for k in range(10)
        )
        outputs.append(
            f'{{"invoice_id": "INV-7F3K{n:02d}", "customer_id": "CUS-4Q2P9A", "currency": "USD", '
            f'"period_start": "{day}", "issued_at": "{day}T0{n % 10}:30:00Z", "status": "paid", '
            f'"memo": "as agreed, refund {format_cents(cents // 3)} on request", '
            f'"inputs": {{"plan_id": "PLN-PRO01", "seats": {3 + n}, "tax_rate": "0.0825", '
            f'"fx_rate": "1.37{n:02d}", "usage_units": {1000 + n}}}, "lines": [{lines}], '
            f'"tax": "{format_cents(cents * 33 // 400)}", "total": "{format_cents(cents)}"}}'
        )
    summary = (
        "Invoice INV-7F3K00 (issued January 1, 2026) applied 8.25% tax on $148.20 for 3 seats; "
        "the rate in force on 2026-01-01 was lower, so the customer paid $12.22 too much. "
        "INV-7F3K01 was also affected (13.35 USD). Total overcharge $25.57 across 2 invoices; "
        "credit notes drafted for both, fx 1.3701 unchanged."
    )
    invoices = [("INV-7F3K00", "12.22"), ("INV-7F3K01", "13.35")]
    findings = Findings.model_validate(
        {
            "root_cause": "wrong_tax_rate",
            "affected_invoices": [{"invoice_id": i, "overcharge_amount": a} for i, a in invoices],
            "summary": summary,
        }
    )
    return findings, outputs


if __name__ == "__main__":
    import json
    import timeit

    findings, outputs = _typical_episode()
    report = check_provenance(findings, outputs)
    print(f"traceable={report.traceable} cited={len(report.cited)} outputs=15 x ~1.1 KB")

    def cold() -> None:  # as if no output or token had been seen before in this process
        _output_keys.cache_clear()
        _read.cache_clear()
        _evidence_keys.cache_clear()
        check_provenance(findings, outputs)

    evidence = evidence_index(outputs)
    for label, run in (
        ("check_provenance, nothing cached", cold),
        ("check_provenance, outputs seen before", lambda: check_provenance(findings, outputs)),
        ("check_provenance with a prebuilt Evidence", lambda: check_provenance(findings, evidence)),
        ("yardstick: json.loads of the same outputs", lambda: [json.loads(o) for o in outputs]),
    ):
        best = min(timeit.repeat(run, number=200, repeat=5)) / 200
        print(f"{label}: {best * 1e3:.3f} ms")
