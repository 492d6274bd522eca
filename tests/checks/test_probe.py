"""`python -m checks.probe`: surface features read off the public tables, rules and gates.

A planted tell (a feature that only one faulted class has) must be found by the rule search
and must break the gate; a feature with no relation to the label must not. Likewise a value
shape injected into one class's databases is caught as a fingerprint, a comparison check that
names one class at L2 breaks its gate, and every gate is printed with its margin. The command
runs in-process on small sizes.
"""

from __future__ import annotations

import sqlite3
from dataclasses import replace

import numpy as np
import pytest

from checks import probe_gates, probe_signals
from checks.probe import (
    POOLED,
    Gate,
    ModelResult,
    RuleResult,
    all_gates,
    gate_failures,
    main,
    print_gates,
)
from checks.probe_comparisons import CATALOGUE, fired_checks
from checks.probe_features import (
    RECORDED,
    Row,
    deep_row_of,
    eval_priors,
    feature_names,
    features_of_database,
)
from checks.probe_fingerprints import mask, tokens_of, tokens_of_database
from checks.probe_models import MIN_SUPPORT, at_prior, best_rule, measure
from checks.probe_signals import check_results, token_results
from env.generation.generator import generate
from env.generation.splits import split_assignment, split_seeds
from env.labels import DIFFICULTIES, TRAIN_FAULT_LABELS


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
    assert "| logistic + inputs" in out and "(e) fingerprint tokens" in out
    assert "(f) one-comparison checks" in out and "gates: margin = bound - value" in out
    assert out.strip().splitlines()[-1].startswith("probe: ")


def test_recorded_input_values_join_only_the_models_that_ask_for_them() -> None:
    row = deep_row_of("eval", 100000)
    assert any(name.startswith(RECORDED) for name in row.features)
    assert not any(name.startswith(RECORDED) for name in feature_names([row]))
    assert any(name.startswith(RECORDED) for name in feature_names([row], recorded=True))
    assert row.tokens and isinstance(row.fired, dict)


# fingerprints ------------------------------------------------------------------------------


def test_a_mask_hides_digits_dates_ids_and_keeps_zero_apart() -> None:
    line = "Usage overage, 2025-01-28 to 2025-02-28: 57235 units, 0 included, 12.50 USD"
    assert mask(line) == "Usage overage, <date> to <date>: <n> units, <0> included, <n> USD"
    assert mask("Team (PLN-TEAM) x 4 seats") == "Team (<id>) x <n> seats"
    assert mask("2025-03-17T03:25:00Z") == "<time>"
    assert (mask(None), mask(True), mask("at_period_end")) == ("null", "true", "at_period_end")


def test_tokens_are_columns_json_key_paths_and_line_shapes() -> None:
    tokens = tokens_of_database(generate("eval", 100000).database)
    assert "subscription_events.type=created" in tokens
    assert "invoices.inputs.plan.plan_id=<id>" in tokens
    assert "subscription_events.details[created].plan_id=<id>" in tokens
    assert any(t.startswith("invoice_lines.description~") for t in tokens)
    assert not any(t.startswith("disputes.message") for t in tokens)  # the complaint


def _with_tell(row: Row, seed: int) -> Row:
    """The row's tokens once its database carries a key no correct world writes."""
    db = sqlite3.connect(":memory:")
    db.deserialize(generate("train", seed).database)
    db.execute(
        "UPDATE subscription_events SET details = json_set(details, '$.source', 'billing-v2') "
        "WHERE seq = 1"
    )
    return replace(row, tokens=tokens_of(db))


def test_a_fingerprint_injected_into_one_class_is_caught() -> None:
    seeds = split_seeds("train", 80)
    rows = [deep_row_of("train", seed) for seed in seeds]
    target = max(TRAIN_FAULT_LABELS, key=[r.label for r in rows].count)
    rows = [_with_tell(r, s) if r.label == target else r for r, s in zip(rows, seeds, strict=True)]
    results = {t.token: t for t in token_results(rows, rows, eval_priors())}
    tell = results["subscription_events.details.source=billing-v<n>"]
    assert tell.breaks_gate and tell.train.label == target and tell.train.precision == 1.0
    assert not results["subscription_events.type=created"].breaks_gate
    gates = all_gates([], [], list(results.values()))
    assert any(not g.holds and g.name == "token precision" for g in gates)


# comparisons -------------------------------------------------------------------------------


def test_the_catalogue_lists_at_least_twenty_named_comparisons() -> None:
    assert len(CATALOGUE) >= 20
    assert len({c.name for c in CATALOGUE}) == len(CATALOGUE)
    assert all(c.compares and callable(c.check) for c in CATALOGUE)


def test_a_check_flags_the_invoice_whose_input_changed_and_nothing_else() -> None:
    # a check may fire on a correct invoice: that is a look-alike (a weekend issue converts at
    # the Friday's rate), which is the point of world v4; a changed input must add exactly its
    # own invoice
    seed = next(s for s in split_seeds("eval") if split_assignment("eval", s).label == "no_error")
    db = sqlite3.connect(":memory:")
    db.deserialize(generate("eval", seed).database)
    pointed = {"seats_vs_timeline", "tax_rate_vs_table", "fx_rate_vs_issue_day_rate"}
    before = fired_checks(db)
    flagged = set().union(*(before.get(name, frozenset()) for name in pointed))
    rows = db.execute("SELECT id FROM invoices ORDER BY period_start DESC").fetchall()
    invoice = next(i for (i,) in rows if i not in flagged)
    db.execute(
        "UPDATE invoices SET inputs = json_set(inputs, '$.seats', 999, '$.tax_rate', '0.5', "
        "'$.fx_rate', '7.5') WHERE id = ?",
        (invoice,),
    )
    fired = fired_checks(db)
    assert all(fired[name] == before.get(name, frozenset()) | {invoice} for name in pointed)


