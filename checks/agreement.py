"""Reward vs grader: does the binary reward equal grounded success on every episode?

    python -m checks.agreement [--episodes 1000] [--seed 0] [--cheat-scenarios N]
                               [--no-surface] [--json PATH]

Runs `--episodes` random-policy episodes over the eval split, then every cheat of the
reward-hacking suite on its sample (`checks.hacks.cheats`, and `checks.hacks.cheats_surface`
unless `--no-surface`), and scores each episode twice: `rewards.reward` (binary variant) and
`eval.grader` (grounded success), two implementations of the same rules. Prints the
disagreement table and every episode where success and grounded success split, with the
reason; exits 1 on any binary-vs-grounded disagreement (2 when --json cannot be written).
`--cheat-scenarios 1` plays each cheat once, for a quick check (tests/checks/test_agreement.py).
This is the one module that imports both sides: comparing them is its job (the grader itself
imports nothing from `rewards/`).

The random policy reads like a careless agent: some of the reference's reads, random look-ups
(invented dates, recompute overrides), credits right or wrong, a label and amounts right or
wrong, and a summary mixing tool numbers, invented numbers, echoes, counts, times and written
calculations (right or wrong, rewards/README.md G10), each in a random notation, markup and
invisible characters among them (G2.0). It reads the
truth only to make right answers common enough to test.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections import Counter
from collections.abc import Callable, Generator, Sequence
from dataclasses import asdict, dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

from checks.hacks.cheats import CHEATS
from checks.hacks.cheats_surface import SURFACE_CHEATS
from checks.hacks.samples import sample
from env.cli import EXIT_FAILED, EXIT_USER_ERROR, Parser, run_command
from env.engine.money import format_cents
from env.episode import EpisodeRecord, record_episode
from env.generation.generator import generate
from env.generation.splits import split_seeds
from env.labels import ROOT_CAUSES
from env.ledger_env import LedgerEnv
from env.scenario import Scenario, ToolCall, reveal_truth
from eval.grader import EpisodeGrade, grade_episode
from rewards.reward import RewardConfig, compute_reward

_BINARY = RewardConfig(variant="binary")
_READS = ("get_customer", "list_invoices", "get_invoice", "list_payments", "get_tax_rate")


@dataclass(frozen=True)
class Verdict:
    source: str  # "random" or the cheat's name
    scenario_id: str
    binary: float
    reward_success: bool
    success: bool
    grounded_success: bool
    reward_hallucinated: bool
    grader_hallucinated: bool
    why_not_grounded: str

    @property
    def disagrees(self) -> bool:
        return (self.binary == 1.0) != self.grounded_success


def judge(source: str, scenario: Scenario, record: EpisodeRecord) -> Verdict:
    truth = reveal_truth(scenario)
    reward = compute_reward(truth, record, _BINARY)
    grade = grade_episode(truth, record, scenario.database)
    return Verdict(
        source,
        scenario.scenario_id,
        reward.total,
        reward.success,
        grade.success,
        grade.grounded_success,
        reward.hallucinated_numbers,
        grade.hallucinated_numbers,
        _why_not_grounded(grade),
    )


def _why_not_grounded(grade: EpisodeGrade) -> str:
    if not grade.success or grade.grounded_success:
        return ""
    bad = [f"{t.text!r} {t.status}" for t in grade.number_trace if t.status != "evidence"]
    bad = [b for b in bad if not b.endswith(("allowed", "claimed", "derived"))]
    if bad:
        return "; ".join(bad[:4])
    if not grade.investigated:
        return "no_error without reading a disputed invoice and citing a fact of it (G11)"
    return "no found fact: only counts, times or the own total are cited"


def play(scenario: Scenario, steps: Generator[ToolCall, str, Any]) -> EpisodeRecord:
    """Drives a program through a fresh episode, as the rollout does, without a model loop."""
    env = LedgerEnv(scenario)
    try:
        step = next(steps)
        while True:
            result = env.call(step.name, json.dumps(step.arguments))
            if env.done:
                break
            step = steps.send(result)
    except StopIteration:
        pass
    finally:
        steps.close()
    env.truncate()
    record = record_episode(env)
    env.close()
    return record


# the random policy ----------------------------------------------------------------------------


def _notation(rng: random.Random, amount: str) -> str:
    """`amount` ("1234.50") in one of the notations the reader takes, or one it must refuse."""
    whole, _, cents = amount.partition(".")
    forms = [
        amount,
        f"${amount}",
        f"USD{amount}",
        f"{amount}EUR",
        f"{int(whole):,}.{cents}",
        f"{int(whole):_}.{cents}",
        f"{int(whole):,}.{cents}".replace(",", " ").replace(".", ",")
        if len(whole) > 3
        else f"{whole},{cents}",
        f"{amount}x",
        f"{amount}.0",
        "".join(chr(0x660 + int(c)) if c.isdigit() else c for c in amount),
        f"{amount.rstrip('0').rstrip('.')}e0",
        # as displayed (rewards/README.md G2.0): markup and invisible characters around or
        # inside it show the same number; a digit joined to it shows another one
        f"**{amount}**",
        f"<b>{amount}</b>",
        f"\\({amount}\\,\\text{{CAD}}\\)",
        f"Total:{amount}",
        f"{amount[:1]}\u200b{amount[1:]}",
        f"{amount[:1]}<!-- -->{amount[1:]}",
        f"*9*{amount}",
        f"9\u00ad{amount}",
    ]
    return rng.choice(forms)


def _date_form(rng: random.Random, day: str) -> str:
    year, month, dom = day.split("-")
    names = ["January", "February", "March", "April", "May", "June", "July", "August"]
    names += ["September", "October", "November", "December"]
    name = names[int(month) - 1]
    forms = [day, f"{int(dom)} {name} {year}", f"{name} {int(dom)}, {year}"]
    forms += [f"{dom}.{month}.{year}", f"{month}/{dom}/{year}", f"{name} {year}"]
    return rng.choice([*forms, f"{name[:3]} {int(dom)}"])


def _numbers_in(text: str) -> list[str]:
    found = []
    for word in text.replace('"', " ").replace(",", " ").split():
        core = word.strip("{}[]:")
        if core.count(".") == 1 and core.replace(".", "").isdigit() and len(core) > 3:
            found.append(core)
    return found


def _summary(rng: random.Random, scenario: Scenario, seen: list[str], echoes: list[str]) -> str:
    truth = reveal_truth(scenario)
    parts = [truth.reference[-1].arguments["summary"]] if rng.random() < 0.4 else []
    numbers = [n for text in seen for n in _numbers_in(text)]
    for _ in range(rng.randint(0, 4)):
        roll = rng.random()
        if numbers and roll < 0.35:
            parts.append(f"saw {_notation(rng, rng.choice(numbers))}")
        elif roll < 0.5:
            parts.append(
                f"about {_notation(rng, f'{rng.randint(1, 9999)}.{rng.randint(0, 99):02d}')}"
            )
        elif roll < 0.6:
            parts.append(f"checked {rng.choice(['3', 'three', '12', '13', 'twenty'])} invoices")
        elif roll < 0.7:
            parts.append(f"at {rng.randint(0, 23):02d}:{rng.choice(['00', '15', '30'])}")
        elif echoes and roll < 0.85:
            parts.append(f"on {_date_form(rng, rng.choice(echoes))}")
        else:
            parts.append(
                scenario.customer_id.lower() if rng.random() < 0.5 else scenario.customer_id
            )
    if rng.random() < 0.35:  # rewards/README.md G10: a calculation, right or wrong
        parts.append(_calculation(rng, numbers, truth.overcharges))
    return " ".join(parts)[:3900]


def _calculation(rng: random.Random, numbers: list[str], owed: dict[str, int]) -> str:
    """`a op b = c` (sometimes chained once more) on shown, invented or owed amounts, counts
    and non-counts, in a random notation; about a third have the wrong result."""
    pool = [*numbers, f"{rng.randint(1, 9999)}.{rng.randint(0, 99):02d}"]
    pool += [format_cents(c) for c in owed.values()]
    a = Decimal(rng.choice(pool))
    text = _notation(rng, f"{a:.2f}")
    for _ in range(1 if rng.random() < 0.8 else 2):
        op = rng.choice(["-", "\u2212", "+", "x", "\u00d7", "*", "/", "\u00f7"])
        if op in ("-", "\u2212", "+"):
            b = Decimal(rng.choice(pool))
            c = a - b if op != "+" else a + b
        else:
            b = Decimal(rng.choice([1, 2, 3, 4, 7, 12, 13]))
            c = a * b if op in ("x", "\u00d7", "*") else (a / b).quantize(Decimal("0.01"))
        if rng.random() < 0.3:
            c += Decimal("0.01")
        written_b = str(b) if b == b.to_integral() and op not in "-\u2212+" else f"{b:.2f}"
        sign = "-" if c < 0 else ""
        text += f" {op} {_notation(rng, written_b)} = {sign}{_notation(rng, f'{abs(c):.2f}')}"
        a = abs(c)
    return text


def random_program(rng: random.Random) -> Callable[[Scenario], Generator[ToolCall, str, None]]:
    def program(scenario: Scenario) -> Generator[ToolCall, str, None]:
        truth = reveal_truth(scenario)
        seen: list[str] = []
        echoes: list[str] = []
        reads = [
            s for s in truth.reference if s.name not in ("draft_credit_note", "submit_findings")
        ]
        for step in reads:
            if rng.random() < 0.75:
                seen.append((yield step))
        for _ in range(rng.randint(0, 3)):
            day = f"2025-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
            invoice = rng.choice([*truth.overcharges, "INV-ZZZZ99"])
            if rng.random() < 0.5:
                echoes.append(day)
                call = ToolCall(
                    "get_tax_rate", {"jurisdiction": rng.choice(["US-CA", "DE"]), "date": day}
                )
            elif rng.random() < 0.5:
                echoes.append(day)
                call = ToolCall("recompute_invoice", {"invoice_id": invoice, "period_start": day})
            else:
                call = ToolCall(rng.choice(_READS), {"customer_id": scenario.customer_id})
            seen.append((yield call))
        right = {i: format_cents(c) for i, c in truth.overcharges.items()}
        credits = right if rng.random() < 0.7 else {i: "1.00" for i in right}
        if rng.random() < 0.85:
            for invoice, amount in credits.items():
                seen.append(
                    (
                        yield ToolCall(
                            "draft_credit_note",
                            {"invoice_id": invoice, "amount": amount, "reason": "overcharge"},
                        )
                    )
                )
        if rng.random() < 0.3:
            for invoice in right:
                seen.append((yield ToolCall("get_invoice", {"invoice_id": invoice})))
        label = truth.label if rng.random() < 0.75 else rng.choice(ROOT_CAUSES)
        items = right if rng.random() < 0.8 else credits
        summary = _summary(rng, scenario, seen, echoes)
        affected = [{"invoice_id": i, "overcharge_amount": a} for i, a in items.items()]
        yield ToolCall(
            "submit_findings",
            {"root_cause": label, "affected_invoices": affected, "summary": summary},
        )

    return program


def random_verdicts(episodes: int, seed: int) -> list[Verdict]:
    seeds = split_seeds("eval")
    rng = random.Random(seed)
    verdicts = []
    for n in range(episodes):
        scenario = generate("eval", seeds[n % len(seeds)])  # cached by the generator
        record = play(scenario, random_program(rng)(scenario))
        verdicts.append(judge("random", scenario, record))
    return verdicts


def cheat_verdicts(per_cheat: int | None = None, surface: bool = True) -> list[Verdict]:
    """Every cheat of the suite on its sample (or the first `per_cheat` scenarios of it),
    with the surface-cue policies of `checks.hacks.cheats_surface` unless `surface` is off (their
    model policy first fits a tree on 1,500 generated train scenarios: seconds)."""
    cheats = [*CHEATS, *(SURFACE_CHEATS if surface else ())]
    verdicts = []
    for cheat in cheats:
        for scenario in sample(cheat.sample)[:per_cheat]:
            verdicts.append(judge(cheat.name, scenario, play(scenario, cheat.program(scenario))))
    return verdicts


def disagreements(verdicts: Sequence[Verdict]) -> list[Verdict]:
    """Episodes where the binary reward and the grader's grounded success differ."""
    return [v for v in verdicts if v.disagrees]


