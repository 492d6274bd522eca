"""BillSleuth as a SkyRL-Gym text environment: one `LedgerEnv` episode per `skyrl_gym.make`.

    from doors.skyrl_env import register; register()    # env_class "billsleuth"
    python -m doors.skyrl_env --split train --limit 5000 --out data/billsleuth   # train.parquet

SkyRL's generator (skyrl_gym_generator.py) makes the environment from a dataset row
(`env_class`, and the row's other fields as `extras`: here `split`, `seed`, `tool_budget` and
`reward_variant`; SkyRL adds `max_turns`), calls `init(prompt)` for the first prompt, then
`step(reply_text)` per model turn.
The prompt is rendered without `tools=`, so `init` returns the system prompt with the nine tool
schemas in it (`doors.text_calls`); `step` reads the calls out of the reply, plays each through
`LedgerEnv.call` and returns each result as a `tool` message. The episode ends as the rollout's
does: findings submitted, the tool budget spent, a reply with no readable call, or `max_turns`
replies. Its last step carries LedgerGym's reward (`doors.verdict`, the rollout's reward and
grader as they are); `get_metrics` gives every reward term and the grader's verdict beside it.
A row's `tool_budget` and `reward_variant` (shaped | binary) win over an
`environment.skyrl_gym.billsleuth` config section's `tool_budget` and `reward` (SkyRL's config
is a closed dataclass, so the rows are where they are set). The truth is never held in a
public attribute.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from typing import Any

from skyrl_gym.envs.base_text_env import BaseTextEnv, BaseTextEnvStepOutput, ConversationType

from doors.text_calls import read_calls, tools_prompt
from doors.verdict import VARIANTS, EpisodeVerdict, judge_episode, verdict_metrics
from env.cli import Parser, positive_int, run_command
from env.episode import record_episode
from env.generation.generator import generate
from env.generation.splits import SPLITS, spec, split_seeds
from env.ledger_env import DEFAULT_TOOL_BUDGET, LedgerEnv, system_prompt
from env.scenario import Scenario
from rewards.reward import Variant

ENV_CLASS = "billsleuth"
ENTRY_POINT = "doors.skyrl_env:BillSleuthTextEnv"
MAX_TURNS = 40  # agent.rollout.RolloutConfig.max_turns; SkyRL's own default is 1


def register() -> None:
    """Registers the environment with skyrl_gym under `ENV_CLASS` (once per process)."""
    import skyrl_gym

    if ENV_CLASS not in skyrl_gym.registry:
        skyrl_gym.register(id=ENV_CLASS, entry_point=ENTRY_POINT)


def prompt(scenario: Scenario, tool_budget: int = DEFAULT_TOOL_BUDGET) -> ConversationType:
    """The first prompt of an episode: the policy with the tools in it, then the complaint."""
    system = f"{system_prompt(tool_budget)}\n\n{tools_prompt(LedgerEnv.tool_specs())}"
    return [{"role": "system", "content": system}, {"role": "user", "content": scenario.complaint}]


class BillSleuthTextEnv(BaseTextEnv):
    """One BillSleuth episode behind SkyRL's text-in, text-out `step`."""

    def __init__(self, env_config: Any = None, extras: Mapping[str, Any] | None = None) -> None:
        super().__init__()
        config, extras = dict(env_config or {}), dict(extras or {})
        if "split" not in extras or "seed" not in extras:
            raise ValueError("a billsleuth row needs split and seed (python -m doors.skyrl_env)")
        variant = extras.get("reward_variant", config.get("reward", "shaped"))
        if variant not in VARIANTS:
            raise ValueError(f"reward variant {variant!r}: choose one of {', '.join(VARIANTS)}")
        self._variant: Variant = variant
        budget = extras.get("tool_budget", config.get("tool_budget", DEFAULT_TOOL_BUDGET))
        self._tool_budget = int(budget)
        self.max_turns = int(extras.get("max_turns", MAX_TURNS))
        self._scenario = generate(str(extras["split"]), int(extras["seed"]))
        self._env = LedgerEnv(self._scenario, tool_budget=self._tool_budget)
        self._verdict: EpisodeVerdict | None = None
        self._end = ""

    def init(self, prompt_messages: ConversationType) -> tuple[ConversationType, dict[str, Any]]:
        """The row's prompt must be this scenario's (its last message the complaint)."""
        if not prompt_messages or prompt_messages[-1].get("content") != self._scenario.complaint:
            where = self._scenario.scenario_id
            raise ValueError(f"the row's prompt is not the complaint of {where}")
        return prompt(self._scenario, self._tool_budget), {}

    def step(self, action: str) -> BaseTextEnvStepOutput:
        if self._verdict is not None:
            raise RuntimeError("step() after the episode ended")
        self.turns += 1
        calls = read_calls(action, LedgerEnv.tool_specs())
        observations = [
            {"role": "tool", "content": self._env.call(call.name, call.arguments)} for call in calls
        ]
        if not calls:
            self._finish("text_reply")
        elif self._env.done:
            self._finish("submitted" if self._env.submitted else "tool_budget")
        elif self.turns >= self.max_turns:
            self._finish("turn_budget")
        if self._verdict is None:
            return BaseTextEnvStepOutput(
                observations=observations, reward=0.0, done=False, metadata={"calls": len(calls)}
            )
        metadata = {"calls": len(calls), "end_reason": self._end}
        return BaseTextEnvStepOutput(
            observations=observations,
            reward=self._verdict.reward.total,
            done=True,
            metadata=metadata,
        )

    def _finish(self, reason: str) -> None:
        """Scores the episode as `agent.rollout` would and frees its database."""
        self._env.truncate()  # a no-op once findings are in
        record = record_episode(self._env)
        self._env.close()
        self._verdict = judge_episode(self._scenario, record, self._variant)
        self._end = reason

    def get_metrics(self) -> dict[str, Any]:
        """Every reward term and the grader's verdict once the episode is over ({} before)."""
        return verdict_metrics(self._verdict) if self._verdict is not None else {}

    def close(self) -> None:
        self._env.close()


