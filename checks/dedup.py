"""Near-duplicate complaint texts between the frozen sets (eval, heldout) and train.

Complaints are filled templates, so some overlap is by construction; what must not happen is
an eval complaint that also appears verbatim in train. Similarity is the Jaccard index of word
3-grams after lower-casing and replacing ids (CUS-XXXXXX) and numbers with placeholders, found
through an inverted index of train 3-grams.

Complaint *bodies* (the paragraph after the greeting) come from disjoint train and eval phrasing
pools, so no eval body may equal a train body once everything a template fills in is masked:
ids, names, numbers, months, currencies, plan names and codes (`mask_body`).
Exit 1 on any exact (raw text) duplicate or any masked-body match.
Run: `python -m checks.dedup [--train-limit 5000] [--threshold 0.8]`.
"""

from __future__ import annotations

import re
import statistics
import sys
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache

from env.cli import EXIT_FAILED, Parser, map_seeds, positive_int, run_command, unit_fraction
from env.generation.builder import data
from env.generation.generator import generate
from env.generation.splits import split_seeds

_ID = re.compile(r"\b[A-Z]{2,4}-[A-Z0-9]{4,12}\b")
_NUMBER = re.compile(r"\d+(?:[.,:/-]\d+)*")
_WORD = re.compile(r"<id>|<num>|<name>|\w+")
_MONTH = re.compile(
    r"\b(?:January|February|March|April|May|June|July|August|September|October|November|"
    r"December)\b"
)
_CURRENCY = re.compile(r"\b(?:USD|EUR|GBP|CAD|AUD)\b")
_CODE = re.compile(r"\b[A-Z][A-Z0-9]*[0-9][A-Z0-9]*\b")  # coupon codes, certificate numbers
_SPACE = re.compile(r"\s+")
FROZEN_SPLITS = ("eval", "heldout")


@cache
def _pool_names() -> re.Pattern[str]:
    words: set[str] = set()
    for pool in data("name_pools.json").values():
        words.update(pool["first"], pool["last"], *pool["company"].values())
    alternatives = "|".join(map(re.escape, sorted(words, key=len, reverse=True)))
    return re.compile(rf"\b(?:{alternatives})\b")


def normalise(text: str, *, mask_names: bool = False) -> list[str]:
    """Words of a complaint with its ids and numbers replaced: templates compare as templates.

    Names come from per-split pools, so they alone keep an eval complaint apart from its train
    twin; `mask_names` replaces them too, to see how close the templates themselves are.
    """
    if mask_names:
        text = _pool_names().sub(" <name> ", text)
    text = _NUMBER.sub(" <num> ", _ID.sub(" <id> ", text))
    return _WORD.findall(text.lower())


@cache
def _plan_names() -> re.Pattern[str]:
    names = sorted((p["name"] for p in data("catalog.json")["plans"]), key=len, reverse=True)
    return re.compile(rf"\b(?:{'|'.join(map(re.escape, names))})\b")


def body_of(complaint: str) -> str:
    """The complaint's body: the paragraph after the greeting (claims, injected text and the
    signature follow it as paragraphs of their own)."""
    parts = complaint.split("\n\n")
    return parts[1] if len(parts) > 2 else complaint


def mask_body(text: str) -> str:
    """A body with every filled-in value masked: two bodies are equal here when they come
    from the same template."""
    text = _ID.sub("<id>", text)
    text = _CODE.sub("<code>", text)
    text = _NUMBER.sub("<num>", text)
    text = _MONTH.sub("<month>", text)
    text = _CURRENCY.sub("<cur>", text)
    text = _plan_names().sub("<plan>", text)
    text = _pool_names().sub("<name>", text)
    return _SPACE.sub(" ", text).strip().lower()


def shingles(text: str, *, mask_names: bool = False) -> frozenset[tuple[str, ...]]:
    words = normalise(text, mask_names=mask_names)
    return frozenset(tuple(words[i : i + 3]) for i in range(len(words) - 2))


def jaccard(a: frozenset[tuple[str, ...]], b: frozenset[tuple[str, ...]]) -> float:
    union = len(a | b)
    return len(a & b) / union if union else 1.0


