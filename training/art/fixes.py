"""Repairs applied to ART 0.5.18 trajectory groups just before `backend.train`.

ART re-renders every trajectory with the chat template and splices the sampled tokens of each
trainable `Choice` into it. Two traps make that differ from what the model saw, or crash:
intermediate tool calls are rendered twice, and tool-call arguments that are not a JSON object
string break the Qwen3.5 template. Everything here returns copies. In train.py:
    groups, stats = prepare_groups_for_training(groups)  # then backend.train(model, groups, ...)
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

import art
from art.trajectories import History
from art.types import MessageOrChoice, MessagesAndChoices
from openai.types.chat.chat_completion import Choice

from training.art.informative import has_outcome_spread

HistoryFix = Callable[[MessagesAndChoices], MessagesAndChoices]


@dataclass(frozen=True)
class SanitisedTrajectory:
    """Outcome of `sanitise_tool_call_arguments`; `trajectory` is None when it must be dropped."""

    trajectory: art.Trajectory | None
    repaired_calls: int = 0
    drop_reason: str | None = None


@dataclass(frozen=True)
class PrepStats:
    """Counts from one `prepare_groups_for_training` call; log `as_metrics()` every step."""

    groups_in: int
    groups_out: int
    zero_variance_groups: int
    empty_groups: int
    trajectories_in: int
    trajectories_out: int
    trajectories_sanitised: int
    trajectories_dropped: int
    intermediate_tool_calls_dropped: int

    @property
    def zero_variance_share(self) -> float:
        """Share of submitted groups whose rewards were all equal (no learning signal)."""
        return self.zero_variance_groups / self.groups_in if self.groups_in else 0.0

    def as_metrics(self, prefix: str = "data/prep_") -> dict[str, float]:
        # "data/" is one of ART's metric sections, so model.log keeps these keys unprefixed;
        # avoid "data/step_", which ART's metrics builder claims and accumulates.
        counts = {name: float(value) for name, value in vars(self).items()}
        return {f"{prefix}{name}": value for name, value in counts.items()} | {
            f"{prefix}zero_variance_share": self.zero_variance_share
        }


def is_trainable_choice(item: MessageOrChoice) -> bool:
    """ART trains a `Choice` only when it carries logprobs (preprocessing/tokenize.py:384-386)."""
    return isinstance(item, Choice) and item.logprobs is not None


def drop_intermediate_tool_calls(trajectory: art.Trajectory) -> art.Trajectory:
    """Copy of `trajectory` whose non-final trainable Choices have no `tool_calls` (fix (a)).

    Why this reproduces the inference tokens, in art/preprocessing/tokenize.py (0.5.18):
    - 392-402: each trainable turn is rendered as a placeholder token *plus its tool_calls*;
    - 464-467: the placeholder is replaced by the sampled tokens, which already contain the
      `<tool_call>` text, so the template's rendering of the same calls follows them: twice;
    - 485-488: when the token after the placeholder (here `<|im_end|>`) equals the last sampled
      token, the duplicate is popped. Without tool_calls that is exactly what happens, and the
      sequence becomes prompt + sampled tokens, turn after turn, as vLLM saw it;
    - 126-135: ART already strips tool_calls from the final trainable Choice, so it is left as is.
    Log the original trajectories; train on the copies.
    """
    return _map_histories(trajectory, _without_intermediate_tool_calls)


def sanitise_tool_call_arguments(trajectory: art.Trajectory) -> SanitisedTrajectory:
    """Make every tool call ART will render parse as a JSON object, or drop the trajectory.

    ART json.loads each rendered call's arguments and asserts a dict (tokenize.py:85-116, when
    the template iterates `tool_call.arguments|items`, as Qwen3.5's does); anything else raises
    inside `backend.train`. Replacing bad arguments with "{}" would make ART render a turn the
    model never saw, so the rules keep the trained tokens equal to what inference saw:
    - empty or null arguments become "{}": vLLM renders those as {} itself (its chat_utils
      `_postprocess_messages`), so the context is unchanged; a dict is dumped to its string;
    - anything else (invalid JSON, a JSON list or number, a non-function call) in a turn before
      the last trainable Choice drops the trajectory: vLLM json.loads the arguments of every
      assistant turn it is sent and rejects such a request, so the turns after it were sampled
      from some other rendering of it (whatever the rollout sent instead) than ART would build;
    - the last trainable Choice is skipped: ART strips its tool_calls (tokenize.py:126-135) and
      trains its sampled tokens as they are; later turns are never rendered at all.
    Run it before `drop_intermediate_tool_calls`, which hides the intermediate calls it checks.
    """
    tally = _ArgumentTally()
    try:
        fixed = _map_histories(trajectory, tally.fix_history)
    except _Unfaithful as error:
        return SanitisedTrajectory(trajectory=None, drop_reason=str(error))
    return SanitisedTrajectory(fixed, tally.repaired)


def prepare_groups_for_training(
    groups: list[art.TrajectoryGroup],
) -> tuple[list[art.TrajectoryGroup], PrepStats]:
    """Both fixes on copies, then drop groups left empty or whose outcomes tie, with counts.

    A group whose outcomes (rewards without the tool term, training.art.informative) are all
    equal carries no advantage worth a per-trajectory step (with λ = 0: equal rewards, which
    ART would tokenise and skip anyway); a step made only of them still advances the
    checkpoint counter. An empty result means the
    caller decides whether to skip the step. Dropping one trajectory moves its group's mean
    reward: the remaining members are still compared with each other, which GRPO tolerates.
    """
    kept: list[art.TrajectoryGroup] = []
    zero_variance = empty = sanitised = dropped = intermediate = 0
    for group in groups:
        survivors: list[art.Trajectory] = []
        for trajectory in group.trajectories:
            result = sanitise_tool_call_arguments(trajectory)  # before the calls are hidden
            if result.trajectory is None:
                dropped += 1
                continue
            sanitised += int(result.repaired_calls > 0)
            survivors.append(result.trajectory)
        if not survivors:
            empty += 1
        elif not has_outcome_spread(survivors):
            zero_variance += 1
        else:
            intermediate += sum(_count_intermediate_tool_calls(t) for t in survivors)
            fixed = [drop_intermediate_tool_calls(t) for t in survivors]
            kept.append(_group_like(group, fixed))
    stats = PrepStats(
        groups_in=len(groups),
        groups_out=len(kept),
        zero_variance_groups=zero_variance,
        empty_groups=empty,
        trajectories_in=sum(len(group.trajectories) for group in groups),
        trajectories_out=sum(len(group.trajectories) for group in kept),
        trajectories_sanitised=sanitised,
        trajectories_dropped=dropped,
        intermediate_tool_calls_dropped=intermediate,
    )
    return kept, stats


class _Unfaithful(ValueError):
    """A turn whose arguments inference could not have rendered as recorded."""


class _ArgumentTally:
    def __init__(self) -> None:
        self.repaired = 0

    def fix_history(self, items: MessagesAndChoices) -> MessagesAndChoices:
        trainable = [index for index, item in enumerate(items) if is_trainable_choice(item)]
        if not trainable:
            return list(items)
        fixed = list(items)
        for index, item in enumerate(items[: trainable[-1]]):
            fixed[index] = self._fix_item(item)
        return fixed

    def _fix_item(self, item: MessageOrChoice) -> MessageOrChoice:
        if isinstance(item, Choice):
            calls = [call.model_dump(mode="json") for call in item.message.tool_calls or []]
        else:
            message = cast(dict[str, Any], item)
            if message.get("role") != "assistant":
                return item
            calls = copy.deepcopy(list(message.get("tool_calls") or []))
        verdicts = [_repair_call(call) for call in calls]
        if all(verdict == "ok" for verdict in verdicts):
            return item
        if "bad" in verdicts:
            raise _Unfaithful(f"tool-call arguments inference cannot render: {calls}")
        self.repaired += verdicts.count("repaired")
        if isinstance(item, Choice):
            originals = item.message.tool_calls or []
            repaired = [
                type(old).model_validate(new) for old, new in zip(originals, calls, strict=True)
            ]
            message_copy = item.message.model_copy(update={"tool_calls": repaired})
            return item.model_copy(update={"message": message_copy})
        return cast(MessageOrChoice, {**cast(dict[str, Any], item), "tool_calls": calls})


def _repair_call(call: dict[str, Any]) -> str:
    """'ok', 'repaired' (fixed in place to what vLLM would render) or 'bad'."""
    function = call.get("function")
    if not isinstance(function, dict):
        return "bad"  # a custom (non-function) tool call has nothing ART can render
    arguments = function.get("arguments")
    if arguments is None or arguments == "":
        function["arguments"] = "{}"
        return "repaired"
    if isinstance(arguments, dict):
        function["arguments"] = json.dumps(arguments)
        return "repaired"
    if not isinstance(arguments, str):
        return "bad"
    try:
        parsed = json.loads(arguments)
    except json.JSONDecodeError:
        return "bad"
    return "ok" if isinstance(parsed, dict) else "bad"


def _without_intermediate_tool_calls(items: MessagesAndChoices) -> MessagesAndChoices:
    trainable = [index for index, item in enumerate(items) if is_trainable_choice(item)]
    intermediate = set(trainable[:-1])
    return [
        _without_tool_calls(cast(Choice, item)) if index in intermediate else item
        for index, item in enumerate(items)
    ]


def _without_tool_calls(choice: Choice) -> Choice:
    if not choice.message.tool_calls:
        return choice
    message = choice.message.model_copy(update={"tool_calls": None})
    return choice.model_copy(update={"message": message})


def _count_intermediate_tool_calls(trajectory: art.Trajectory) -> int:
    count = 0
    for items in [trajectory.messages_and_choices] + [
        history.messages_and_choices for history in trajectory.additional_histories
    ]:
        trainable = [item for item in items if is_trainable_choice(item)]
        count += sum(1 for item in trainable[:-1] if cast(Choice, item).message.tool_calls)
    return count


def _map_histories(trajectory: art.Trajectory, fix: HistoryFix) -> art.Trajectory:
    """A copy with `fix` applied to the main and every additional history.

    Untouched messages and Choices are shared with the original (nothing here mutates them);
    the containers a caller might mutate later (metrics, metadata, logs) are fresh.
    """
    histories = [
        History(messages_and_choices=fix(history.messages_and_choices), tools=history.tools)
        for history in trajectory.additional_histories
    ]
    return trajectory.model_copy(
        update={
            "messages_and_choices": fix(trajectory.messages_and_choices),
            "additional_histories": histories,
            "metrics": dict(trajectory.metrics),
            "metadata": dict(trajectory.metadata),
            "logs": list(trajectory.logs),
        }
    )


def _group_like(
    group: art.TrajectoryGroup, trajectories: list[art.Trajectory]
) -> art.TrajectoryGroup:
    fresh = art.TrajectoryGroup(
        trajectories,
        metadata=dict(group.metadata),
        metrics=dict(group.metrics),
        logs=list(group.logs),
    )
    fresh.exceptions = list(group.exceptions)  # already serialised; the constructor wants raw ones
    return fresh
