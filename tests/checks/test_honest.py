"""`python -m checks.honest`: honest rewrites of reference solutions keep full marks.

Played on a few real scenarios through `LedgerEnv` (a faulted one whose complaint names its
invoice, a vague one, a no_error one whose story's invoices include the
disputed one, a held-out one), scored by the reward and the grader. Every variant is held here:
the token-reading rules (G2) and the quoted claim (G3.1) of the fourth release have landed, so
no variant is expected to fall short.
"""

from __future__ import annotations

import pytest

from checks.honest import Outcome, check_scenario, main, print_table
from checks.honest_variants import VARIANTS
from env.generation.generator import generate
from env.generation.splits import split_seeds
from env.scenario import reveal_truth

HELD = tuple(v.name for v in VARIANTS)


@pytest.mark.parametrize(("split", "seed"), [("eval", 100000), ("eval", 100001), ("eval", 100005),
                                             ("eval", 100021), ("eval", 100032),
                                             ("heldout", 300000)])  # fmt: skip
def test_every_held_variant_keeps_full_marks(split: str, seed: int) -> None:
    outcomes = check_scenario(split, seed, HELD)
    short = [(o.variant, o.shaped, o.binary, o.untraceable) for o in outcomes
             if not o.full or o.disagrees]  # fmt: skip
    assert short == []
    assert {"reference", "extra_reads", "reads_reversed", "md_table", "claim_quoted"} <= {
        o.variant for o in outcomes
    }


def test_a_misleading_claimed_amount_quoted_as_a_claim_keeps_full_marks() -> None:
    """The first eval complaint that claims a wrong amount (found, not hard-coded)."""
    seed = next(s for s in split_seeds("eval")
                if "misleading_claim" in reveal_truth(generate("eval", s)).traps)  # fmt: skip
    (quoted,) = check_scenario("eval", seed, ("claim_amount_quoted",))
    assert quoted.full and not quoted.disagrees, quoted


def test_the_direct_route_is_played_where_the_complaint_names_the_invoice() -> None:
    (direct,) = check_scenario("eval", 100000, ("direct",))
    assert direct.full and direct.investigated
    assert check_scenario("eval", 100001, ("direct",)) == []  # a vague complaint names none


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