def splits(verdicts: Sequence[Verdict]) -> list[Verdict]:
    """Grader successes that are not grounded successes (each carries its reason)."""
    return [v for v in verdicts if v.success and not v.grounded_success]


def exit_status(verdicts: Sequence[Verdict]) -> int:
    """1 when any episode's binary reward and grounded success disagree, else 0."""
    return EXIT_FAILED if disagreements(verdicts) else 0


# the report -----------------------------------------------------------------------------------


def print_report(verdicts: Sequence[Verdict]) -> int:
    by_source = Counter("random" if v.source == "random" else "cheats" for v in verdicts)
    table = Counter((v.binary == 1.0, v.grounded_success) for v in verdicts)
    success = Counter((v.reward_success, v.success) for v in verdicts)
    flags = Counter((v.reward_hallucinated, v.grader_hallucinated) for v in verdicts)
    print(f"{len(verdicts)} episodes: {by_source['random']} random, {by_source['cheats']} cheat")
    print("\n| reward \\ grader | grounded | not grounded |\n|---|---:|---:|")
    print(f"| binary 1 | {table[True, True]} | {table[True, False]} |")
    print(f"| binary 0 | {table[False, True]} | {table[False, False]} |")
    same, differ = success[True, True] + success[False, False], success[True, False]
    differ += success[False, True]
    print(f"\nsuccess (reward's conditions vs grader's): agree {same}, differ {differ}")
    print(
        f"hallucinated numbers flag: agree {flags[True, True] + flags[False, False]}, "
        f"differ {flags[True, False] + flags[False, True]}"
    )
    split = splits(verdicts)
    print(f"\n{len(split)} successes that are not grounded successes:")
    for v in split:
        print(f"  {v.source:<34} {v.scenario_id:<16} {v.why_not_grounded}")
    wrong = disagreements(verdicts)
    print(f"\n{len(wrong)} binary-vs-grounded disagreements")
    for v in wrong:
        grounded = v.grounded_success
        print(f"  DISAGREE {v.source} {v.scenario_id}: binary {v.binary}, grounded {grounded}")
    return exit_status(verdicts)


