"""The GPU smoke's checks that need no GPU: the template check, the token comparison, the report.

Pure functions over what `training.art.gpu_smoke_device` measures on the GPU; the command
(`training.art.gpu_smoke`) prints their report. Apart from both, so the device side and the
command import these and never each other. Tested on CPU: tests/train/test_gpu_smoke.py.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any, Literal

from openai.types.chat.chat_completion import Choice

from training.runs import RunConfig

TEMPLATE_KEYS = ("enable_thinking", "preserve_thinking")

Status = Literal["pass", "fail", "note"]


@dataclass(frozen=True)
class Check:
    name: str
    status: Status
    detail: str


@dataclass
class SmokeReport:
    checks: list[Check] = field(default_factory=list)
    figures: dict[str, str] = field(default_factory=dict)
    measured: dict[str, float | int | str] = field(default_factory=dict)  # for the record file

    @property
    def failed(self) -> bool:
        return any(check.status == "fail" for check in self.checks)

    def add(self, name: str, status: Status, detail: str) -> Check:
        check = Check(name, status, detail)
        self.checks.append(check)
        return check


@dataclass(frozen=True)
class TemplateCheck:
    mentions: tuple[str, ...]  # which of TEMPLATE_KEYS the template text names
    training: dict[str, Any]  # the kwargs ART renders training tokens with
    inference: dict[str, Any]  # the kwargs every vLLM request carries

    @property
    def differing(self) -> list[str]:
        keys = sorted(self.training.keys() | self.inference.keys())
        return [key for key in keys if self.training.get(key) != self.inference.get(key)]

    def as_check(self) -> Check:
        named = ", ".join(self.mentions) or "neither enable_thinking nor preserve_thinking"
        detail = (
            f"template names {named}; ART renders training with {self.training}, "
            f"vLLM requests carry {self.inference}"
        )
        if self.differing:
            keys = ", ".join(self.differing)
            return Check("template", "fail", f"{detail}; they differ in {keys}")
        return Check("template", "pass", detail)


def template_check(chat_template: object, run_kwargs: dict[str, Any] | None) -> TemplateCheck:
    """What ART forces (art/preprocessing/tokenize.py `_chat_template_kwargs`, called as is)."""
    from art.preprocessing.tokenize import _chat_template_kwargs

    text = chat_template if isinstance(chat_template, str) else ""
    tokenizer: Any = SimpleNamespace(chat_template=chat_template)
    training = _chat_template_kwargs(tokenizer, run_kwargs)
    mentions = tuple(key for key in TEMPLATE_KEYS if key in text)
    return TemplateCheck(mentions, training, dict(run_kwargs or {}))


@dataclass(frozen=True)
class Turn:
    """One assistant turn as vLLM saw it: the prompt's token ids and the sampled ones."""

    prompt: list[int]
    sampled: list[int]


@dataclass(frozen=True)
class TokenComparison:
    turns: int
    art_tokens: int
    mismatch: str | None  # None when every turn's prompt and sample sit where ART put them

    def as_check(self) -> Check:
        what = f"{self.turns} turns, {self.art_tokens} ART tokens"
        if self.mismatch is None:
            return Check("tokens", "pass", f"{what}: vLLM's prompts and samples match")
        return Check("tokens", "fail", f"{what}: {self.mismatch}")


def compare_tokens(
    turns: Sequence[Turn],
    art_token_ids: Sequence[int],
    choice_offsets: Sequence[int],
    decode: Any = None,
) -> TokenComparison:
    """Every turn's prompt must be a prefix of ART's tokens and its sample sit at its offset.

    `choice_offsets` are ART's positions of the trainable turns (TokenizedResult). `decode`,
    given, turns a few ids around the first difference into text for the report.
    """
    art = list(art_token_ids)
    if len(choice_offsets) != len(turns):
        return TokenComparison(
            len(turns),
            len(art),
            f"ART packed {len(choice_offsets)} trainable turns, vLLM sampled {len(turns)}",
        )
    for index, (turn, offset) in enumerate(zip(turns, choice_offsets, strict=True)):
        expected = turn.prompt + turn.sampled
        got = art[: len(expected)]
        if offset != len(turn.prompt):
            where = f"turn {index + 1}: ART's sample starts at {offset}"
            return TokenComparison(len(turns), len(art), f"{where}, vLLM's at {len(turn.prompt)}")
        if got != expected:
            at = _first_difference(expected, got)
            part = "prompt" if at < len(turn.prompt) else "sampled tokens"
            text = f"turn {index + 1}: first difference at token {at} ({part})"
            if decode is not None:
                text += (
                    f": vLLM {decode(expected[at : at + 8])!r} vs ART {decode(got[at : at + 8])!r}"
                )
            return TokenComparison(len(turns), len(art), text)
    return TokenComparison(len(turns), len(art), None)


