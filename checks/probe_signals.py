"""Signals: fingerprint tokens and comparison checks, scored by how well one names a label.

A signal fires or not on a scenario (a token present, a check flagging a record). Each is
scored per class at the evaluation prior (`scores_at_prior`) on two samples, the train fitting
sample (with the heldout split as the held-out class) and the test pool (more train seeds,
eval, val, heldout), overall and per difficulty; a signal names the faulted class it is most
precise for among those it reaches the support floor in. `checks.probe` gates on these tables.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from checks.probe_comparisons import CATALOGUE
from checks.probe_features import Row
from checks.probe_models import scores_at_prior
from env.labels import DIFFICULTIES, ROOT_CAUSES

TOKEN_SUPPORT, TOKEN_PRECISION = 0.01, 0.5
CHECK_SUPPORT, CHECK_PRECISION = 0.01, 0.85
CHECK_LEVELS = ("L2", "L3")  # L1 may be decided by one comparison (the curriculum's entry)
LEVELS = ("all", *DIFFICULTIES)
MIN_COUNT = 3  # a token seen fewer times in a sample is a name, not a shape
FAULTED = np.array([c != "no_error" for c in ROOT_CAUSES])
TOP_TOKENS = 25


@dataclass(frozen=True)
class Scored:
    """A signal on one sample and level: the faulted class it names best, or "-"."""

    label: str
    precision: float
    support: float  # at that class's prior; the largest over classes when label is "-"


def _counts(
    sets: Sequence[Collection[str]], labels: Sequence[str], vocabulary: Sequence[str]
) -> tuple[np.ndarray, np.ndarray]:
    index = {v: j for j, v in enumerate(vocabulary)}
    classes = {c: i for i, c in enumerate(ROOT_CAUSES)}
    counts = np.zeros((len(ROOT_CAUSES), len(vocabulary)))
    sizes = np.zeros(len(ROOT_CAUSES))
    for present, label in zip(sets, labels, strict=True):
        i = classes[label]
        sizes[i] += 1
        counts[i, [index[s] for s in present if s in index]] += 1
    return counts, sizes


def score(
    sets: Sequence[Collection[str]],
    labels: Sequence[str],
    vocabulary: Sequence[str],
    priors: np.ndarray,
    floor: float,
) -> tuple[list[Scored], np.ndarray]:
    """Per signal its best faulted class (support >= floor), and the full precision matrix."""
    precision, support = scores_at_prior(*_counts(sets, labels, vocabulary), priors)
    eligible = np.where(FAULTED[:, None] & (support >= floor), precision, -1.0)
    best = eligible.argmax(axis=0)
    out = []
    for s, c in enumerate(best):
        if eligible[c, s] < 0:
            out.append(Scored("-", 0.0, float(support[:, s].max())))
        else:
            out.append(Scored(ROOT_CAUSES[c], float(precision[c, s]), float(support[c, s])))
    return out, precision


def prior_vector(priors: dict[str, float]) -> np.ndarray:
    return np.array([priors[c] for c in ROOT_CAUSES])


# fingerprints ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class TokenResult:
    token: str
    train: Scored
    test: Scored

    @property
    def breaks_gate(self) -> bool:
        return any(s.precision > TOKEN_PRECISION for s in (self.train, self.test))


def token_results(
    train: Sequence[Row], test: Sequence[Row], priors: dict[str, float]
) -> list[TokenResult]:
    """Every token seen MIN_COUNT times in a sample, scored on both (support floor 1%)."""
    seen: Counter[str] = Counter()
    for rows in (train, test):
        seen.update(t for r in rows for t in r.tokens)
    vocabulary = sorted(t for t, n in seen.items() if n >= MIN_COUNT)
    p = prior_vector(priors)
    scored = [
        score([r.tokens for r in rows], [r.label for r in rows], vocabulary, p, TOKEN_SUPPORT)[0]
        for rows in (train, test)
    ]
    return [TokenResult(t, a, b) for t, a, b in zip(vocabulary, *scored, strict=True)]


def print_tokens(results: Sequence[TokenResult]) -> None:
    shown = sorted(results, key=lambda r: (-max(r.train.precision, r.test.precision), r.token))
    print(
        f"(e) fingerprint tokens: {len(results)} value shapes; the {TOP_TOKENS} most precise "
        f"for one faulted class (support >= {TOKEN_SUPPORT:.0%} at the eval prior; gate "
        f"precision <= {TOKEN_PRECISION}), on train and on the test pool"
    )
    print(f"| {'token':<72} | {'class':<27} | train p/s  | test p/s   | gate |")
    print(f"|{'-' * 74}|{'-' * 29}|------------|------------|------|")
    for r in shown[:TOP_TOKENS]:
        label = r.train.label if r.train.label != "-" else r.test.label
        print(
            f"| {r.token[:72]:<72} | {label:<27} | {_ps(r.train)} | {_ps(r.test)} "
            f"| {'FAIL' if r.breaks_gate else 'ok':<4} |"
        )
    broken = sum(r.breaks_gate for r in results)
    print(f"tokens breaking the gate: {broken}")


def _ps(s: Scored) -> str:
    return f"{s.precision:>4.2f}/{s.support:>4.1%}"


# comparisons ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class CheckResult:
    name: str
    compares: str
    share: dict[str, float]  # "train all", "test pool L2", ...: share of scenarios it fires on
    best: dict[str, Scored]  # same keys: the faulted class it names best
    precision: dict[str, list[float]]  # same keys: precision for every class (ROOT_CAUSES order)
    on_victim: float  # of its firings in faulted train scenarios, the share on an overcharged one

    def gate_value(self, sample: str, level: str) -> float:
        return self.best[f"{sample} {level}"].precision

    @property
    def breaks_gate(self) -> bool:
        """Too precise at a gated level on any sample."""
        return any(
            scored.precision > CHECK_PRECISION
            for key, scored in self.best.items()
            if key.rsplit(" ", 1)[1] in CHECK_LEVELS
        )


def check_results(
    samples: Mapping[str, Sequence[Row]], priors: dict[str, float]
) -> list[CheckResult]:
    """Every catalogue check on every sample and level (`all`, L1, L2, L3)."""
    names = [c.name for c in CATALOGUE]
    p = prior_vector(priors)
    share: dict[str, dict[str, float]] = {n: {} for n in names}
    best: dict[str, dict[str, Scored]] = {n: {} for n in names}
    matrix: dict[str, dict[str, list[float]]] = {n: {} for n in names}
    for sample, rows in samples.items():
        for level in LEVELS:
            mine = [r for r in rows if level in ("all", r.difficulty)]
            sets = [r.fired.keys() for r in mine]
            scored, precision = score(sets, [r.label for r in mine], names, p, CHECK_SUPPORT)
            fired = Counter(n for s in sets for n in s)
            for j, n in enumerate(names):
                key = f"{sample} {level}"
                share[n][key] = fired[n] / len(mine) if mine else 0.0
                best[n][key] = scored[j]
                matrix[n][key] = [round(float(x), 4) for x in precision[:, j]]
    train = next(iter(samples.values()))
    return [
        CheckResult(c.name, c.compares, share[c.name], best[c.name], matrix[c.name],
                    _on_victim(train, c.name))
        for c in CATALOGUE
    ]  # fmt: skip


def _on_victim(rows: Sequence[Row], name: str) -> float:
    hits = [r for r in rows if r.label != "no_error" and name in r.fired]
    return sum(bool(r.fired[name] & r.victims) for r in hits) / len(hits) if hits else 0.0


def print_checks(results: Sequence[CheckResult], samples: Sequence[str]) -> None:
    first, second = samples
    print(
        f"(f) one-comparison checks ({len(results)}): share of scenarios where it fires (supp), "
        f"and the faulted class it names best with its precision at the eval prior (support >= "
        f"{CHECK_SUPPORT:.0%}); gate at {'/'.join(CHECK_LEVELS)}: precision <= {CHECK_PRECISION} "
        f"on {first} and {second}; victim: firings on an overcharged invoice"
    )
    levels = [(s, lv) for s in samples for lv in CHECK_LEVELS]
    titles = [f"{'' if s == first else s.split()[0] + ' '}{lv} p/s" for s, lv in levels]
    print(
        f"| {'check':<28} | supp  | {'class (L2/L3 worst)':<27} | all p | L1 p | "
        + " | ".join(f"{t:<12}" for t in titles)
        + " | victim | gate | compares"
    )
    print(
        f"|{'-' * 30}|-------|{'-' * 29}|-------|------|"
        + "|".join("-" * 14 for _ in titles)
        + "|--------|------|----------"
    )
    for r in sorted(results, key=lambda r: (-_worst(r, first)[1], -r.share[f"{first} all"])):
        cells = [
            f"{r.best[f'{first} all'].precision:>5.2f}",
            f"{r.best[f'{first} L1'].precision:>4.2f}",
            *(
                f"{r.best[f'{s} {lv}'].precision:>4.2f}/{r.share[f'{s} {lv}']:>6.1%} "
                for s, lv in levels
            ),
        ]
        print(
            f"| {r.name:<28} | {r.share[f'{first} all']:>5.1%} | {_worst(r, first)[0]:<27} | "
            + " | ".join(cells)
            + f" | {r.on_victim:>6.0%} | {'FAIL' if r.breaks_gate else 'ok':<4} | {r.compares}"
        )
    broken = sum(r.breaks_gate for r in results)
    print(f"checks breaking the gate: {broken} of {len(results)}")


def _worst(r: CheckResult, sample: str) -> tuple[str, float]:
    scored = max((r.best[f"{sample} {lv}"] for lv in CHECK_LEVELS), key=lambda s: s.precision)
    return scored.label, scored.precision
