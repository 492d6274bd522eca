"""One-shot GPU smoke test of the ART path: the first command to run on a new GPU machine.

    python -m training.gpu_smoke --run binary-01 [--base-model Qwen/Qwen3.5-4B]

It trains a throw-away copy of the run (`<run>-smoke`, under --path, deleted first) and checks,
in order, stopping at the first failure:
  kernels    transformers' Gated-DeltaNet layers (Qwen3.5, Qwen3-Next) take the fast path:
             flash-linear-attention and causal-conv1d, not the pure-torch fallback
  register   LocalBackend starts (Unsloth + ART's vLLM) and the model registers
  template   the chat template: whether it mentions preserve_thinking / enable_thinking, what
             ART will force when it renders training tokens, and whether vLLM requests get
             the same chat-template settings
  rollout    one group of 2 rollouts on the run's first training scenario; at least one
             assistant turn must carry a tool_call that vLLM's tool parser parsed
  tokens     for one trajectory: vLLM's prompt token ids of every turn (its /tokenize with the
             same messages, tools and settings) plus the sampled ids, against the tokens ART
             packs for training; they must agree position for position
  train      one backend.train step (a gradient step even when the group's rewards are equal)
  precision  the base Unsloth trained on is the run's `[model] load_in_4bit` (bf16 or 4-bit)
  checkpoint vLLM serves `<run>-smoke@1` and samples from it
and prints peak GPU memory (nvidia-smi, all processes) and the train step's time; the figures
land in `<path>/<project>/models/<run>-smoke/ledgergym_smoke.json`, whose step time
`train.py --check` uses for its budget. Budget: --timeout-s (600 s); the very first run on a
machine also builds ART's vLLM runtime and downloads the model: pass --timeout-s 1800.
Exit 0: every check passed; 1: a check failed (the report says which); 2: this machine cannot
run it (no CUDA GPU, missing packages) or a bad argument, in one line.

Everything that can be checked without a GPU (arguments, the template check, the token
comparison, nvidia-smi parsing, the report) is a pure function in this module, tested on CPU;
the GPU part is `training.gpu_smoke_device`, imported only once the machine has passed
`training.backends.missing_requirements`.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Literal

from openai.types.chat.chat_completion import Choice

from training import run_state
from training.runs import RunConfig, RunConfigError, load_run

EXIT_FAILED = 1
EXIT_UNAVAILABLE = 2
SMOKE_SUFFIX = run_state.SMOKE_SUFFIX
# one group of this many rollouts, each cut short: enough to see tool calls, not a whole episode
SMOKE_GROUP_SIZE = 2
SMOKE_MAX_TURNS = 6
SMOKE_MAX_TOKENS = 1024
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


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    doc = __doc__ or ""
    parser = argparse.ArgumentParser(
        prog="python -m training.gpu_smoke",
        description=doc.split("\n\nEverything")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--run", required=True, help="a run in runs/ (its LoRA, loss, rollout)")
    parser.add_argument("--base-model", help="another base model than the run's (a HF id)")
    parser.add_argument(
        "--path", type=Path, default=Path(run_state.SMOKE_PATH), help="where the smoke model lives"
    )
    parser.add_argument("--timeout-s", type=float, default=600.0, help="the whole smoke's budget")
    args = parser.parse_args(argv)
    if args.timeout_s <= 0:
        parser.error("--timeout-s must be positive")
    return args


def smoke_run(run: RunConfig, base_model: str | None, path: Path) -> RunConfig:
    """The run's settings under another name and path: the smoke never touches the run itself."""
    if run.trainer != "art":
        raise RunConfigError(f"run {run.name} uses trainer {run.trainer!r}; the smoke checks 'art'")
    if run.backend.kind != "local":
        raise RunConfigError(
            f"run {run.name} uses backend {run.backend.kind!r}; the smoke checks 'local' "
            "(one GPU on this machine)"
        )
    backend = run.backend.model_copy(update={"path": str(path), "wandb": False})
    rollout = run.rollout.model_copy(
        update={
            "max_turns": min(run.rollout.max_turns, SMOKE_MAX_TURNS),
            "max_tokens": min(run.rollout.max_tokens, SMOKE_MAX_TOKENS),
        }
    )
    grpo = run.grpo.model_copy(update={"group_size": SMOKE_GROUP_SIZE, "groups_per_step": 1})
    return run.model_copy(
        update={
            "name": run.name + SMOKE_SUFFIX,
            "base_model": base_model or run.base_model,
            "backend": backend,
            "rollout": rollout,
            "grpo": grpo,
            "cold_start": None,
        }
    )


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


def fail(message: object) -> int:
    print(f"error: {message}", file=sys.stderr)
    return EXIT_UNAVAILABLE


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        run = smoke_run(load_run(args.run), args.base_model, args.path)
    except RunConfigError as exc:
        return fail(exc)
    from training.backends import keep_wandb_off, missing_requirements

    missing = missing_requirements(run)
    if missing:
        return fail(f"the GPU smoke cannot run here: {missing}")
    keep_wandb_off(run)  # the smoke's copy has [backend] wandb = false
    from agent.art_guard import import_art_for_training

    import_art_for_training()  # before anything imports art, as train.py does
    from training.gpu_smoke_device import run_smoke  # the GPU side: ART, torch, vLLM

    report = run_smoke(run, timeout_s=args.timeout_s)
    print(render_report(report, f"GPU smoke of {args.run} ({run.base_model}) as {run.name}"))
    record = run_state.write_smoke_record(run_state.model_dir(run), smoke_record(run, report))
    print(f"figures saved to {record} (train.py --check reads the step time)")
    return EXIT_FAILED if report.failed else 0


if __name__ == "__main__":
    sys.exit(main())