class TrainIndex:
    """Train complaints' 3-grams in an inverted index: one pass over shared grams per query."""

    def __init__(self, texts: Sequence[str], *, mask_names: bool = False) -> None:
        self.texts = list(texts)
        self.mask_names = mask_names
        self.sizes: list[int] = []
        self.postings: dict[tuple[str, ...], list[int]] = defaultdict(list)
        for n, text in enumerate(self.texts):
            grams = shingles(text, mask_names=mask_names)
            self.sizes.append(len(grams))
            for gram in grams:
                self.postings[gram].append(n)
        self.exact = {text: n for n, text in reversed(list(enumerate(self.texts)))}

    def most_similar(self, text: str) -> tuple[int, float]:
        """(index, Jaccard) of the closest train complaint; (-1, 0.0) when none shares a gram."""
        grams = shingles(text, mask_names=self.mask_names)
        shared: Counter[int] = Counter()
        for gram in grams:
            shared.update(self.postings.get(gram, ()))
        best, score = -1, 0.0
        for n, common in shared.items():
            value = common / (len(grams) + self.sizes[n] - common)
            if value > score or (value == score and n < best):
                best, score = n, value
        return best, score


@dataclass(frozen=True)
class Pair:
    split: str
    scenario_id: str
    train_seed: int
    similarity: float
    exact: bool
    body_twin: int = -1  # train seed whose masked body equals this one's; -1: none


def complaint_of(split: str, seed: int) -> str:
    return generate.__wrapped__(split, seed).complaint


def compare_splits(train_limit: int, *, mask_names: bool = False) -> list[Pair]:
    """For every frozen complaint, its most similar train complaint (first `train_limit` seeds)."""
    train_seeds = split_seeds("train", train_limit)
    train_texts = map_seeds(complaint_of, "train", train_seeds)
    index = TrainIndex(train_texts, mask_names=mask_names)
    bodies: dict[str, int] = {}
    for seed, text in zip(train_seeds, train_texts, strict=True):
        bodies.setdefault(mask_body(body_of(text)), seed)
    pairs = []
    for split in FROZEN_SPLITS:
        seeds = split_seeds(split)
        for seed, text in zip(seeds, map_seeds(complaint_of, split, seeds), strict=True):
            best, score = index.most_similar(text)
            exact = text in index.exact
            if exact:
                best, score = index.exact[text], 1.0
            train_seed = train_seeds[best] if best >= 0 else -1
            twin = bodies.get(mask_body(body_of(text)), -1)
            pairs.append(Pair(split, f"{split}-{seed}", train_seed, score, exact, twin))
    return pairs


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile: an observed value, as a report should show."""
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * q // 100))
    return ordered[int(rank) - 1]


def _main(argv: Sequence[str] | None) -> int:
    parser = Parser(prog="python -m checks.dedup", description=__doc__.splitlines()[0])
    parser.add_argument("--train-limit", type=positive_int, default=5000)
    parser.add_argument("--threshold", type=unit_fraction, default=0.8)
    parser.add_argument(
        "--mask-names", action="store_true", help="also mask pool names (template closeness)"
    )
    parser.add_argument("--show", type=positive_int, default=5, help="closest pairs to list")
    args = parser.parse_args(argv)
    pairs = compare_splits(args.train_limit, mask_names=args.mask_names)
    groups = {
        "eval+heldout": pairs,
        **{s: [p for p in pairs if p.split == s] for s in FROZEN_SPLITS},
    }
    print(f"most-similar train complaint (word 3-gram Jaccard, first {args.train_limit} train):")
    for name, group in groups.items():
        scores = [p.similarity for p in group]
        print(
            f"  {name:<13} n={len(group):<4} max {max(scores):.3f}  "
            f"p95 {percentile(scores, 95):.3f}  median {statistics.median(scores):.3f}"
        )
    above = sorted(
        (p for p in pairs if p.similarity >= args.threshold), key=lambda p: -p.similarity
    )
    print(f"{len(above)} pairs at or above {args.threshold}:")
    for p in above:
        print(f"  {p.scenario_id} ~ train-{p.train_seed}: {p.similarity:.3f}")
    if not above:
        print(f"closest {args.show}:")
        for p in sorted(pairs, key=lambda p: -p.similarity)[: args.show]:
            print(f"  {p.scenario_id} ~ train-{p.train_seed}: {p.similarity:.3f}")
    exact = [p for p in pairs if p.exact]
    for p in exact:
        print(f"EXACT DUPLICATE {p.scenario_id} == train-{p.train_seed}")
    twins = [p for p in pairs if p.body_twin >= 0]
    for p in twins[: args.show]:
        print(f"MASKED BODY MATCH {p.scenario_id} == train-{p.body_twin}")
    print(f"masked-body matches (ids, names, numbers, months masked): {len(twins)}")
    print(f"exact duplicates: {len(exact)}")
    return EXIT_FAILED if exact or twins else 0


def main(argv: Sequence[str] | None = None) -> int:
    return run_command("python -m checks.dedup", _main, argv)


if __name__ == "__main__":
    sys.exit(main())
