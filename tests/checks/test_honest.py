"""`python -m checks.honest`: honest rewrites of reference solutions keep full marks.

Played on a few real scenarios through `LedgerEnv` (a faulted one whose complaint names its
invoice, a no_error one, a held-out one), scored by the reward and the grader. The variants
in `READER_PENDING` wait on the token-reading rules of the fourth release (branch r4-read:
code spans, curly quotes, `7.25 %`, `C$`, `*`, glued operators, a count before an amount) and
the quoted-claim rule; once those land the set is emptied and every variant is held here.
"""

from __future__ import annotations

import pytest

from checks.honest import Outcome, check_scenario, main, print_table
from checks.honest_variants import VARIANTS

READER_PENDING = frozenset({
    "calc_symbols", "calc_backticked", "calc_times_star", "calc_times_glued",
    "ids_backticked", "amounts_backticked", "amounts_code_before", "amounts_code_after",
    "amounts_symbol", "percent_spaced", "dates_curly_quoted", "md_amount_first", "md_report",
    "claim_quoted", "claim_amount_quoted",
})  # fmt: skip
HELD = tuple(v.name for v in VARIANTS if v.name not in READER_PENDING)


@pytest.mark.parametrize(("split", "seed"), [("eval", 100000), ("eval", 100021),
                                             ("eval", 100032), ("heldout", 300000)])  # fmt: skip
def test_every_held_variant_keeps_full_marks(split: str, seed: int) -> None:
    outcomes = check_scenario(split, seed, HELD)
    short = [(o.variant, o.shaped, o.binary, o.untraceable) for o in outcomes
             if not o.full or o.disagrees]  # fmt: skip
    assert short == []
    assert {"reference", "extra_reads", "reads_reversed", "md_table"} <= {
        o.variant for o in outcomes
    }


def test_the_direct_route_is_played_where_the_complaint_names_the_invoice() -> None:
    (direct,) = check_scenario("eval", 100000, ("direct",))
    assert direct.full and direct.investigated
    assert check_scenario("eval", 100005, ("direct",)) == []  # a vague complaint names none


def test_the_table_names_each_variant_short_of_full_marks(capsys) -> None:
    good = Outcome("reference", "eval-1", 1.0, 1.0, True, (), True)
    split = Outcome("direct", "eval-1", 1.0, 1.0, False, (), True)  # binary 1, not grounded
    weak = Outcome("md_table", "eval-2", 0.3, 0.0, False, ("`445.20`",), True)
    assert split.disagrees and not weak.full and good.full
    assert print_table([good, split, weak]) == ["direct", "md_table"]
    assert "eval-2 (+0.30/0; `445.20`)" in capsys.readouterr().out


def test_the_command_exits_0_when_every_variant_holds(capsys) -> None:
    assert main(["--split", "eval", "--limit", "2", "--variant", "reference", "direct"]) == 0
    assert "0 short of full marks" in capsys.readouterr().out