def rows(
    split: str, limit: int | None, tool_budget: int, variant: Variant = "shaped"
) -> list[dict[str, Any]]:
    """SkyRL dataset rows: the prompt, the env class, the scenario's split and seed, and the
    episode's settings."""
    return [
        {
            "prompt": prompt(scenario, tool_budget),
            "env_class": ENV_CLASS,
            "split": split,
            "seed": seed,
            "tool_budget": tool_budget,
            "reward_variant": variant,
            "data_source": "billsleuth",
        }
        for seed in split_seeds(split, limit)
        for scenario in [generate(split, seed)]
    ]


def _main(argv: Sequence[str] | None) -> int:
    parser = Parser(prog="python -m doors.skyrl_env", description=__doc__.splitlines()[0])
    parser.add_argument("--split", default="train", choices=SPLITS)
    parser.add_argument("--limit", type=positive_int, default=None, help="default: all")
    parser.add_argument("--tool-budget", type=positive_int, default=DEFAULT_TOOL_BUDGET)
    parser.add_argument("--reward", choices=VARIANTS, default="shaped", help="the reward variant")
    parser.add_argument("--out", required=True, help="folder for <split>.parquet")
    args = parser.parse_args(argv)
    if args.limit is None and spec(args.split).size is None:
        parser.error(f"--limit is needed for {args.split} (the split has no end)")
    from pathlib import Path

    from datasets import Dataset

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{args.split}.parquet"
    table = rows(args.split, args.limit, args.tool_budget, args.reward)
    Dataset.from_list(table).to_parquet(str(path))
    print(f"wrote {path}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    return run_command("python -m doors.skyrl_env", _main, argv)


if __name__ == "__main__":
    sys.exit(main())
