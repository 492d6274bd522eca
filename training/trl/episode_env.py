"""LedgerEnv for TRL's `GRPOTrainer(environment_factory=...)`: the nine tools as public methods.

TRL turns every public method of the class into a tool through transformers' `get_json_schema`,
so the methods are generated from `env.tools.BillingTools` (signature and Google docstring),
never copied by hand; each delegates to `LedgerEnv.call`. Two differences from the contract's
signatures: every tool returns the JSON text (TRL shows the model `str(result)`), and
`get_json_schema` cannot describe pydantic models, so `submit_findings(affected_invoices=...)`
is typed `list[dict[str, str]]` (the same JSON objects; `dispatch` validates them).
Test: pytest tests/train/test_trl_runner.py
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, get_type_hints

from env.episode import record_episode
from env.generation.generator import generate
from env.ledger_env import DEFAULT_TOOL_BUDGET, LedgerEnv
from env.scenario import Scenario, reveal_truth
from env.tools import TOOL_NAMES, BillingTools
from rewards.reward import RewardBreakdown, RewardConfig, compute_reward
from training.tool_sequences import sequence_digest

# Argument types get_json_schema cannot convert, replaced by the JSON they stand for.
TRL_ARGUMENT_TYPES: dict[tuple[str, str], Any] = {
    ("submit_findings", "affected_invoices"): list[dict[str, str]],
}


@dataclass(frozen=True)
class EpisodeOutcome:
    """What one finished TRL episode scored; kept for logging, never shown to the model."""

    scenario_id: str
    reward: RewardBreakdown
    tool_calls: int
    tool_errors: int
    tool_sequence: str = ""  # training.tool_sequences.sequence_digest of the tools called


def _tool_signature(name: str) -> tuple[inspect.Signature, dict[str, Any]]:
    source = getattr(BillingTools, name)
    hints = get_type_hints(source)
    parameters = list(inspect.signature(source).parameters.values())
    annotations: dict[str, Any] = {}
    typed = [parameters[0]]  # self, unannotated: get_json_schema skips it
    for param in parameters[1:]:
        annotation = TRL_ARGUMENT_TYPES.get((name, param.name), hints[param.name])
        annotations[param.name] = annotation
        typed.append(param.replace(annotation=annotation))
    annotations["return"] = str
    return inspect.Signature(typed, return_annotation=str), annotations


def _tool_method(name: str) -> Callable[..., str]:
    """A method with the tool's signature and docstring that forwards its arguments as JSON."""
    signature, annotations = _tool_signature(name)

    def method(self: LedgerTrlEnv, **arguments: Any) -> str:
        # Keyword-only forwarding: arguments the model invents reach `dispatch`, which answers
        # with the accepted fields, exactly as in an evaluation rollout.
        return self._call(name, arguments)

    method.__name__ = name
    method.__qualname__ = f"LedgerTrlEnv.{name}"
    method.__doc__ = getattr(BillingTools, name).__doc__
    method.__signature__ = signature  # type: ignore[attr-defined]
    method.__annotations__ = annotations
    return method


class LedgerTrlEnv:
    """One pooled TRL environment; `reset` starts a fresh episode on the row's (split, seed).

    TRL reuses instances across batches, so every per-episode field is replaced in `reset`.
    The scenario (and with it the truth) sits in private attributes only.
    """

    def __init__(
        self,
        reward_config: RewardConfig | None = None,
        *,
        tool_budget: int = DEFAULT_TOOL_BUDGET,
        sink: Callable[[EpisodeOutcome], None] | None = None,
    ) -> None:
        self._reward_config = reward_config or RewardConfig()
        self._tool_budget = tool_budget
        self._sink = sink
        self._scenario: Scenario | None = None
        self._env: LedgerEnv | None = None

    def reset(self, split: str, seed: int, **row: Any) -> str:
        """Start the episode of the row's scenario; the complaint is already in the row's prompt.

        Every generation of a group gets the same row, hence the same scenario. Returns "" (TRL
        appends the text to the last user message with no separator).
        """
        if self._env is not None:
            self._env.close()
        self._scenario = generate(split, int(seed))
        self._env = LedgerEnv(self._scenario, tool_budget=self._tool_budget)
        prompt = row.get("prompt")
        if prompt and prompt[-1].get("content") != self._scenario.complaint:
            raise ValueError(f"row prompt does not end with the complaint of {split}-{seed}")
        return ""

    def get_reward(self) -> float:
        """The LedgerGym reward of the episode; an unsubmitted episode still pays its penalties."""
        if self._env is None or self._scenario is None:
            raise RuntimeError("get_reward() before reset()")
        self._env.truncate()  # text-only reply or length cut: no submission, as in the rollout
        record = record_episode(self._env)
        breakdown = compute_reward(reveal_truth(self._scenario), record, self._reward_config)
        if self._sink is not None:
            errors = sum(entry.is_error for entry in record.tool_log)
            sequence = sequence_digest([entry.name for entry in record.tool_log])
            outcome = EpisodeOutcome(
                record.scenario_id, breakdown, record.tool_calls, errors, sequence
            )
            self._sink(outcome)
        return breakdown.total

    def _call(self, name: str, arguments: dict[str, Any]) -> str:
        if self._env is None:
            return json.dumps({"error": "no episode is running; the trainer must call reset()"})
        return self._env.call(name, json.dumps(arguments, ensure_ascii=False))


for _name in TOOL_NAMES:
    setattr(LedgerTrlEnv, _name, _tool_method(_name))


def tool_format_reward(weight: float, eos_token_id: int) -> Callable[..., list[float]]:
    """Extra shaping (CPU runs only): `weight` x how well-formed the episode's turns were.

    Half for ending the last turn itself (with `eos_token_id`, not cut at the length limit),
    half for the mean turn score: 1 for a call to one of the nine tools, 0.5 for a turn that
    opens a `<tool_call>` that does not parse or names no known tool, 0 otherwise. A separate
    TRL reward column (`rewards/tool_format/...`), never part of the LedgerGym reward: it gives
    a barely warm-started model a gradient towards the format.
    """

    def turn_score(turn: dict[str, Any]) -> float:
        calls = turn.get("tool_calls") or []
        if calls and all(c.get("function", {}).get("name") in TOOL_NAMES for c in calls):
            return 1.0
        opened = calls or str(turn.get("content") or "").lstrip().startswith("<tool_call>")
        return 0.5 if opened else 0.0

    def tool_format(
        completions: list[list[dict[str, Any]]], completion_ids: list[list[int]], **_: Any
    ) -> list[float]:
        scores = []
        for turns, ids in zip(completions, completion_ids, strict=True):
            replies = [turn_score(t) for t in turns if t.get("role") == "assistant"]
            shape = sum(replies) / len(replies) if replies else 0.0
            stopped = float(bool(ids) and ids[-1] == eos_token_id)
            scores.append(weight * (stopped + shape) / 2)
        return scores

    return tool_format


def trl_tool_schemas() -> list[dict[str, Any]]:
    """The tool list exactly as TRL renders it into prompts (and as SFT and eval must too)."""
    from transformers.utils import get_json_schema

    probe = LedgerTrlEnv()
    public = [
        member
        for member, _ in inspect.getmembers(LedgerTrlEnv, predicate=inspect.isfunction)
        if not member.startswith("_") and member not in ("reset", "get_reward")
    ]
    return [get_json_schema(getattr(probe, member)) for member in public]