def _rows_with_check() -> list[Row]:
    """Hand-made rows: `plan_vs_timeline` fires on every L2 downgrade and nowhere else;
    `succeeded_twice` fires everywhere."""
    labels = [*TRAIN_FAULT_LABELS, "no_error", "no_error"]
    rows = []
    for i in range(720):
        label, level = labels[i % len(labels)], DIFFICULTIES[(i // len(labels)) % 3]
        fired = {"succeeded_twice": frozenset({"INV-A"})}
        if label == "downgrade_not_applied" and level == "L2":
            fired["plan_vs_timeline"] = frozenset({"INV-A"})
        rows.append(Row(f"s{i}", label, level, "", {}, fired=fired, victims=frozenset({"INV-A"})))
    return rows


def test_a_check_with_precision_one_at_l2_breaks_its_gate() -> None:
    rows = _rows_with_check()
    results = {c.name: c for c in check_results({"train": rows, "test pool": rows}, eval_priors())}
    precise = results["plan_vs_timeline"]
    assert precise.gate_value("train", "L2") == 1.0 and precise.breaks_gate
    assert precise.best["train L2"].label == "downgrade_not_applied" and precise.on_victim == 1.0
    assert precise.gate_value("train", "L3") == 0.0  # it never fires there
    assert not results["succeeded_twice"].breaks_gate
    gates = all_gates([], [], (), list(results.values()))
    past = [g for g in gates if g.value > g.bound]
    assert {(g.name, g.sample) for g in past if g.counted} == {
        ("check precision L2", "train"),
        ("check precision L2", "test pool"),
    }
    assert "downgrade_not_applied: plan_vs_timeline" in past[0].worst
    sharp = next(g for g in gates if g.name == "sharp one-comparison rules L2/L3")
    assert (sharp.value, sharp.holds) == (1, True)  # issue 39: at most two may remain
    more = [replace(precise, name=f"{precise.name} {n}") for n in range(3)]
    failed = [g for g in all_gates([], [], (), more) if not g.holds]
    assert [g.name for g in failed] == ["sharp one-comparison rules L2/L3"]
    assert failed[0].value == 3


def test_every_gate_is_printed_with_value_bound_and_margin(
    capsys: pytest.CaptureFixture[str],
) -> None:
    gates = [
        Gate("check precision L2", "train", 1.0, 0.85, "downgrade_not_applied: plan_vs_timeline"),
        Gate("logistic accuracy", "eval+val", 0.33, 0.35, "-"),
    ]
    print_gates(gates)
    out = capsys.readouterr().out
    assert "|  1.00 |  0.85 |  -0.15 | downgrade_not_applied: plan_vs_timeline" in out
    assert "|  0.33 |  0.35 |  +0.02 |" in out
    assert out.count("FAIL") == 1 and out.count("pass") == 1


def test_a_user_mistake_is_one_line_and_status_two(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--train", "0"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "must be at least 1" in err


# the ratchet (--known): gates the world does not meet yet may not get worse, nothing new may break


def _gate(value: float, name: str = "token precision", sample: str = "train") -> probe_gates.Gate:
    return probe_gates.Gate(name, sample, value, 0.5, "worst")


def _token(name: str, precision: float) -> probe_signals.TokenResult:
    scored = probe_signals.Scored("wrong_tax_rate", precision, 0.05)
    return probe_signals.TokenResult(name, scored, scored)


def test_a_known_broken_gate_passes_the_ratchet_while_it_does_not_get_worse() -> None:
    known = probe_gates.Known({("token precision", "train"): 0.9}, frozenset(), frozenset())
    assert probe_gates.judge([_gate(0.91)], known) == []
    assert probe_gates.judge([_gate(0.99)], known) != []


def test_a_broken_gate_the_ratchet_does_not_list_fails() -> None:
    known = probe_gates.Known({("token precision", "train"): 0.9}, frozenset(), frozenset())
    assert probe_gates.judge([_gate(0.6, "logistic accuracy", "eval+val")], known) != []
    assert probe_gates.judge([_gate(0.6)], probe_gates.NOTHING_KNOWN) != []


def test_a_new_fingerprint_token_fails_the_ratchet_even_under_a_known_gate() -> None:
    known = probe_gates.Known({("token precision", "train"): 1.0}, frozenset({"old"}), frozenset())
    tokens = [_token("old", 1.0), _token("new", 0.8)]
    failures = probe_gates.judge([_gate(1.0)], known, tokens)
    assert failures == ["new fingerprint token: new"]


def test_the_known_file_round_trips_what_breaks_today(tmp_path) -> None:
    path = tmp_path / "known.json"
    probe_gates.write_known(
        path, [_gate(0.8), _gate(0.2, sample="test pool")], [_token("t", 0.9)], []
    )
    known = probe_gates.load_known(path)
    assert known.gates == {("token precision", "train"): 0.8}
    assert known.tokens == {"t"} and known.checks == frozenset()
