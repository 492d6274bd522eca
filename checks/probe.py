"""Shortcut probe: can simple models read a scenario's label off its surface (design §1.2)?

Fits on train scenarios and reports on eval and val: (a) per class and per surface feature the
best single-feature rule (chosen on the fitting sample, measured on a separate test pool:
more train seeds plus eval, val and heldout), (b) a shallow tree and a logistic model on all
surface features, (c) a bag-of-words model on the complaint text, (d) their label accuracy,
overall and per difficulty. Exits 1 when a gate breaks:
  - a single-feature rule for a faulted class with support >= 2% and precision > 0.5,
  - a surface model (tree or logistic) above 0.35 accuracy on eval and val together,
  - a text model above 0.45 accuracy on eval and val together, or the class-balanced one above 0.3
    recall of no_error (a plain model "recalls" no_error by answering the commonest label for
    wording it cannot read; its no_error precision is printed beside it).
Run: `python -m checks.probe [--train 5000] [--test-train 1000] [--json PATH]`.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from checks.probe_features import Row, Sample, eval_priors, feature_names, load, train_seeds
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
    precision,
    raw,
    recall,
)
from env.cli import EXIT_FAILED, Parser, positive_int, run_command
from env.labels import DIFFICULTIES, HELDOUT_LABEL, ROOT_CAUSES
from env.splits import split_seeds

RULE_PRECISION = 0.5
SURFACE_ACCURACY = 0.35
TEXT_ACCURACY = 0.45
TEXT_NO_ERROR_RECALL = 0.3
REPORT_SPLITS = ("eval", "val")
POOLED = "eval+val"  # model gates use both splits together: 200 scenarios, not 2 x 100
TOP_RULES = 3


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
    accuracy: dict[str, float]  # "eval", "eval L1", ..., "val", ...
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


def model_result(model: Fitted, kind: str, by_split: dict[str, Sample]) -> ModelResult:
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
    return ModelResult(model.name, kind, accuracies, recalls, precisions)


def majority_result(fit: Sample, by_split: dict[str, Sample]) -> ModelResult:
    labels, counts = np.unique(fit.y, return_counts=True)
    top = str(labels[counts.argmax()])

    class Majority:
        def predict(self, X: np.ndarray) -> np.ndarray:
            return np.array([top] * len(X))

    return model_result(Fitted(f"majority ({top})", Majority(), False), "baseline", by_split)


def gate_failures(rules: Sequence[RuleResult], models: Sequence[ModelResult]) -> list[str]:
    failures = [
        f"rule {r.rule.label}: {r.rule.text()} precision {r.test.precision:.2f} "
        f"support {r.test.support:.1%}"
        for r in rules
        if r.breaks_gate
    ]
    for m in models:
        acc, rec = m.accuracy[POOLED], m.no_error_recall[POOLED]
        if m.kind == "surface" and acc > SURFACE_ACCURACY:
            failures.append(f"{m.name}: {POOLED} accuracy {acc:.2f} > {SURFACE_ACCURACY}")
        if m.kind.startswith("text") and acc > TEXT_ACCURACY:
            failures.append(f"{m.name}: {POOLED} accuracy {acc:.2f} > {TEXT_ACCURACY}")
        if m.kind == "text balanced" and rec > TEXT_NO_ERROR_RECALL:
            failures.append(
                f"{m.name}: {POOLED} no_error recall {rec:.2f} > {TEXT_NO_ERROR_RECALL}"
            )
    return failures


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
    print(f"(b)-(d) label accuracy; no_error recall and precision; gates use {POOLED}")
    columns = [f"{s} {lv}".strip() for s in REPORT_SPLITS for lv in ("", *DIFFICULTIES)]
    columns.append(POOLED)
    print(
        f"| {'model':<22} | "
        + " | ".join(f"{c:>7}" for c in columns)
        + " | ne recall e/v/both | ne precision e/v/both |"
    )
    print(f"|{'-' * 24}|" + "|".join("-" * 9 for _ in columns) + f"|{'-' * 20}|{'-' * 23}|")
    for m in models:
        cells = " | ".join(f"{m.accuracy[c]:>7.2f}" for c in columns)
        rec, prec = m.no_error_recall, m.no_error_precision
        print(
            f"| {m.name:<22} | {cells} | {rec['eval']:.2f}/{rec['val']:.2f}/{rec[POOLED]:.2f} "
            f"| {prec['eval']:.2f}/{prec['val']:.2f}/{prec[POOLED]:.2f} |"
        )


def print_drivers(model: Fitted, names: Sequence[str], pooled: Sample) -> None:
    """Where the logistic model's accuracy comes from: per class, its recall on eval+val and
    the features with the largest standardized weights (what the generator still gives away
    in combination, even when no single rule does)."""
    classifier = model.model.steps[-1][1]
    predicted = model.predict(pooled.X, pooled.texts)
    print(f"logistic drivers: per class, recall on {POOLED} and the 3 heaviest features")
    for k, label in enumerate(classifier.classes_):
        weights = classifier.coef_[k]
        top = np.argsort(-weights)[:3]
        mask = pooled.y == label
        hit = float((predicted[mask] == label).mean()) if mask.any() else 0.0
        drivers = ", ".join(f"{names[j]} {weights[j]:+.1f}" for j in top)
        print(f"  {label:<27} recall {hit:.2f} (n={int(mask.sum()):>2})  {drivers}")


def _main(argv: Sequence[str] | None) -> int:
    parser = Parser(prog="python -m checks.probe", description=__doc__.splitlines()[0])
    parser.add_argument("--train", type=positive_int, default=5000, help="fitting scenarios")
    parser.add_argument(
        "--test-train", type=positive_int, default=1000, help="more train seeds to test rules on"
    )
    parser.add_argument("--workers", type=positive_int, help="generation processes")
    parser.add_argument("--json", type=Path, help="also write every rule and model result here")
    args = parser.parse_args(argv)
    started = time.monotonic()
    fit_rows = load("train", train_seeds(0, args.train), args.workers)
    names = feature_names(fit_rows)

    def sample(name: str, rows: list[Row]) -> Sample:
        return Sample(name, rows, names)

    splits = {s: sample(s, load(s, split_seeds(s), args.workers)) for s in (*REPORT_SPLITS,)}
    heldout = sample("heldout", load("heldout", split_seeds("heldout"), args.workers))
    more = load("train", train_seeds(args.train, args.test_train), args.workers)
    test = sample("test", more + splits["eval"].rows + splits["val"].rows + heldout.rows)
    fit = sample("train", fit_rows)
    pooled = {**splits, POOLED: sample(POOLED, splits["eval"].rows + splits["val"].rows)}
    generated = time.monotonic() - started
    rules = rule_results(fit, test, heldout, splits)
    logistic = fit_logistic(fit.X, fit.y)
    models = [
        majority_result(fit, pooled),
        model_result(fit_tree(fit.X, fit.y), "surface", pooled),
        model_result(logistic, "surface", pooled),
        model_result(fit_text(fit.texts, fit.y), "text", pooled),
        model_result(fit_text(fit.texts, fit.y, balanced=True), "text balanced", pooled),
    ]
    print(
        f"shortcut probe: fitted on {len(fit)} train scenarios, {len(names)} surface features; "
        f"eval {len(splits['eval'])}, val {len(splits['val'])}, rule test pool {len(test)} "
        f"(generation {generated:.0f}s, total {time.monotonic() - started:.0f}s)"
    )
    print_rules(rules, len(test))
    print_models(models)
    print_drivers(logistic, names, pooled[POOLED])
    failures = gate_failures(rules, models)
    for line in failures:
        print(f"GATE FAILED: {line}")
    print(f"probe: {'FAIL' if failures else 'pass'} ({len(failures)} gate failures)")
    if args.json:
        payload = {
            "rules": [asdict(r) | {"breaks_gate": r.breaks_gate} for r in rules],
            "models": [asdict(m) for m in models],
            "failures": failures,
        }
        args.json.write_text(json.dumps(payload, indent=1) + "\n", encoding="utf-8")
    return EXIT_FAILED if failures else 0


def main(argv: Sequence[str] | None = None) -> int:
    return run_command("python -m checks.probe", _main, argv)


if __name__ == "__main__":
    sys.exit(main())
