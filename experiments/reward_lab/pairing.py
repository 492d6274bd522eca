"""What pairing a scenario with its twin does to a complaint-following policy (issue 33).

A policy that half the time follows the complaint and half the time the evidence (`agent.auditor`)
is sampled in GRPO groups of 8 on faulted train scenarios. Following the complaint
(`complaint_trusting`): run the auditor's check for the class the customer's words suggest
(`agent.ladder.complaint_label`), credit what it confirms, and where it confirms nothing,
trust the customer: credit the invoice the complaint names (or the latest), for the amount it
claims (or the total), as that class. Unpaired, each step holds only the
scenarios; paired (`[data] twins = true` in a run, `training.data_order.step_scenarios`),
each scenario's counterfactual twin (`env.generation.twins`: the same complaint, nothing
wrong) brings its own group into the step. The table is the mean reward and the mean advantage
(GRPO and Dr. GRPO, `experiments.reward_lab.reinforce`) of the complaint-following rollouts,
per rollout of the step. Both programs are deterministic: each is played once per scenario.
Run: `python -m experiments.reward_lab.pairing [--scenarios 40] [--variant shaped|binary]`.
"""

from __future__ import annotations

import json
import random
import re
import sys
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass

from agent import audit_checks
from agent.auditor import auditor_program
from agent.ladder import complaint_label as guess_label
from env.cli import Parser, run_command
from env.episode import record_episode
from env.generation.generator import generate
from env.generation.splits import split_seeds
from env.generation.twins import twin
from env.ledger_env import LedgerEnv
from env.scenario import Scenario, ToolCall, reveal_truth
from experiments.reward_lab.desk import Desk, ask, read_account
from experiments.reward_lab.moves import check_move, close_credit_submit, play_move
from experiments.reward_lab.reinforce import dr_grpo, grpo
from rewards.reward import RewardConfig, compute_reward

Program = Callable[[Scenario], Generator[ToolCall, str, None]]
_INVOICE_ID = re.compile(r"INV-[0-9A-Z]{4,12}")
_AMOUNT = re.compile(r"(?<![\d.])\d+\.\d{2}(?![\d])")  # a money figure the complaint quotes
FOLLOW_COMPLAINT = 0.5  # the share of the policy's rollouts that follow the complaint
GROUP_SIZE = 8
DRAWS = 50  # groups sampled per scenario (and per twin)


def complaint_trusting(scenario: Scenario, config: RewardConfig) -> float:
    """The reward of one complaint-trusting episode (see the module docstring)."""
    env = LedgerEnv(scenario, episode_id="pairing")
    try:
        desk = Desk.open(env, scenario)
        label = guess_label(scenario.complaint)
        check = getattr(audit_checks, label, None)
        if check is not None:
            play_move(desk, check_move(check))
        desk.findings = [f for f in desk.findings if f.label == label]
        if desk.findings:
            close_credit_submit(desk)
        else:
            _trust(desk, label)
        return compute_reward(reveal_truth(scenario), record_episode(env), config).total
    finally:
        env.close()


def _trust(desk: Desk, label: str) -> None:
    """Credits what the customer says was overcharged, unchecked."""
    read_account(desk)
    named = _INVOICE_ID.findall(desk.complaint)
    invoices = {i["invoice_id"]: i for i in desk.evidence.invoices}
    paid = [i for i in desk.evidence.invoices if i.get("total") not in (None, "0.00")]
    invoice = invoices.get(named[0]) if named and named[0] in invoices else (paid or [None])[-1]
    if invoice is None:
        return
    claimed = _AMOUNT.findall(desk.complaint)
    amount = claimed[0] if claimed else str(invoice["total"])
    reason = f"Customer reports {label.replace('_', ' ')}"
    ask(desk, "draft_credit_note", invoice_id=invoice["invoice_id"], amount=amount, reason=reason)
    affected = [{"invoice_id": invoice["invoice_id"], "overcharge_amount": amount}]
    summary = f"The customer reports {label.replace('_', ' ')} on {invoice['invoice_id']}."
    ask(desk, "submit_findings", root_cause=label, affected_invoices=affected, summary=summary)


