"""The edge-case table of the token grammar (rewards/README.md "Reading: the token grammar"),
as data: both readers' tests run every row (`tests/rewards/test_reading_grammar.py` for the
reward, `tests/eval/test_reading_grammar.py` for the grader). Imports neither reader.

A row: (written, items), each item as the reader's items list gives it (G2.6): an operator
as its string, a word that is no token as None, a token as (kind, value, flags), where flags
holds "c" for a count candidate (a whole number without currency, G3) and "-" for a negative
number (G2.5).
"""

from __future__ import annotations

Item = str | None | tuple[str, str, str]

CASES: list[tuple[str, list[Item]]] = [
    # markdown, quotes and brackets are punctuation around a token (G2.2)
    ("`INV-7F3K2Q`", [("id", "INV-7F3K2Q", "")]),
    ("**inv-7f3k2q**", [("id", "INV-7F3K2Q", "")]),
    ("[INV-7F3K2Q]", [("id", "INV-7F3K2Q", "")]),
    ("`306.16`", [("number", "306.16", "")]),
    ("**306.16**", [("number", "306.16", "")]),
    ("_306.16_", [("number", "306.16", "")]),
    ("| 306.16 |", [("number", "306.16", "")]),
    ("(306.16)", [("number", "306.16", "")]),
    ("~~306.16~~", [("number", "306.16", "")]),
    ("## Total 306.16", [None, ("number", "306.16", "")]),
    ("“2025-10-13”", [("date", "2025-10-13", "")]),
    ("‘2025-10-13’", [("date", "2025-10-13", "")]),
    ("«15.03.2026»", [("date", "2026-03-15", "")]),
    # a percentage, spaced or not (G2.3, G2.4)
    ("7.25 %", [("percent", "0.0725", "")]),
    ("7.25%", [("percent", "0.0725", "")]),
    ("7.25 percent", [("percent", "0.0725", "")]),
    ("7.25 per cent", [("percent", "0.0725", "")]),
    # currency marks, glued or spaced (G2.3, G2.4): money, never a count
    ("C$306.16", [("number", "306.16", "")]),
    ("A$ 306.16", [("number", "306.16", "")]),
    ("US$306.16", [("number", "306.16", "")]),
    ("306.16 USD", [("number", "306.16", "")]),
    ("usd306.16", [("number", "306.16", "")]),
    ("€ 306,16", [("number", "306.16", "")]),
    ("CA$ 12", [("number", "12", "")]),
    ("12 CAD", [("number", "12", "")]),
    ("12", [("number", "12", "c")]),
    # list markers and counts are never glued onto an amount (G2.2, G2.3)
    ("(1): 306.16", [("number", "1", "c"), ("number", "306.16", "")]),
    ("1. 445.20", [("number", "1", "c"), ("number", "445.2", "")]),
    ("2) 445.20", [("number", "2", "c"), ("number", "445.2", "")]),
    ("- 445.20", ["-", ("number", "445.2", "")]),
    ("1\n445.20", [("number", "1", "c"), ("number", "445.2", "")]),
    ("1 445.20", [("number", "1445.2", "")]),
    ("1 234 567,89", [("number", "1234567.89", "")]),
    ("1 44.20", [("number", "1", "c"), ("number", "44.2", "")]),
    # operators, spaced or glued between two numbers (G2.1, G2.2)
    ("2 * 306.16", [("number", "2", "c"), "*", ("number", "306.16", "")]),
    ("2*306.16", [("number", "2", "c"), "*", ("number", "306.16", "")]),
    ("306.16x2", [("number", "306.16", ""), "x", ("number", "2", "c")]),
    ("2×306.16", [("number", "2", "c"), "×", ("number", "306.16", "")]),
    ("2 · 306.16", [("number", "2", "c"), "·", ("number", "306.16", "")]),
    ("1027.03/3", [("number", "1027.03", ""), "/", ("number", "3", "c")]),
    ("INV-7F3K2Q/INV-8G4L3R", [("id", "INV-7F3K2Q", ""), "/", ("id", "INV-8G4L3R", "")]),
    ("2025-10-01/2025-10-31", [("date", "2025-10-01", ""), "/", ("date", "2025-10-31", "")]),
    ("2025/10", [("word", "2025/10", "")]),
    ("148.20x", [("word", "148.20X", "")]),
    ("1234.88.0", [("word", "1234.88.0", "")]),
    ("2x2x2", [("word", "2X2X2", "")]),
    ("SAVE20", [("word", "SAVE20", "")]),
    ("C$$5", [("word", "C$$5", "")]),
    ("1027.03-400.00", [("word", "1027.03-400.00", "")]),
    ("1027.03−400.00", [("word", "1027.03-400.00", "")]),
    ("1027.03 – 400.00", [("number", "1027.03", ""), "-", ("number", "400", "")]),
    ("1027.03 — 400.00", [("number", "1027.03", ""), "-", ("number", "400", "")]),
    ("seats=20", [None, "=", ("number", "20", "c")]),
    # dates (G2.4): a bare `T` is no date
    ("2025-10-13T", [("word", "2025-10-13T", "")]),
    ("2025-10-13T10:30:00Z", [("date", "2025-10-13", "")]),
    ("31/02/2026", [("unreadable", "31/02/2026", "")]),
    ("2026-13", [("unreadable", "2026-13", "")]),
    ("March 15, 2026", [("date", "2026-03-15", "")]),
    ("Mar. 15", [("month_day", "--03-15", "")]),
    ("15th of March", [("month_day", "--03-15", "")]),
    ("Oct., 2026", [("month", "2026-10", "")]),
    ("15/03/26", [("date", "2026-03-15", "")]),
    # ids and case folding, ASCII only (G2.1)
    ("inv-7f3k2q", [("id", "INV-7F3K2Q", "")]),
    ("INV-STRAßE1", [("word", "INV-STRAßE1", "")]),
    ("inv-ı7", [("word", "INV-ı7", "")]),
    ("İNV-7F3K2Q", [("word", "İNV-7F3K2Q", "")]),
    ("INV-İ", [None]),
    ("inv-abc", [None]),
    ("INV-ABC", [("id", "INV-ABC", "")]),
    # digits of any script, numeric characters that are no digit (G2.1, G2.4)
    ("٣٠٦٫١٦", [("number", "306.16", "")]),
    ("３０６.１６", [("number", "306.16", "")]),
    ("३०६.१६", [("number", "306.16", "")]),
    ("三", [("unreadable", "三", "")]),
    ("1三", [("unreadable", "1三", "")]),
    ("½", [("word", "1⁄2", "")]),
    ("Ⅻ", [None]),
    # separators, exponents, spelled-out numbers (G2.3, G2.4)
    ("1_234.88", [("number", "1234.88", "")]),
    ("1'234.88", [("number", "1234.88", "")]),
    ("1.234,88", [("number", "1234.88", "")]),
    ("1,234.88", [("number", "1234.88", "")]),
    ("1.4820e2", [("number", "148.2", "")]),
    ("1e99", [("unreadable", "1e99", "")]),
    ("one hundred forty-eight", [("number", "148", "")]),
    ("one two", [("unreadable", "one two", "")]),
    ("three", [("number", "3", "c")]),
    # sign (G2.5)
    ("−12.40", [("number", "12.4", "-")]),
    ("$-12.40", [("number", "12.4", "-")]),
    ("USD -12.40", [("number", "12.4", "-")]),
    ("-3", [("number", "3", "c-")]),
    # times of day
    ("10am", [("time", "10am", "")]),
    ("14:30", [("time", "14:30", "")]),
]

