"""Single-feature rules: the simplest shortcut, "feature >= t (or <= t) means label c".

A rule is chosen on the fitting sample and measured on a separate test sample. Precision is
stated at the evaluation split's class prior, from the rule's hit rate on the class (TPR) and
on everything else (FPR), so a class that is rare in one sample (the held-out class) or
over-represented in another (the held-out split) is judged at the rate an evaluation sees it:
precision = p*TPR / (p*TPR + (1-p)*FPR), support = p*TPR + (1-p)*FPR.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

MIN_SUPPORT = 0.02  # a rule that fires on fewer scenarios than this is not a shortcut
MAX_THRESHOLDS = 32  # candidate cut points per feature (quantiles when there are more values)


@dataclass(frozen=True)
class Rule:
    label: str
    feature: str
    op: str  # ">=" or "<="
    threshold: float

    def fires(self, column: np.ndarray) -> np.ndarray:
        return column >= self.threshold if self.op == ">=" else column <= self.threshold

    def text(self) -> str:
        return f"{self.feature} {self.op} {self.threshold:g}"


@dataclass(frozen=True)
class RuleScore:
    precision: float
    support: float
    tpr: float
    fpr: float


def at_prior(tpr: float, fpr: float, prior: float) -> RuleScore:
    support = prior * tpr + (1 - prior) * fpr
    precision = prior * tpr / support if support > 0 else 0.0
    return RuleScore(precision, support, tpr, fpr)


def _cut_points(column: np.ndarray) -> np.ndarray:
    values = np.unique(column)
    if len(values) > MAX_THRESHOLDS:
        values = np.unique(np.quantile(column, np.linspace(0, 1, MAX_THRESHOLDS)))
    return values


def best_rule(
    X: np.ndarray,
    positive: np.ndarray,
    names: Sequence[str],
    label: str,
    prior: float,
    feature: int | None = None,
) -> tuple[Rule, RuleScore] | None:
    """The most precise rule with support >= MIN_SUPPORT (ties: larger support), over every
    feature or only column `feature`; None when no rule reaches the support."""
    n_pos, n_neg = int(positive.sum()), int((~positive).sum())
    if n_pos == 0 or n_neg == 0:
        return None
    best: tuple[Rule, RuleScore] | None = None
    columns = range(X.shape[1]) if feature is None else (feature,)
    for j in columns:
        column = X[:, j]
        cuts = _cut_points(column)
        ge = column[:, None] >= cuts[None, :]
        le = column[:, None] <= cuts[None, :]
        for op, hits in ((">=", ge), ("<=", le)):
            tpr = hits[positive].sum(axis=0) / n_pos
            fpr = hits[~positive].sum(axis=0) / n_neg
            for k, cut in enumerate(cuts):
                score = at_prior(float(tpr[k]), float(fpr[k]), prior)
                if score.support < MIN_SUPPORT or score.support > 0.999:
                    continue
                key = (score.precision, score.support)
                if best is None or key > (best[1].precision, best[1].support):
                    best = (Rule(label, names[j], op, float(cut)), score)
    return best


def measure(rule: Rule, X: np.ndarray, positive: np.ndarray, j: int, prior: float) -> RuleScore:
    """The rule's precision and support on another sample, at `prior`."""
    hits = rule.fires(X[:, j])
    n_pos, n_neg = int(positive.sum()), int((~positive).sum())
    tpr = float(hits[positive].sum() / n_pos) if n_pos else 0.0
    fpr = float(hits[~positive].sum() / n_neg) if n_neg else 0.0
    return at_prior(tpr, fpr, prior)


def raw(rule: Rule, X: np.ndarray, positive: np.ndarray, j: int) -> tuple[float, float]:
    """(precision, support) where the rule fires on a sample as it is (no prior correction)."""
    hits = rule.fires(X[:, j])
    fired = int(hits.sum())
    if not len(hits):
        return 0.0, 0.0
    return (float((hits & positive).sum() / fired) if fired else 0.0), fired / len(hits)
