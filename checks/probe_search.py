"""The pair search: a depth-2 tree per related pair of fields, each leaf a candidate rule.

Where the catalogue (`checks.probe_comparisons`) asks "do these two records disagree?", the
search asks whether the *shape* of a disagreement (its size, sign, ratio, day gap: the numbers
`checks.probe_pairs` derives per pair) names a label. For every pair and every faulted class it
fits a one-against-the-rest tree of depth 2 on the L2/L3 scenarios of the fitting sample,
weighted to the eval prior; a leaf the tree assigns to the class is a pair-rule, scored (at the
eval prior, like every signal) on each sample and level. Gate (design §1.2, "Same shape"): at
L2 and L3 no pair-rule with support >= 1% has precision > 0.85 for its class.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from checks.probe_features import Row
from checks.probe_models import scores_at_prior
from checks.probe_pairs import PAIRS, STATS
from env.labels import ROOT_CAUSES

PAIR_SUPPORT, PAIR_PRECISION = 0.01, 0.85
PAIR_LEVELS = ("L2", "L3")
DEPTH = 2
MIN_LEAF = 0.005  # a leaf of fewer fitting rows than this share is not fitted
TOP_PAIR_RULES = 25


@dataclass(frozen=True)
class PairRule:
    pair: str
    label: str
    text: str  # the leaf's path: "gap_min <= -2.5 and any > 0.5"
    scored: dict[str, tuple[float, float]]  # "train L2" -> (precision, support) at the prior;
    # the fitting sample first

    def value(self, level: str) -> float:
        """Its gate value at `level`: where its support on the fitting sample reaches the
        floor, its precision on the sample it is least precise on (a leaf fitted on a sample
        is judged where it was not fitted too), else 0."""
        at = [v for k, v in self.scored.items() if k.rsplit(" ", 1)[1] == level]
        if not at or at[0][1] < PAIR_SUPPORT:
            return 0.0
        return min(precision for precision, _ in at)

    def worst(self) -> float:
        return max(self.value(level) for level in PAIR_LEVELS)

    @property
    def breaks_gate(self) -> bool:
        return self.worst() > PAIR_PRECISION


def columns(pair: str, kind: str) -> list[str]:
    return [f"{pair}|{s}" for s in STATS[kind]]


def _matrix(rows: Sequence[Row], names: Sequence[str]) -> np.ndarray:
    return np.array([[r.pairs.get(n, 0.0) for n in names] for r in rows], dtype=float)


def _weights(positive: np.ndarray, prior: float) -> np.ndarray:
    """Each row weighted so the class has its eval prior in the fit."""
    share = positive.mean()
    return np.where(positive, prior / share, (1 - prior) / (1 - share))


def _paths(tree: object, names: Sequence[str]) -> dict[int, str]:
    """Leaf id -> its path as text (stat names without the pair)."""
    t = tree.tree_  # type: ignore[attr-defined]
    out: dict[int, str] = {}

    def walk(node: int, path: list[str]) -> None:
        if t.children_left[node] < 0:
            out[node] = " and ".join(path) or "(all)"
            return
        name, cut = names[t.feature[node]].rsplit("|", 1)[1], t.threshold[node]
        walk(t.children_left[node], [*path, f"{name} <= {cut:g}"])
        walk(t.children_right[node], [*path, f"{name} > {cut:g}"])

    walk(0, [])
    return out


def _fit_one(X: np.ndarray, positive: np.ndarray, prior: float, names: Sequence[str]) -> Any:
    from sklearn.tree import DecisionTreeClassifier

    leaf = max(2, int(MIN_LEAF * len(X)))
    tree = DecisionTreeClassifier(max_depth=DEPTH, min_samples_leaf=leaf, random_state=0)
    return tree.fit(X, positive, sample_weight=_weights(positive, prior))


def _score_leaves(
    tree: Any, samples: Mapping[str, tuple[np.ndarray, np.ndarray, np.ndarray]], c: int,
    leaves: Sequence[int], priors: np.ndarray,
) -> dict[int, dict[str, tuple[float, float]]]:  # fmt: skip
    """Per leaf, (precision, support) of class `c` on every sample and level key."""
    out: dict[int, dict[str, tuple[float, float]]] = {leaf: {} for leaf in leaves}
    for key, (X, labels, _) in samples.items():
        where = tree.apply(X) if len(X) else np.zeros(0, int)
        sizes = np.array([(labels == k).sum() for k in ROOT_CAUSES], dtype=float)
        for leaf in leaves:
            hit = labels[where == leaf]
            counts = np.array([[(hit == k).sum()] for k in ROOT_CAUSES], dtype=float)
            precision, support = scores_at_prior(counts, sizes, priors)
            out[leaf][key] = (float(precision[c, 0]), float(support[c, 0]))
    return out


def search(
    fit_rows: Sequence[Row], samples: Mapping[str, Sequence[Row]], priors: dict[str, float]
) -> list[PairRule]:
    """Every pair-rule: trees fitted on `fit_rows` at L2/L3, scored on each sample per level."""
    p = np.array([priors[c] for c in ROOT_CAUSES])
    fit = [r for r in fit_rows if r.difficulty in PAIR_LEVELS]
    labels = np.array([r.label for r in fit])
    rules: list[PairRule] = []
    for pair in PAIRS:
        names = columns(pair.name, pair.kind)
        X = _matrix(fit, names)
        if not X[:, 1].any():  # the pair never disagrees: no discrepancy has a shape
            continue
        scored_samples = {}
        for sample, rows in samples.items():
            for level in PAIR_LEVELS:
                mine = [r for r in rows if r.difficulty == level]
                scored_samples[f"{sample} {level}"] = (
                    _matrix(mine, names), np.array([r.label for r in mine]), None,
                )  # fmt: skip
        for c, label in enumerate(ROOT_CAUSES):
            positive = labels == label
            if label == "no_error" or not positive.any() or positive.all():
                continue
            tree = _fit_one(X, positive, priors[label], names)
            paths = _paths(tree, names)
            mine = [leaf for leaf in paths if tree.tree_.value[leaf][0].argmax() == 1]
            for leaf, scored in _score_leaves(tree, scored_samples, c, mine, p).items():
                rules.append(PairRule(pair.name, label, paths[leaf], scored))
    return rules


def gate_value(rules: Sequence[PairRule], level: str) -> tuple[float, str]:
    """The gate's value at one level, and the pair-rule that gives it."""
    worst = max(rules, key=lambda r: r.value(level), default=None)
    if worst is None:
        return 0.0, "-"
    return worst.value(level), f"{worst.label}: {worst.pair}: {worst.text}"


