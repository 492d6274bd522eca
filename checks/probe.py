"""Shortcut probe: can simple models read a scenario's label off its surface (design §1.2)?

Fits on train scenarios; measures on a disjoint train slice ("train-test"), on eval+val, and
(rules, tokens, checks) on a test pool of both plus heldout. Sections: (a) the best
single-feature rule per class and feature, (b) a tree and a logistic model on surface features,
then with the recorded billing inputs' values added, (c) bag-of-words on complaints, (d) label
accuracy overall and per level, (e) fingerprint tokens (value shapes of the public tables),
(f) one-comparison checks (a record against its source of truth), (g) the pair search (a
depth-2 tree per related pair of fields on its discrepancy's size, sign, ratio and day gap).
Exits 1 when a gate breaks;
every gate is printed with its value, bound and margin, on every sample it is checked on:
  - single-feature rule: support >= 2% and precision > 0.5 for a faulted class (test pool),
  - surface model (with or without recorded inputs): accuracy > 0.35,
  - text model: accuracy > 0.45; the class-balanced one: no_error recall > 0.3,
  - fingerprint token: support >= 1% and precision > 0.5 for a faulted class (train; test pool),
  - comparison check at L2 or L3: support >= 1% and precision > 0.85 for a faulted class,
  - pair-rule (a tree leaf) at L2 or L3: support >= 1% and precision > 0.85 for its class.
Run: `python -m checks.probe [--train 5000] [--test-train 1000] [--workers N] [--json PATH]`.
`--known FILE` (written by `--write-known FILE`) is the ratchet of `checks.probe_gates`: a gate
it lists may keep failing, no worse than recorded; every other broken gate fails the probe.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from checks.probe_features import Row, Sample, eval_priors, feature_names, load, train_seeds
from checks.probe_gates import (
    NOTHING_KNOWN,
    Gate,
    judge,
    load_known,
    write_known,
)
from checks.probe_models import (
    MIN_SUPPORT,
    Fitted,
    Rule,
    RuleScore,
    accuracy,
    best_rule,
    fit_logistic,
    fit_text,
    fit_tree,
    measure,
    one_thread,
    precision,
    raw,
    recall,
)
from checks.probe_pairs import PAIRS
from checks.probe_search import (
    PAIR_LEVELS,
    PAIR_PRECISION,
    PairRule,
    gate_value,
    print_pair_rules,
    search,
)
from checks.probe_signals import (
    CHECK_LEVELS,
    CHECK_PRECISION,
    TOKEN_PRECISION,
    CheckResult,
    TokenResult,
    check_results,
    print_checks,
    print_tokens,
    token_results,
)
from checks.probe_topics import topic_gates
from env.cli import EXIT_FAILED, Parser, positive_int, run_command
from env.generation.splits import split_seeds
from env.labels import DIFFICULTIES, HELDOUT_LABEL, ROOT_CAUSES

RULE_PRECISION = 0.5
SURFACE_ACCURACY = 0.35
TEXT_ACCURACY = 0.45
TEXT_NO_ERROR_RECALL = 0.3
REPORT_SPLITS = ("eval", "val")
POOLED = "eval+val"  # model gates use both splits together: 200 scenarios, not 2 x 100
HOLD = "train-test"  # train seeds after the fitting ones: never fitted on
SIGNAL_SAMPLES = ("train", "test pool")
TOP_RULES = 3
PAIR_SAMPLE = "both"  # a pair-rule: support on train, the lower precision of train and test pool
Driver = tuple[Fitted, Sample]  # a logistic model and the eval+val sample its drivers read


@dataclass(frozen=True)
class RuleResult:
    rule: Rule
    fit: RuleScore
    test: RuleScore
    eval_raw: tuple[float, float]
    val_raw: tuple[float, float]

    @property
    def breaks_gate(self) -> bool:
        return (
            self.rule.label != "no_error"
            and self.test.support >= MIN_SUPPORT
            and self.test.precision > RULE_PRECISION
        )


@dataclass(frozen=True)
class ModelResult:
    name: str
    kind: str  # "baseline", "surface", "text" or "text balanced"
    accuracy: dict[str, float]  # "eval", "val", "eval+val", "eval+val L1", ..., "train-test"
    no_error_recall: dict[str, float]
    no_error_precision: dict[str, float]


def rule_results(
    fit: Sample, test: Sample, heldout: Sample, by_split: dict[str, Sample]
) -> list[RuleResult]:
    """For every class and feature, the best rule on the fitting sample, measured elsewhere.
    The held-out class is absent from train: its rules are chosen on the heldout split's
    scenarios (positives) against the train fitting sample (negatives)."""
    priors = eval_priors()
    X_fit, y_fit = fit.X, fit.y
    X_held = heldout.X
    X_test, y_test = test.X, test.y
    results = []
    for label in ROOT_CAUSES:
        if label == HELDOUT_LABEL:
            X_sel = np.vstack([X_fit, X_held])
            pos_sel = np.concatenate([np.zeros(len(y_fit), bool), np.ones(len(X_held), bool)])
        else:
            X_sel, pos_sel = X_fit, y_fit == label
        for j in range(len(fit.names)):
            found = best_rule(X_sel, pos_sel, fit.names, label, priors[label], feature=j)
            if found is None:
                continue
            rule, fit_score = found
            test_score = measure(rule, X_test, y_test == label, j, priors[label])
            shown = {s: raw(rule, sample.X, sample.y == label, j) for s, sample in by_split.items()}
            results.append(RuleResult(rule, fit_score, test_score, shown["eval"], shown["val"]))
    return results


def model_result(
    model: Fitted, kind: str, by_split: dict[str, Sample], name: str | None = None
) -> ModelResult:
    accuracies: dict[str, float] = {}
    recalls: dict[str, float] = {}
    precisions: dict[str, float] = {}
    for split, sample in by_split.items():
        predicted = model.predict(sample.X, sample.texts)
        truth = sample.y
        accuracies[split] = accuracy(predicted, truth)
        for level in DIFFICULTIES:
            mask = sample.difficulty == level
            accuracies[f"{split} {level}"] = accuracy(predicted[mask], truth[mask])
        recalls[split] = recall(predicted, truth, "no_error")
        precisions[split] = precision(predicted, truth, "no_error")
    return ModelResult(name or model.name, kind, accuracies, recalls, precisions)


def majority_result(fit: Sample, by_split: dict[str, Sample]) -> ModelResult:
    labels, counts = np.unique(fit.y, return_counts=True)
    top = str(labels[counts.argmax()])

    class Majority:
        def predict(self, X: np.ndarray) -> np.ndarray:
            return np.array([top] * len(X))

    return model_result(Fitted(f"majority ({top})", Majority(), False), "baseline", by_split)


def all_gates(
    rules: Sequence[RuleResult],
    models: Sequence[ModelResult],
    tokens: Sequence[TokenResult] = (),
    checks: Sequence[CheckResult] = (),
    pair_rules: Sequence[PairRule] = (),
) -> list[Gate]:
    """Every gate on every sample it is checked on; a max-type gate names its worst item."""
    gates: list[Gate] = []
    if rules:
        faulted = [r for r in rules if r.rule.label != "no_error" and r.test.support >= MIN_SUPPORT]
        worst = max(faulted, key=lambda r: r.test.precision, default=None)
        text = f"{worst.rule.label}: {worst.rule.text()}" if worst else "-"
        value = worst.test.precision if worst else 0.0
        gates.append(Gate("rule precision", "test pool", value, RULE_PRECISION, text))
    for m in models:
        for sample in (POOLED, HOLD):
            if sample not in m.accuracy:
                continue
            acc, rec = m.accuracy[sample], m.no_error_recall[sample]
            if m.kind == "surface":
                gates.append(Gate(f"{m.name} accuracy", sample, acc, SURFACE_ACCURACY, "-"))
            if m.kind.startswith("text"):
                gates.append(Gate(f"{m.name} accuracy", sample, acc, TEXT_ACCURACY, "-"))
            if m.kind == "text balanced":
                gates.append(Gate(f"{m.name} ne recall", sample, rec, TEXT_NO_ERROR_RECALL, "-"))
    for i, sample in enumerate(SIGNAL_SAMPLES if tokens else ()):
        worst_token = max(tokens, key=lambda t: (t.train, t.test)[i].precision)
        scored = (worst_token.train, worst_token.test)[i]
        text = f"{scored.label}: {worst_token.token}"
        gates.append(Gate("token precision", sample, scored.precision, TOKEN_PRECISION, text))
    # world v6 (issue 39): the most precise check and pair-rule per level are shown with their
    # margins; what fails the probe is more than MAX_SHARP of them past the bound (`sharp_rules`)
    for sample in SIGNAL_SAMPLES if checks else ():
        for level in CHECK_LEVELS:
            worst_check = max(checks, key=lambda c: c.gate_value(sample, level))
            label = worst_check.best[f"{sample} {level}"].label
            value = worst_check.gate_value(sample, level)
            text = f"{label}: {worst_check.name}"
            gates.append(
                Gate(f"check precision {level}", sample, value, CHECK_PRECISION, text, True)
            )
    for level in PAIR_LEVELS if pair_rules else ():
        value, text = gate_value(pair_rules, level)
        gates.append(
            Gate(f"pair-rule precision {level}", PAIR_SAMPLE, value, PAIR_PRECISION, text, True)
        )
    if checks or pair_rules:
        sharp = sharp_rules(checks, pair_rules)
        text = "; ".join(sharp) or "-"
        gates.append(Gate("sharp one-comparison rules L2/L3", "train", len(sharp), MAX_SHARP, text))
    return gates


MAX_SHARP = 2  # issue 39: at most two one-comparison rules this precise may remain


def sharp_rules(checks: Sequence[CheckResult], pair_rules: Sequence[PairRule]) -> list[str]:
    """The one-comparison rules (catalogue checks and pair-rules) that name a faulted class at
    L2 or L3 with precision above the bound and support >= 1% of train (the held-out class
    scored with the heldout split), each (class, rule) once."""
    found = set()
    for check in checks:
        for sample in SIGNAL_SAMPLES:
            for level in CHECK_LEVELS:
                scored = check.best[f"{sample} {level}"]
                if scored.label != "-" and scored.precision > CHECK_PRECISION:
                    found.add(f"{scored.label}: {check.name}")
    found |= {f"{r.label}: {r.pair}" for r in pair_rules if r.breaks_gate}
    return sorted(found)


def gate_failures(
    rules: Sequence[RuleResult],
    models: Sequence[ModelResult],
    tokens: Sequence[TokenResult] = (),
    checks: Sequence[CheckResult] = (),
) -> list[str]:
    return [
        f"{g.name} on {g.sample}: {g.value:.2f} > {g.bound} ({g.worst})"
        for g in all_gates(rules, models, tokens, checks)
        if not g.holds
    ]


def print_rules(rules: Sequence[RuleResult], test_size: int) -> None:
    print(
        f"(a) best single-feature rule per class (top {TOP_RULES} features of "
        f"{len({r.rule.feature for r in rules})}); precision/support at the eval prior on a "
        f"test pool of {test_size}; raw precision/support on eval and val where it fires"
    )
    print(
        f"| {'class':<27} | {'rule':<34} | {'prec':>5} | {'supp':>5} | {'eval p/s':>10} "
        f"| {'val p/s':>10} | gate |"
    )
    print(f"|{'-' * 29}|{'-' * 36}|{'-' * 7}|{'-' * 7}|{'-' * 12}|{'-' * 12}|------|")
    for label in ROOT_CAUSES:
        mine = sorted(
            (r for r in rules if r.rule.label == label),
            key=lambda r: (-r.test.precision, -r.test.support, r.rule.feature),
        )
        for r in mine[:TOP_RULES]:
            print(
                f"| {label:<27} | {r.rule.text():<34} | {r.test.precision:>5.2f} "
                f"| {r.test.support:>5.1%} | {r.eval_raw[0]:>4.2f}/{r.eval_raw[1]:>4.0%} "
                f"| {r.val_raw[0]:>4.2f}/{r.val_raw[1]:>4.0%} "
                f"| {'FAIL' if r.breaks_gate else 'ok':<4} |"
            )
    broken = sum(r.breaks_gate for r in rules)
    print(f"rules breaking the gate (faulted class, support >= 2%, precision > 0.5): {broken}")


def print_models(models: Sequence[ModelResult]) -> None:
    print(
        f"(b)-(d) label accuracy; no_error recall and precision on {POOLED} and {HOLD}; "
        f"gates use {POOLED} and {HOLD}"
    )
    columns = ["eval", "val", POOLED, *(f"{POOLED} {lv}" for lv in DIFFICULTIES), HOLD]
    print(
        f"| {'model':<28} | "
        + " | ".join(f"{c.removeprefix(POOLED + ' '):>10}" for c in columns)
        + " | ne recall e+v/hold | ne precision e+v/hold |"
    )
    print(f"|{'-' * 30}|" + "|".join("-" * 12 for _ in columns) + f"|{'-' * 20}|{'-' * 23}|")
    for m in models:
        cells = " | ".join(f"{m.accuracy[c]:>10.2f}" for c in columns)
        rec, prec = m.no_error_recall, m.no_error_precision
        print(
            f"| {m.name:<28} | {cells} | {rec[POOLED]:>8.2f}/{rec[HOLD]:.2f}      "
            f"| {prec[POOLED]:>11.2f}/{prec[HOLD]:.2f}      |"
        )


def print_drivers(model: Fitted, names: Sequence[str], pooled: Sample) -> None:
    """Where a logistic model's accuracy comes from: per class, its recall on eval+val and
    the features with the largest standardized weights (what the generator still gives away
    in combination, even when no single rule does)."""
    classifier = model.model.steps[-1][1]
    predicted = model.predict(pooled.X, pooled.texts)
    print(f"{model.name} drivers: per class, recall on {POOLED} and the 3 heaviest features")
    for k, label in enumerate(classifier.classes_):
        weights = classifier.coef_[k]
        top = np.argsort(-weights)[:3]
        mask = pooled.y == label
        hit = float((predicted[mask] == label).mean()) if mask.any() else 0.0
        drivers = ", ".join(f"{names[j]} {weights[j]:+.1f}" for j in top)
        print(f"  {label:<27} recall {hit:.2f} (n={int(mask.sum()):>2})  {drivers}")


def print_gates(gates: Sequence[Gate]) -> None:
    print("gates: margin = bound - value (negative: the gate broke)")
    print(f"| {'gate':<38} | {'sample':<10} | value | bound | margin | {'worst':<60} | result |")
    print(f"|{'-' * 40}|{'-' * 12}|-------|-------|--------|{'-' * 62}|--------|")
    for g in gates:
        print(
            f"| {g.name:<38} | {g.sample:<10} | {g.value:>5.2f} | {g.bound:>5.2f} "
            f"| {g.margin:>+6.2f} | {g.worst[:60]:<60} "
            f"| {'counted' if g.counted else 'pass' if g.holds else 'FAIL':<6} |"
        )


def _samples(
    n: int, more: int, workers: int | None
) -> tuple[dict[str, Sample], Sample, Sample, Sample, list[str]]:
    """(model samples by name, the fitting sample, the heldout split, the test pool, names)."""
    fit_rows = load("train", train_seeds(0, n), workers, deep=True)
    names = feature_names(fit_rows)

    def rows(split: str, seeds: Sequence[int]) -> list[Row]:
        return load(split, seeds, workers, deep=True)

    split_rows = {s: rows(s, split_seeds(s)) for s in (*REPORT_SPLITS, "heldout")}
    hold_rows = rows("train", train_seeds(n, more))
    both = split_rows["eval"] + split_rows["val"]
    by_name = {"eval": split_rows["eval"], "val": split_rows["val"], POOLED: both, HOLD: hold_rows}
    samples = {s: Sample(s, r, names) for s, r in by_name.items()}
    heldout = Sample("heldout", split_rows["heldout"], names)
    test = Sample("test pool", hold_rows + both + split_rows["heldout"], names)
    return samples, Sample("train", fit_rows, names), heldout, test, names


def _models(fit: Sample, samples: dict[str, Sample]) -> tuple[list[ModelResult], list[Driver]]:
    """Every model's results, and the logistic models with the samples their drivers read."""
    wide = feature_names(fit.rows, recorded=True)
    wide_fit = Sample("train", fit.rows, wide)
    wide_samples = {s: Sample(s, sample.rows, wide) for s, sample in samples.items()}
    logistic = fit_logistic(fit.X, fit.y)
    wide_logistic = fit_logistic(wide_fit.X, wide_fit.y)
    wide_logistic.name = "logistic + inputs"
    models = [
        majority_result(fit, samples),
        model_result(fit_tree(fit.X, fit.y), "surface", samples),
        model_result(logistic, "surface", samples),
        model_result(fit_tree(wide_fit.X, wide_fit.y), "surface", wide_samples, "tree + inputs"),
        model_result(wide_logistic, "surface", wide_samples),
        model_result(fit_text(fit.texts, fit.y), "text", samples),
        model_result(fit_text(fit.texts, fit.y, balanced=True), "text balanced", samples),
    ]
    return models, [(logistic, samples[POOLED]), (wide_logistic, wide_samples[POOLED])]


