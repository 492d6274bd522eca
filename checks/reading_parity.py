"""Reward vs grader, token by token: do the two readers read every summary alike, and as seen?

    python -m checks.reading_parity [--summaries 20000] [--seed 0]

A seeded differential fuzz of the token grammar (rewards/README.md G2.0-G2.6, G10.1): it writes
`--summaries` summaries mixing found amounts, ids, dates and percents in every notation the
grammar names, Unicode look-alikes (other-script digits, `ß`, dotted `İ`, Cyrillic letters,
dashes, spaces), operators and calculations written every way and junk, dressed in markup
(`checks.reading_parity_markup`: markdown, HTML, TeX math, invisible characters and line
breaks, some of it inside numbers). Each is rendered by both sides (`rewards.display.render`,
`eval.grounding.display.rendered`: the same text is required), then read with the reward
(`rewards.numbers.read_items`, `rewards.derived`) and with the grader
(`eval.grounding.read.read_with_signs`, `eval.grounding.derive`), comparing how they classify
every word (kind, value, count flag, sign, operator) and every calculation (operands, result,
arithmetic, what it grounds). The display check: the digits of each reader's tokens, run by
run, are the digit runs of the rendered text (every digit a person sees is read once, and
digits that display side by side are one token). Exits 1 on any disagreement or display
mismatch, printing the first and its summary; prints the counts. Like `checks.agreement`, this
module imports both sides on purpose.
"""

from __future__ import annotations

import random
import re
import sys
import time
import unicodedata
from collections import Counter
from collections.abc import Sequence

from checks.reading_parity_gen import summary
from env.cli import EXIT_FAILED, Parser, positive_int, run_command
from eval.grounding import derive as grader_derive
from eval.grounding.display import rendered
from eval.grounding.notation import Reading
from eval.grounding.read import read, read_with_signs
from rewards import derived as reward_derived
from rewards.display import render
from rewards.numbers import Token, read_items, read_text

_KIND = {"+": "add", "-": "sub", "*": "mul", "/": "div"}


def _reward_item(item: Token | str | None) -> tuple:
    if isinstance(item, Token):
        return ("token", item.raw, item.kind, item.value, item.integer, item.negative)
    return ("op", item) if isinstance(item, str) else ("none",)


def _grader_item(item: Reading | str | None) -> tuple:
    if isinstance(item, Reading):
        minus = item.kind == "number" and grader_derive.minus(item.text)
        return ("token", item.text, item.kind, item.value, item.whole, minus)
    return ("op", item) if isinstance(item, str) else ("none",)


def _fact_of(found: frozenset[str], value: str, small: bool) -> tuple[int, ...]:
    """The fuzz's stand-in for G4: a found fact is a found amount that is no count."""
    return (0,) if value in found and not small else ()


def _reward_calcs(text: str, found: frozenset[str]) -> tuple:
    calcs = []
    for c in reward_derived.calculations(text):
        left, right, result = c.left, c.right, c.result
        calcs.append(
            (left.value, left.negative, _KIND[c.op], right.value, right.negative, result.value)
        )
        calcs.append((result.negative, c.holds))
    derived = reward_derived.derive(
        text,
        lambda t: _fact_of(found, t.value, t.integer and int(t.value) <= 12),
    )
    return tuple(calcs), tuple(sorted(derived.grounded)), tuple(sorted(derived.wrong))


def _grader_calcs(text: str, found: frozenset[str]) -> tuple:
    minus = grader_derive.minus
    calcs = []
    for c in grader_derive.written(text):
        calcs.append((c.a.value, minus(c.a.text), c.kind, c.b.value, minus(c.b.text), c.c.value))
        calcs.append((minus(c.c.text), c.right))
    derived = grader_derive.derived_values(
        text,
        lambda r: _fact_of(found, r.value, r.whole and int(r.value) <= 12),
    )
    return tuple(calcs), tuple(sorted(derived.grounds)), tuple(sorted(derived.wrong))


def displayed_runs(shown: str) -> list[str]:
    """The digit runs a person sees in a rendered text: the direction overrides G2.0 leaves for
    the reader dropped (they are invisible), NFKC, every decimal digit as ASCII (the fuzz's own
    reading of G2.1 for digits), then each maximal run of digits."""
    text = unicodedata.normalize("NFKC", shown.replace("\u202d", "").replace("\u202e", ""))
    text = "".join(str(unicodedata.decimal(ch)) if ch.isdecimal() else ch for ch in text)
    return _RUNS.findall(text)


