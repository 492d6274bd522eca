"""`python -m checks.dedup`: normalisation, the inverted index against brute force, the command.

The index must find exactly what comparing every pair would find; the command runs
in-process through `main(argv)` on a short train sample and once as a real subprocess.
"""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

import pytest

from checks.dedup import TrainIndex, body_of, jaccard, main, mask_body, normalise, shingles

ROOT = Path(__file__).resolve().parents[2]
TWIN_A = "Hello, INV-7F3K2Q was billed 120.40 EUR on 2025-03-01 for 5 seats. Please fix it."
TWIN_B = "Hello, INV-Q9ZZ2A was billed 99.00 EUR on 2025-04-01 for 3 seats. Please fix it."


def test_ids_and_numbers_become_placeholders() -> None:
    assert normalise("CUS-4Q2P9A paid 1,204.50 on 2025-03-01 (INV-7F3K2Q)") == [
        "<id>", "paid", "<num>", "on", "<num>", "<id>",
    ]  # fmt: skip


def test_pool_names_are_masked_only_when_asked() -> None:
    text = "Regards, Aaron Abbott"
    assert normalise(text) == ["regards", "aaron", "abbott"]
    assert normalise(text, mask_names=True) == ["regards", "<name>", "<name>"]


def test_complaints_that_differ_only_in_ids_and_numbers_are_identical() -> None:
    assert jaccard(shingles(TWIN_A), shingles(TWIN_B)) == 1.0
    assert TWIN_A != TWIN_B


def test_the_index_finds_an_exact_twin_and_ignores_unrelated_text() -> None:
    index = TrainIndex(["Nothing in common here at all, friend.", TWIN_B])
    assert index.most_similar(TWIN_A) == (1, 1.0)
    assert index.most_similar("zebra yak walrus") == (-1, 0.0)
    assert TWIN_B in index.exact and TWIN_A not in index.exact


def test_the_index_agrees_with_brute_force_on_random_texts() -> None:
    rng = random.Random(7)
    words = ["the", "invoice", "was", "charged", "twice", "for", "seats", "tax", "INV-AAAA11"]
    corpus = [" ".join(rng.choices(words, k=rng.randint(3, 25))) for _ in range(120)]
    index = TrainIndex(corpus)
    for _ in range(40):
        query = " ".join(rng.choices(words, k=rng.randint(3, 25)))
        best, score = index.most_similar(query)
        brute = max(jaccard(shingles(query), shingles(text)) for text in corpus)
        assert score == pytest.approx(brute)
        if best >= 0:
            assert jaccard(shingles(query), shingles(corpus[best])) == pytest.approx(score)


def test_main_reports_the_distribution_and_no_exact_duplicates(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["--train-limit", "60"]) == 0
    out = capsys.readouterr().out
    assert "most-similar train complaint (word 3-gram Jaccard, first 60 train):" in out
    assert "eval+heldout  n=150" in out and "heldout       n=50" in out
    assert "masked-body matches (ids, names, numbers, months masked): 0" in out
    assert out.strip().splitlines()[-1] == "exact duplicates: 0"


def test_masking_leaves_only_the_template() -> None:
    a = "We have 12 seats, yet INV-7F3K2Q (March 2025) charges 120.40 EUR for Team. Aaron Abbott"
    b = "We have 3 seats, yet INV-Q9ZZ2A (June 2026) charges 99.00 USD for Business. Agnes Bellamy"
    assert mask_body(a) == mask_body(b)
    assert mask_body(a) != mask_body("We have 12 seats and INV-7F3K2Q is fine.")
    assert mask_body("Coupon SAVE15 and WELCOME20") == mask_body("Coupon LOYAL30 and BOOST5")


def test_a_train_body_reused_in_eval_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """Plant one train complaint's body in every eval complaint: the command must fail."""
    from checks import dedup

    real = dedup.complaint_of
    planted = real("train", 1_000_000)

    def fake(split: str, seed: int) -> str:
        text = real(split, seed)
        if split == "train":
            return text
        parts = text.split("\n\n")
        parts[1] = body_of(planted)
        return "\n\n".join(parts)

    monkeypatch.setattr(dedup, "complaint_of", fake)
    monkeypatch.setattr(dedup, "map_seeds", lambda fn, split, seeds: [fn(split, s) for s in seeds])
    assert main(["--train-limit", "5"]) == 1


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--threshold", "1.5"], "must be between 0 and 1, got 1.5"),
        (["--train-limit", "0"], "must be at least 1, got 0"),
    ],
)
def test_user_mistakes_end_in_one_line_and_status_two(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err


def test_the_module_runs_as_a_command() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "checks.dedup", "--train-limit", "40"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "exact duplicates: 0" in done.stdout
