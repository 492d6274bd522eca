"""Shortcut models the probe fits, and the simplest shortcut of all: single-feature rules.

A shallow tree and a logistic model on surface features, a bag-of-words model on complaint
text (seeded, so a run is repeatable), and rules "feature >= t (or <= t) means label c" chosen
on the fitting sample and measured on a separate test sample. A rule's precision is stated at
the evaluation split's class prior (see `at_prior`). scikit-learn is a dev dependency, imported
only when a model is fitted.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

import numpy as np

TREE_DEPTH = 4
MIN_SUPPORT = 0.02  # a rule that fires on fewer scenarios than this is not a shortcut
MAX_THRESHOLDS = 32  # candidate cut points per feature (quantiles when there are more values)


@dataclass
class Fitted:
    name: str
    model: Any
    on_text: bool

    def predict(self, X: np.ndarray, texts: Sequence[str]) -> np.ndarray:
        return np.asarray(self.model.predict(list(texts) if self.on_text else X))


def one_thread() -> AbstractContextManager[object]:
    """BLAS and OpenMP on one thread while models are fitted. These fits are small; on a busy
    two-core machine the spinning worker threads made a logistic fit ten to twenty times slower
    (2.6 s against 0.2 s wall on a 5,000 x 155 sample, measured)."""
    from threadpoolctl import threadpool_limits

    return threadpool_limits(limits=1)


def fit_tree(X: np.ndarray, y: np.ndarray) -> Fitted:
    from sklearn.tree import DecisionTreeClassifier

    tree = DecisionTreeClassifier(max_depth=TREE_DEPTH, min_samples_leaf=20, random_state=0)
    return Fitted(f"tree (depth {TREE_DEPTH})", tree.fit(X, y), on_text=False)


def fit_logistic(X: np.ndarray, y: np.ndarray) -> Fitted:
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000, C=1.0, tol=1e-3))
    return Fitted("logistic", model.fit(X, y), on_text=False)


def fit_text(texts: Sequence[str], y: np.ndarray, *, balanced: bool = False) -> Fitted:
    """Word uni- and bigrams (tf-idf) into a logistic model: a strong simple text classifier.

    `balanced` weighs classes equally: a plain model answers the most common label (no_error)
    for any complaint it cannot read, so its no_error recall measures unfamiliar wording, not
    recognition; the balanced model names no_error only where the words point to it."""
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline

    model = make_pipeline(
        TfidfVectorizer(ngram_range=(1, 2), min_df=3, sublinear_tf=True),
        LogisticRegression(
            max_iter=1000, C=4.0, tol=1e-3, class_weight="balanced" if balanced else None
        ),
    )
    name = "bag-of-words balanced" if balanced else "bag-of-words"
    return Fitted(name, model.fit(list(texts), y), on_text=True)


def accuracy(predicted: np.ndarray, truth: np.ndarray) -> float:
    return float((predicted == truth).mean()) if len(truth) else 0.0


def precision(predicted: np.ndarray, truth: np.ndarray, label: str) -> float:
    mask = predicted == label
    return float((truth[mask] == label).mean()) if mask.any() else 0.0


def recall(predicted: np.ndarray, truth: np.ndarray, label: str) -> float:
    mask = truth == label
    return float((predicted[mask] == label).mean()) if mask.any() else 0.0


# single-feature rules -------------------------------------------------------------------------


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
    """A rule's score at a class prior p, from its hit rate on the class (TPR) and on everything
    else (FPR): precision = p*TPR / (p*TPR + (1-p)*FPR), support = p*TPR + (1-p)*FPR. So a class
    that is rare in one sample (the held-out class) or over-represented in another (the held-out
    split) is judged at the rate an evaluation sees it."""
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


# binary signals (fingerprint tokens, comparison checks) -------------------------------------


def scores_at_prior(
    counts: np.ndarray, sizes: np.ndarray, priors: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(precision, support) of every signal for every class, at the class priors.

    `counts[c, s]`: rows of class c where signal s fires; `sizes[c]`: rows of class c. As for
    rules (`at_prior`), a class rare or absent in the sample is judged at its evaluation rate;
    a class with no rows (or nothing else) gets precision and support 0."""
    n = sizes.sum()
    rest = n - sizes
    with np.errstate(divide="ignore", invalid="ignore"):
        tpr = np.where(sizes[:, None] > 0, counts / sizes[:, None], 0.0)
        fpr = np.where(rest[:, None] > 0, (counts.sum(axis=0) - counts) / rest[:, None], 0.0)
        p = priors[:, None]
        support = np.where(sizes[:, None] > 0, p * tpr + (1 - p) * fpr, 0.0)
        precision = np.where(support > 0, p * tpr / support, 0.0)
    return precision, support
