"""`python -m checks.probe`: surface features read off the public tables, rules and gates.

A planted tell (a feature that only one faulted class has) must be found by the rule search
and must break the gate; a feature with no relation to the label must not. The command runs
in-process on small sizes.
"""

from __future__ import annotations

import sqlite3

import numpy as np
import pytest

from checks.probe import POOLED, ModelResult, RuleResult, gate_failures, main
from checks.probe_features import features_of_database
from checks.probe_models import MIN_SUPPORT, at_prior, best_rule, measure
from env.generator import generate


def test_features_are_counts_and_flags_read_off_the_public_tables() -> None:
    scenario = generate("eval", 100000)
    f = features_of_database(scenario.database)
    db = sqlite3.connect(":memory:")
    db.deserialize(scenario.database)
    assert f["rows_invoices"] == db.execute("SELECT COUNT(*) FROM invoices").fetchone()[0]
    assert f["rows_payments"] == db.execute("SELECT COUNT(*) FROM payments").fetchone()[0]
    currency = db.execute("SELECT currency FROM customers").fetchone()[0]
    assert f[f"currency_{currency}"] == 1.0 and f["currency_non_usd"] == (currency != "USD")
    assert 0 <= f["issued_min_hour"] <= f["issued_max_hour"] <= 23
    assert all(isinstance(v, float) for v in f.values())


def _planted(n: int = 2000, seed: int = 3) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    labels = np.array(["no_error", "duplicate_payment", "wrong_tax_rate", "coupon_not_applied"])
    y = labels[rng.integers(0, len(labels), n)]
    tell = (y == "duplicate_payment") & (rng.random(n) < 0.8)  # 80% of one class, no other
    noise = rng.integers(0, 5, n).astype(float)
    return np.column_stack([tell.astype(float), noise]), y


def test_a_planted_surface_tell_is_found_and_breaks_the_gate() -> None:
    X, y = _planted()
    found = best_rule(X, y == "duplicate_payment", ["tell", "noise"], "duplicate_payment", 0.07)
    assert found is not None
    rule, score = found
    assert rule.feature == "tell" and rule.op == ">=" and rule.threshold == 1.0
    assert score.precision == 1.0 and score.support >= MIN_SUPPORT
    X_test, y_test = _planted(seed=4)
    test = measure(rule, X_test, y_test == "duplicate_payment", 0, 0.07)
    result = RuleResult(rule, score, test, (1.0, 0.05), (1.0, 0.05))
    assert result.breaks_gate
    failures = gate_failures([result], [])
    assert len(failures) == 1 and "duplicate_payment: tell >= 1" in failures[0]


def test_an_unrelated_feature_gives_no_precise_rule() -> None:
    X, y = _planted()
    found = best_rule(X, y == "coupon_not_applied", ["tell", "noise"], "coupon_not_applied",
                      0.07, feature=1)  # fmt: skip
    assert found is not None
    assert found[1].precision < 0.2
    rule_result = RuleResult(found[0], found[1], found[1], (0.0, 0.0), (0.0, 0.0))
    assert not rule_result.breaks_gate


def test_precision_is_stated_at_the_evaluation_prior() -> None:
    score = at_prior(tpr=0.5, fpr=0.01, prior=0.1)
    assert score.support == pytest.approx(0.05 + 0.009)
    assert score.precision == pytest.approx(0.05 / 0.059)


def _model(kind: str, acc: float, recall: float) -> ModelResult:
    splits = {"eval": 0.0, "val": 0.0, POOLED: acc}
    return ModelResult("m", kind, splits, {"eval": 1.0, "val": 1.0, POOLED: recall}, splits)


@pytest.mark.parametrize(
    ("model", "fails"),
    [
        (_model("surface", 0.36, 0.0), True),
        (_model("surface", 0.35, 0.9), False),  # recall is a text-model gate only
        (_model("text", 0.46, 0.0), True),
        (_model("text", 0.40, 0.9), False),  # a plain model's recall is its prior
        (_model("text balanced", 0.40, 0.31), True),
        (_model("baseline", 0.9, 1.0), False),
    ],
)
def test_model_thresholds(model: ModelResult, fails: bool) -> None:
    assert bool(gate_failures([], [model])) == fails


@pytest.mark.slow  # ~10 s: generates 500 scenarios; CI runs the real command anyway
def test_main_prints_the_table_on_small_sizes(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["--train", "200", "--test-train", "50", "--workers", "1"])
    out = capsys.readouterr().out
    assert code in (0, 1)
    assert "(a) best single-feature rule per class" in out
    assert "| bag-of-words balanced" in out and "| tree (depth 4)" in out
    assert out.strip().splitlines()[-1].startswith("probe: ")


def test_a_user_mistake_is_one_line_and_status_two(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--train", "0"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "must be at least 1" in err