def _token_runs(raws: list[str]) -> list[str]:
    return [run for raw in raws for run in _RUNS.findall(raw)]


_RUNS = re.compile("[0-9]+")


def display_mismatch(shown: str) -> str | None:
    """G2.0's promise on a rendered text: each reader's tokens hold the digits a person sees,
    run by run (no digit lost or read twice, no run split between two tokens); None if so."""
    seen = displayed_runs(shown)
    ours = _token_runs([t.raw for t in read_text(shown)])
    theirs = _token_runs([r.text for r in read(shown)])
    for name, runs in (("reward", ours), ("grader", theirs)):
        if runs != seen:
            return f"the {name} reads digit runs {runs[:12]}, the text shows {seen[:12]}"
    return None


def first_split(text: str, found: frozenset[str]) -> str | None:
    """A one-line description of the first place the two readers differ on `text`, or None."""
    shown = render(text)
    if rendered(text) != shown:
        return f"rendered text: reward {shown!r} / grader {rendered(text)!r}"
    ours = [_reward_item(i) for i in read_items(shown)]
    theirs = [_grader_item(i) for i in read_with_signs(shown)]
    for k, (a, b) in enumerate(zip(ours, theirs, strict=False)):
        if a != b:
            return f"item {k}: reward {a} / grader {b}"
    if len(ours) != len(theirs):
        k = min(len(ours), len(theirs))
        extra = ours[k:] or theirs[k:]
        return f"item {k}: one reader has {len(ours)} items, the other {len(theirs)}: {extra[0]}"
    # now and then, the token lists the citations come from (G6), read apart from the items
    sample = text.count("\n") > 6
    if sample and [_reward_item(t) for t in read_text(shown)] != [
        _grader_item(r) for r in read(shown)
    ]:
        return "the token lists (read_text / read) differ"
    ours_calc, theirs_calc = _reward_calcs(text, found), _grader_calcs(text, found)
    if ours_calc != theirs_calc:
        return f"calculations: reward {ours_calc} / grader {theirs_calc}"
    return None


def run(summaries: int, seed: int) -> tuple[Counter[str], list[tuple[str, str]]]:
    """Reads `summaries` generated summaries with both readers: (counts, failures), each
    failure a disagreement or a display mismatch."""
    rng = random.Random(seed)
    counts: Counter[str] = Counter()
    failures: list[tuple[str, str]] = []
    for _ in range(summaries):
        text, found = summary(rng)
        counts["summaries"] += 1
        if read_items(render(text)) != read_items(text):
            counts["summaries read otherwise once rendered"] += 1
        split = first_split(text, found)
        if split is not None:
            failures.append((split, text))
            counts["disagreements"] += 1
            continue
        mismatch = display_mismatch(render(text))
        if mismatch is not None:
            failures.append((f"display: {mismatch}", text))
            counts["display mismatches"] += 1
        for item in read_items(render(text)):
            counts["items"] += 1
            if isinstance(item, Token):
                counts["tokens"] += 1
                counts[f"kind {item.kind}"] += 1
            elif isinstance(item, str):
                counts["operators"] += 1
        for calc in reward_derived.calculations(text):
            counts["calculations"] += 1
            counts["calculations that hold" if calc.holds else "calculations wrong"] += 1
    return counts, failures


def main(argv: Sequence[str] | None = None) -> int:
    return run_command("python -m checks.reading_parity", _main, argv)


def _main(argv: Sequence[str] | None) -> int:
    parser = Parser(prog="python -m checks.reading_parity", description=__doc__)
    parser.add_argument("--summaries", type=positive_int, default=20_000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    started = time.perf_counter()
    counts, failures = run(args.summaries, args.seed)
    seconds = time.perf_counter() - started
    for name in sorted(counts):
        print(f"{name:>40}: {counts[name]:,}")
    print(f"{'seconds':>40}: {seconds:.1f}")
    if failures:
        split, text = failures[0]
        print(f"FAIL: {len(failures)} summaries read differently or not as seen; the first: "
              f"{split}")  # fmt: skip
        print(f"  summary: {text!r}")
        return EXIT_FAILED
    print(f"ok: 0 disagreements and 0 display mismatches over {counts['summaries']:,} summaries "
          f"(seed {args.seed})")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