def _write_json(path: Path, gates: Sequence[Gate], **sections: Sequence[Any]) -> None:
    payload: dict[str, object] = {
        "gates": [asdict(g) | {"margin": g.margin, "holds": g.holds} for g in gates]
    }
    for name, results in sections.items():
        payload[name] = [
            asdict(r) | ({"breaks_gate": r.breaks_gate} if hasattr(r, "breaks_gate") else {})
            for r in results
            if name not in ("tokens", "pair_rules") or getattr(r, "breaks_gate", False)  # the tells
        ]
    path.write_text(json.dumps(payload, indent=1) + "\n", encoding="utf-8")


def _main(argv: Sequence[str] | None) -> int:
    parser = Parser(prog="python -m checks.probe", description=__doc__.splitlines()[0])
    parser.add_argument("--train", type=positive_int, default=5000, help="fitting scenarios")
    parser.add_argument(
        "--test-train", type=positive_int, default=1000, help="more train seeds to test on"
    )
    parser.add_argument("--workers", type=positive_int, help="generation processes")
    parser.add_argument("--json", type=Path, help="also write every result here")
    parser.add_argument("--known", type=Path, help="ratchet: gates allowed to fail, not worsen")
    parser.add_argument("--write-known", type=Path, help="write today's broken gates as a ratchet")
    args = parser.parse_args(argv)
    known = load_known(args.known) if args.known else NOTHING_KNOWN
    started = time.monotonic()
    samples, fit, heldout, test, names = _samples(args.train, args.test_train, args.workers)
    generated = time.monotonic() - started
    rules = rule_results(fit, test, heldout, {s: samples[s] for s in REPORT_SPLITS})
    with one_thread():
        models, drivers = _models(fit, samples)
    signal_samples = dict(zip(SIGNAL_SAMPLES, (fit.rows + heldout.rows, test.rows), strict=True))
    tokens = token_results(fit.rows + heldout.rows, test.rows, eval_priors())
    checks = check_results(signal_samples, eval_priors())
    searched = time.monotonic()
    with one_thread():
        pair_rules = search(signal_samples["train"], signal_samples, eval_priors())
    searched = time.monotonic() - searched
    print(
        f"shortcut probe: fitted on {len(fit)} train scenarios, {len(names)} surface features "
        f"(+{drivers[1][1].X.shape[1] - len(names)} recorded-input values); eval "
        f"{len(samples['eval'])}, val {len(samples['val'])}, {HOLD} {len(samples[HOLD])}, "
        f"test pool {len(test)} (generation {generated:.0f}s, total "
        f"{time.monotonic() - started:.0f}s)"
    )
    print_rules(rules, len(test))
    print_models(models)
    for model, pooled in drivers:
        print_drivers(model, pooled.names, pooled)
    print_tokens(tokens)
    print_checks(checks, SIGNAL_SAMPLES)
    print_pair_rules(pair_rules, SIGNAL_SAMPLES, len(PAIRS))
    print(f"pair search: {searched:.1f}s")
    gates = all_gates(rules, models, tokens, checks, pair_rules) + [
        Gate(*g) for g in topic_gates({"train": fit.rows, "eval": samples["eval"].rows})
    ]
    print_gates(gates)
    failures = judge(gates, known, tokens, checks, pair_rules)
    if args.write_known:
        write_known(args.write_known, gates, tokens, checks, pair_rules)
    for line in failures:
        print(f"GATE FAILED: {line}")
    broken = sum(not g.holds for g in gates)
    print(
        f"probe: {'FAIL' if failures else 'pass'} ({len(failures)} gate failures; {broken} gates "
        f"broken, {broken - len(failures)} of them known)"
    )
    if args.json:
        _write_json(args.json, gates, rules=rules, models=models, tokens=tokens, checks=checks,
                    pair_rules=pair_rules)  # fmt: skip
    return EXIT_FAILED if failures else 0


def main(argv: Sequence[str] | None = None) -> int:
    return run_command("python -m checks.probe", _main, argv)


if __name__ == "__main__":
    sys.exit(main())