def print_pair_rules(rules: Sequence[PairRule], samples: Sequence[str], pairs: int) -> None:
    """The most precise pair-rule of each (class, pair), most precise first."""
    keys = [f"{s} {lv}" for s in samples for lv in PAIR_LEVELS]
    print(
        f"(g) pair search: {pairs} related pairs of fields (checks/probe_pairs.py), a "
        f"depth-{DEPTH} "
        f"tree per pair and faulted class on the fitting sample's L2/L3 scenarios: {len(rules)} "
        f"pair-rules (leaves); per (class, pair) the most precise, the {TOP_PAIR_RULES} first; "
        f"precision/support at the eval prior; gate at {'/'.join(PAIR_LEVELS)}: where support on "
        f"{samples[0]} >= {PAIR_SUPPORT:.0%}, the lower precision of {' and '.join(samples)} "
        f"(value) <= {PAIR_PRECISION}"
    )
    best: dict[tuple[str, str], PairRule] = {}
    for r in sorted(rules, key=lambda r: (-r.worst(), r.pair, r.text)):
        best.setdefault((r.label, r.pair), r)
    titles = " | ".join(f"{k:<14}" for k in keys)
    print(f"| {'class':<27} | {'pair ~ truth: rule':<110} | {titles} | value | gate |")
    print(f"|{'-' * 29}|{'-' * 112}|" + "|".join("-" * 16 for _ in keys) + "|-------|------|")
    for r in list(best.values())[:TOP_PAIR_RULES]:
        cells = " | ".join(f"{r.scored[k][0]:>4.2f}/{r.scored[k][1]:>6.1%}  " for k in keys)
        rule = f"{r.pair}: {r.text}"
        print(
            f"| {r.label:<27} | {rule[:110]:<110} | {cells} | {r.worst():>5.2f} "
            f"| {'FAIL' if r.breaks_gate else 'ok':<4} |"
        )
    broken = {(r.label, r.pair) for r in rules if r.breaks_gate}
    count = sum(r.breaks_gate for r in rules)
    print(f"pair-rules breaking the gate: {count}, on {len(broken)} (class, pair)s")