# G10.1-G10.3: (summary, calculations as (a, op, b, c, holds)) with op one of + - * /
CALCULATIONS: list[tuple[str, list[tuple[str, str, str, str, bool]]]] = [
    ("2 * 306.16 = 612.32", [("2", "*", "306.16", "612.32", True)]),
    ("306.16x2=612.32", [("306.16", "*", "2", "612.32", True)]),
    ("612.32 = 2 × 306.16", [("2", "*", "306.16", "612.32", True)]),
    ("1027.03 – 400.00 = 627.03", [("1027.03", "-", "400", "627.03", True)]),
    ("627.03 = 1027.03 − 400.00", [("1027.03", "-", "400", "627.03", True)]),
    ("306.16 USD - 100.00 USD = 206.16 USD", [("306.16", "-", "100", "206.16", True)]),
    ("1027.03 / 3 = 342.34", [("1027.03", "/", "3", "342.34", True)]),
    ("400.00 - 1027.03 = -627.03", [("400", "-", "1027.03", "627.03", True)]),
    (
        "1027.03 - 400.00 = 627.03 - 400.00 = 227.03",
        [("1027.03", "-", "400", "627.03", True), ("627.03", "-", "400", "227.03", True)],
    ),
    ("627.03 = 1027.03 - 400.00 + 1.00", []),
    ("x - 627.03 = 1027.03 - 400.00", []),
    ("1027.03-400.00 = 627.03", []),
    ("2 * 306.16 = 612.33", [("2", "*", "306.16", "612.33", False)]),
]
