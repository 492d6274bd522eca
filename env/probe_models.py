"""Shortcut models the probe fits: a shallow tree and a logistic model on surface features,
and a bag-of-words model on complaint text. Seeded, so a run is repeatable.

scikit-learn is a dev dependency; it is imported here only, when a probe runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

TREE_DEPTH = 4


@dataclass
class Fitted:
    name: str
    model: Any
    on_text: bool

    def predict(self, X: np.ndarray, texts: Sequence[str]) -> np.ndarray:
        return np.asarray(self.model.predict(list(texts) if self.on_text else X))


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
