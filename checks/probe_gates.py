"""The probe's gates and its ratchet: one bound on one sample, and the gates allowed to fail.

`checks.probe` builds a `Gate` per bound and sample and prints its margin. `--known FILE`
(written by `--write-known FILE`) lists gates a world change does not meet yet: such a gate may
keep failing but not get worse than its recorded value by more than `KNOWN_SLACK`; any other
broken gate, and any fingerprint token, comparison check or pair-rule past its gate that the
file does not list, still fails the probe.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from checks.probe_search import PairRule
from checks.probe_signals import CheckResult, TokenResult
from env.cli import UsageError


@dataclass(frozen=True)
class Gate:
    """One bound on one sample. margin = bound - value: negative means the gate broke."""

    name: str
    sample: str
    value: float
    bound: float
    worst: str  # what gives the value
    counted: bool = False  # shown with its margin, judged by a count gate instead (issue 39)

    @property
    def margin(self) -> float:
        return self.bound - self.value

    @property
    def holds(self) -> bool:
        return self.counted or self.value <= self.bound


KNOWN_SLACK = 0.03  # sampling noise of a 100-scenario split is about +-0.05 at worst


@dataclass(frozen=True)
class Known:
    """The ratchet: gates the world does not meet yet, with their recorded values, and the
    fingerprint tokens and comparison checks that break their gates today; nothing else may."""

    gates: dict[tuple[str, str], float]
    tokens: frozenset[str]
    checks: frozenset[str]
    pairs: frozenset[str] = frozenset()  # "class: pair" of the pair-rules past their gate


NOTHING_KNOWN = Known({}, frozenset(), frozenset())


def broken_pairs(rules: Sequence[PairRule]) -> list[str]:
    return sorted({f"{r.label}: {r.pair}" for r in rules if r.breaks_gate})


def load_known(path: Path) -> Known:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        gates = {(e["name"], e["sample"]): float(e["value"]) for e in data["gates"]}
        pairs = frozenset(data.get("pairs", []))
        return Known(gates, frozenset(data["tokens"]), frozenset(data["checks"]), pairs)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise UsageError(f"--known {path}: not a readable ratchet file ({exc})") from None


def write_known(
    path: Path,
    gates: Sequence[Gate],
    tokens: Sequence[TokenResult],
    checks: Sequence[CheckResult],
    pair_rules: Sequence[PairRule] = (),
) -> None:
    payload = {
        "why": "gates the world does not meet yet; checks.probe --known keeps them from "
        "getting worse and fails on any new broken gate, fingerprint token, comparison check or "
        "pair-rule (temporary: issue 29 item 4, checks/README.md)",
        "gates": [
            {"name": g.name, "sample": g.sample, "value": round(g.value, 3)}
            for g in gates
            if not g.holds
        ],
        "tokens": sorted(t.token for t in tokens if t.breaks_gate),
        "checks": sorted(c.name for c in checks if c.breaks_gate),
        "pairs": broken_pairs(pair_rules),
    }
    path.write_text(json.dumps(payload, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def judge(
    gates: Sequence[Gate],
    known: Known,
    tokens: Sequence[TokenResult] = (),
    checks: Sequence[CheckResult] = (),
    pair_rules: Sequence[PairRule] = (),
) -> list[str]:
    """The failures that count: a broken gate not in `known` or worse than recorded, and any
    token or check past its gate that `known` does not list."""
    failures = []
    for g in gates:
        recorded = known.gates.get((g.name, g.sample))
        if g.holds:
            if recorded is not None and recorded > g.bound:
                print(f"FIXED: {g.name} on {g.sample} now holds; remove it from the known list")
            continue
        line = f"{g.name} on {g.sample}: {g.value:.2f} > {g.bound} ({g.worst})"
        if recorded is not None and g.value <= recorded + KNOWN_SLACK:
            print(f"known (not yet met, recorded {recorded:.2f}): {line}")
        else:
            worse = "" if recorded is None else f", worse than recorded {recorded:.2f}"
            failures.append(line + worse)
    if known.gates:  # a ratchet run: what breaks must already be on the list
        failures += [f"new fingerprint token: {t.token}" for t in tokens
                     if t.breaks_gate and t.token not in known.tokens]  # fmt: skip
        failures += [f"new decisive comparison check: {c.name}" for c in checks
                     if c.breaks_gate and c.name not in known.checks]  # fmt: skip
        failures += [f"new decisive pair: {p}" for p in broken_pairs(pair_rules)
                     if p not in known.pairs]  # fmt: skip
    return failures