def _first_difference(a: Sequence[int], b: Sequence[int]) -> int:
    for index, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return index
    return min(len(a), len(b))


def turn_prompts(items: Sequence[Any]) -> list[tuple[list[dict[str, Any]], Choice]]:
    """Each assistant `Choice` of a trajectory with the messages the rollout sent before it.

    The rollout sends every earlier Choice as `agent.messages.assistant_message(choice)` and
    every other item as it is, so the requests can be rebuilt from the trajectory alone.
    """
    from agent.messages import assistant_message

    turns: list[tuple[list[dict[str, Any]], Choice]] = []
    sent: list[dict[str, Any]] = []
    for item in items:
        if isinstance(item, Choice):
            turns.append((list(sent), item))
            sent.append(assistant_message(item))
        else:
            sent.append(dict(item))
    return turns


def sampled_token_ids(tokens: Sequence[str]) -> list[int]:
    """vLLM with return_tokens_as_token_ids writes each logprob token as 'token_id:N'."""
    ids = []
    for token in tokens:
        prefix, _, number = token.partition(":")
        if prefix != "token_id" or not number.isdigit():
            raise ValueError(f"logprob token {token!r} is not 'token_id:N'")
        ids.append(int(number))
    return ids


def smoke_record(run: RunConfig, report: SmokeReport) -> dict[str, Any]:
    """What `train.py --check` reads back: the smoke's measured times, memory and verdicts."""
    return {
        "run": run.name,
        "base_model": run.base_model,
        "load_in_4bit": run.model.load_in_4bit,
        "group_size": run.grpo.group_size,
        "max_turns": run.rollout.max_turns,
        "checks": {check.name: check.status for check in report.checks},
        "passed": not report.failed,
        "at": datetime.now(UTC).isoformat(timespec="seconds"),
        **report.measured,
    }


def parse_gpu_memory(nvidia_smi_csv: str) -> int:
    """MiB used on all GPUs, from `nvidia-smi --query-gpu=memory.used` (csv,noheader,nounits)."""
    values = [line.strip() for line in nvidia_smi_csv.splitlines() if line.strip()]
    try:
        return sum(int(float(value)) for value in values)
    except ValueError:
        raise ValueError(f"unexpected nvidia-smi output: {nvidia_smi_csv[:80]!r}") from None


def render_report(report: SmokeReport, title: str) -> str:
    width = max((len(check.name) for check in report.checks), default=8)
    lines = [title]
    lines += [f"  {c.status.upper():4}  {c.name:<{width}}  {c.detail}" for c in report.checks]
    lines += [f"  {name}: {value}" for name, value in report.figures.items()]
    failed = [check.name for check in report.checks if check.status == "fail"]
    lines.append(f"FAILED: {', '.join(failed)}" if failed else "all checks passed")
    return "\n".join(lines)


def gdn_gradient_check(returncode: int, stdout: str, stderr: str) -> Check:
    """The verdict of `python -m training.art.gdn_check --json`, run as a child process."""
    if returncode == 2:
        said = (stderr.strip().splitlines() or ["no reason given"])[-1]
        return Check("gdn", "fail", f"the GDN gradient check could not run: {said}")
    try:
        result = json.loads(stdout.strip().splitlines()[-1])
        errors, failed = dict(result["errors"]), list(result["failed"])
        fla = result["versions"]["fla-core"]
    except (IndexError, KeyError, TypeError, ValueError):
        tail = (stderr.strip().splitlines() or ["no output"])[-1][:200]
        return Check("gdn", "fail", f"the GDN gradient check ended with {returncode}: {tail}")
    figures = ", ".join(f"{name} {error:.1e}" for name, error in errors.items())
    if failed or returncode != 0:
        what = ", ".join(failed) or f"exit {returncode}"
        return Check(
            "gdn",
            "fail",
            f"fla-core {fla} gradients wrong on this GPU ({what} past tolerance: {figures}); "
            "pin fla-core 0.4.2 (constraints/gpu-py311.txt, fla issue #640)",
        )
    return Check("gdn", "pass", f"fla-core {fla} fwd+bwd within fla's tolerances ({figures})")