def play(scenario: Scenario, program: Program, config: RewardConfig) -> float:
    """The reward of one episode of a scripted program on `scenario`."""
    env = LedgerEnv(scenario, episode_id="pairing")
    try:
        steps = program(scenario)
        try:
            step = next(steps)
            while True:
                step = steps.send(env.call(step.name, json.dumps(step.arguments)))
        except StopIteration:
            pass
        return compute_reward(reveal_truth(scenario), record_episode(env), config).total
    finally:
        env.close()


@dataclass(frozen=True)
class Rewards:
    complaint: float  # the complaint-following program's reward
    evidence: float  # the evidence-following program's


@dataclass(frozen=True)
class Row:
    setting: str
    complaint_reward: float
    evidence_reward: float
    grpo_advantage: float  # mean over the complaint-following rollouts of the step
    dr_grpo_advantage: float


def rewards_of(scenario: Scenario, config: RewardConfig) -> Rewards:
    return Rewards(complaint_trusting(scenario, config), play(scenario, auditor_program, config))


def _groups(rewards: Rewards, rng: random.Random) -> list[tuple[bool, float]]:
    """One sampled group: (follows the complaint, reward) per rollout."""
    picks = [rng.random() < FOLLOW_COMPLAINT for _ in range(GROUP_SIZE)]
    return [(c, rewards.complaint if c else rewards.evidence) for c in picks]


def measure(pairs: Sequence[tuple[Rewards, Rewards]], seed: int = 0) -> list[Row]:
    """Unpaired (the original's groups) and paired (the original's and the twin's)."""
    rows = []
    for setting, with_twin in (("unpaired", False), ("paired with its twin", True)):
        rng = random.Random(seed)
        follow: list[tuple[float, float, float]] = []  # reward, grpo, dr_grpo
        evidence: list[float] = []
        for original, twin_rewards in pairs:
            for _ in range(DRAWS):
                groups = [_groups(original, rng)]
                if with_twin:
                    groups.append(_groups(twin_rewards, rng))
                for group in groups:
                    values = [r for _, r in group]
                    for (c, r), a, d in zip(group, grpo(values), dr_grpo(values), strict=True):
                        if c:
                            follow.append((r, a, d))
                        else:
                            evidence.append(r)
        rows.append(
            Row(
                setting,
                sum(f[0] for f in follow) / len(follow),
                sum(evidence) / len(evidence),
                sum(f[1] for f in follow) / len(follow),
                sum(f[2] for f in follow) / len(follow),
            )
        )
    return rows


def faulted_seeds(count: int) -> list[int]:
    seeds = []
    for seed in split_seeds("train", 20 * count):
        if reveal_truth(generate("train", seed)).label != "no_error":
            seeds.append(seed)
        if len(seeds) == count:
            break
    return seeds


def table(rows: Sequence[Row], scenarios: int, variant: str) -> str:
    out = [
        f"Complaint-following rollouts, {scenarios} faulted train scenarios, {variant} reward, "
        f"groups of {GROUP_SIZE}, {FOLLOW_COMPLAINT:.0%} of rollouts follow the complaint:",
        "",
        "| step holds | complaint reward | evidence reward | GRPO advantage | Dr. GRPO advantage |",
        "|---|---|---|---|---|",
    ]
    out += [
        f"| {r.setting} | {r.complaint_reward:+.3f} | {r.evidence_reward:+.3f} | "
        f"{r.grpo_advantage:+.3f} | {r.dr_grpo_advantage:+.3f} |"
        for r in rows
    ]
    return "\n".join(out)


def _main(argv: Sequence[str] | None) -> int:
    parser = Parser(prog="python -m experiments.reward_lab.pairing", description=__doc__)
    parser.add_argument("--scenarios", type=int, default=40)
    parser.add_argument("--variant", choices=("shaped", "binary"), default="shaped")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    config = RewardConfig(variant=args.variant)
    seeds = faulted_seeds(args.scenarios)
    pairs = [
        (rewards_of(generate("train", s), config), rewards_of(twin("train", s), config))
        for s in seeds
    ]
    print(table(measure(pairs, args.seed), len(seeds), args.variant))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    return run_command("python -m experiments.reward_lab.pairing", _main, argv)


if __name__ == "__main__":
    sys.exit(main())
