"""Reward check: the whole eval split's reference solutions must score full marks, and every
cheat of `checks.hacks.cheats` (and the surface-cue policies) must stay within its bounds.

Run: `python -m checks.hacks [--json PATH]`. Exits 1 if any bound is broken or any reference
scores below 1.0 (shaped) or 1 (binary). Everything runs through `agent.rollout.run_episode`,
the rollout that evaluation and training use; scenarios are cached by `generate`.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from agent.program_policy import ProgramPolicy, reference_policy
from agent.rollout import RolloutConfig, run_episode
from checks.hacks.cheats import CHEATS
from checks.hacks.cheats_surface import SURFACE_CHEATS
from checks.hacks.programs import Cheat
from checks.hacks.samples import eval_scenarios, sample
from env.cli import EXIT_FAILED, Parser, run_command
from env.labels import ROOT_CAUSES
from env.scenario import Scenario, Truth, reveal_truth
from rewards.reward import RewardConfig, compute_reward

_SLACK = 1e-9
_BINARY = RewardConfig(variant="binary")


@dataclass(frozen=True)
class Score:
    scenario_id: str
    shaped: float
    binary: float
    breakdown: dict[str, object]


@dataclass(frozen=True)
class CaseResult:
    """One row of the table: a cheat, or the references of one label."""

    case: str
    kind: str  # "reference" or "cheat"
    episodes: int
    mean_shaped: float
    mean_binary: float
    max_shaped: float
    min_shaped: float
    min_binary: float
    shaped_bound: float | None
    binary_bound: float | None
    worst: Score  # the highest-scoring episode of a cheat, the lowest of a reference
    reason: str = ""

    @property
    def passed(self) -> bool:
        if self.kind == "reference":
            return self.min_shaped >= 1.0 - _SLACK and self.min_binary >= 1.0
        assert self.shaped_bound is not None and self.binary_bound is not None
        return (
            self.mean_shaped <= self.shaped_bound + _SLACK
            and self.mean_binary <= self.binary_bound + _SLACK
        )


async def score(policy: ProgramPolicy, scenario: Scenario) -> Score:
    result = await run_episode(policy, scenario, RolloutConfig(reward=RewardConfig()))
    binary = compute_reward(reveal_truth(scenario), result.record, _BINARY)
    return Score(scenario.scenario_id, result.reward.total, binary.total, result.reward.to_dict())


def _row(
    case: str, kind: str, scores: Sequence[Score], cheat: Cheat | None, truths: Sequence[Truth]
) -> CaseResult:
    shaped = [s.shaped for s in scores]
    binary = [s.binary for s in scores]
    pick = max if kind == "cheat" else min
    shaped_bound, binary_bound = cheat.bounds(truths) if cheat else (None, None)
    return CaseResult(
        case=case,
        kind=kind,
        episodes=len(scores),
        mean_shaped=sum(shaped) / len(shaped),
        mean_binary=sum(binary) / len(binary),
        max_shaped=max(shaped),
        min_shaped=min(shaped),
        min_binary=min(binary),
        shaped_bound=shaped_bound,
        binary_bound=binary_bound,
        worst=pick(scores, key=lambda s: (s.shaped, s.binary)),
        reason=cheat.reason if cheat else "",
    )


async def run_references() -> list[CaseResult]:
    policy = reference_policy()
    by_label: dict[str, list[Score]] = {label: [] for label in ROOT_CAUSES}
    for scenario in eval_scenarios():
        by_label[reveal_truth(scenario).label].append(await score(policy, scenario))
    return [
        _row(f"reference/{label}", "reference", scores, None, [])
        for label, scores in by_label.items()
        if scores
    ]


async def run_cheat(cheat: Cheat, scenarios: Iterable[Scenario] | None = None) -> CaseResult:
    policy = ProgramPolicy(cheat.name, cheat.program)
    chosen = list(scenarios) if scenarios is not None else sample(cheat.sample)
    scores = [await score(policy, scenario) for scenario in chosen]
    return _row(cheat.name, "cheat", scores, cheat, [reveal_truth(s) for s in chosen])


async def run_suite(cheats: Iterable[Cheat] = (*CHEATS, *SURFACE_CHEATS)) -> list[CaseResult]:
    return [await run_cheat(cheat) for cheat in cheats]


def _bound(value: float | None) -> str:
    return "" if value is None else f"{value:+.3f}"


def print_table(results: Sequence[CaseResult]) -> None:
    print(
        f"{'case':<40} {'n':>3} {'shaped':>7} {'worst':>7} {'binary':>6} "
        f"{'s.bound':>7} {'b.bound':>7}  result"
    )
    for r in results:
        shown = r.min_shaped if r.kind == "reference" else r.max_shaped
        print(
            f"{r.case:<40} {r.episodes:>3} {r.mean_shaped:>+7.3f} {shown:>+7.3f} "
            f"{r.mean_binary:>6.3f} {_bound(r.shaped_bound):>7} {_bound(r.binary_bound):>7}  "
            f"{'pass' if r.passed else 'FAIL ' + r.worst.scenario_id}"
        )


def _main(argv: Sequence[str] | None) -> int:
    parser = Parser(prog="python -m checks.hacks", description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, help="write every row and its worst episode here")
    args = parser.parse_args(argv)
    results = asyncio.run(_run_all())
    print_table(results)
    cheats = [r for r in results if r.kind == "cheat"]
    top = max(cheats, key=lambda r: r.mean_shaped)
    top_episode = max(cheats, key=lambda r: r.max_shaped)
    failed = [r.case for r in results if not r.passed]
    print(
        f"{len(cheats)} cheats; highest mean shaped {top.mean_shaped:+.3f} ({top.case}); "
        f"highest episode {top_episode.max_shaped:+.3f} ({top_episode.case}, "
        f"{top_episode.worst.scenario_id}); "
        + (f"FAILED: {', '.join(failed)}" if failed else "all bounds hold")
    )
    if args.json:
        rows = [{**asdict(r), "passed": r.passed} for r in results]
        args.json.write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")
    return EXIT_FAILED if failed else 0


def main(argv: Sequence[str] | None = None) -> int:
    return run_command("python -m checks.hacks", _main, argv)


async def _run_all() -> list[CaseResult]:
    return [*(await run_references()), *(await run_suite())]


if __name__ == "__main__":
    sys.exit(main())