def _main(argv: Sequence[str] | None) -> int:
    parser = Parser(prog="python -m checks.agreement", description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=1000, help="random-policy episodes")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--cheat-scenarios",
        type=int,
        help="play each cheat on only the first N scenarios of its sample (default: all)",
    )
    parser.add_argument(
        "--surface",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="the surface-cue policies of checks.hacks.cheats_surface too (default: yes; their "
        "model policy first fits a tree on generated train scenarios)",
    )
    parser.add_argument("--json", type=Path, help="write every verdict here")
    args = parser.parse_args(argv)
    if args.episodes < 0:
        parser.error("--episodes must be 0 or more")
    if args.cheat_scenarios is not None and args.cheat_scenarios < 0:
        parser.error("--cheat-scenarios must be 0 or more")
    started = time.perf_counter()
    verdicts = [
        *random_verdicts(args.episodes, args.seed),
        *cheat_verdicts(args.cheat_scenarios, args.surface),
    ]
    status = print_report(verdicts)
    print(f"({time.perf_counter() - started:.1f} s)")
    if args.json:
        rows = [asdict(v) for v in verdicts]
        try:
            args.json.write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")
        except OSError as exc:
            print(f"error: cannot write --json {args.json}: {exc.strerror}", file=sys.stderr)
            return EXIT_USER_ERROR
    return status


def main(argv: Sequence[str] | None = None) -> int:
    return run_command("python -m checks.agreement", _main, argv)


if __name__ == "__main__":
    sys.exit(main())
