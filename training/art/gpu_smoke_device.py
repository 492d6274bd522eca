"""The GPU side of `training.art.gpu_smoke`: LocalBackend, vLLM and one train step, for real.

Imported only after `training.art.backends.missing_requirements` found a CUDA GPU and the
`[train]` extra, and after `training.art.guard.import_art_for_training` (as in train.py); nothing
here runs on CPU. Each check is one phase with the smoke's deadline;
the first that fails ends the smoke (the later ones need it). The pure parts it relies on
(the template check, the token comparison, the report) live in `training.art.gpu_smoke_checks`.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Awaitable
from pathlib import Path
from typing import Any, TypeVar, cast

import art
import httpx
from art.preprocessing.tokenize import tokenize_trajectory_groups
from openai.types.chat import ChatCompletionMessageParam, ChatCompletionToolParam
from transformers import AutoTokenizer, PreTrainedTokenizerBase

from env.generation.generator import generate
from training.art import run_state
from training.art.backends import (
    build_model,
    gdn_kernel_path,
    internal_config,
    make_backend,
    server_config,
)
from training.art.backends import train_kwargs as run_train_kwargs
from training.art.fixes import prepare_groups_for_training
from training.art.gpu_smoke_checks import (
    Check,
    SmokeReport,
    Turn,
    compare_tokens,
    gdn_gradient_check,
    parse_gpu_memory,
    sampled_token_ids,
    template_check,
    turn_prompts,
)
from training.art.gpu_smoke_phases import (
    GRAD_NORM_RECORDS,
    PHASE_NAMES,
    grad_norm_note,
    installed_versions,
    keep_grad_norm,
    phase_deadline,
    skipped_on_rerun,
)
from training.art.guard import transformers_patch_kept
from training.art.loop import gather_groups, rollout_config
from training.art.smoke_environment import (
    gdn_modeling_module,
    kernel_check,
    precision_check,
    probe_gdn_fast_path,
)
from training.art.trainable_policy import TrainableModelPolicy
from training.data_order import plan_data
from training.runs import RunConfig

T = TypeVar("T")
GRADIENT_STEPS_KEY = "data/step_num_gradient_steps"  # art.metrics_taxonomy


class PhaseFailed(Exception):
    """A check failed; its line is already in the report."""


class GpuMemorySampler:
    """Peak MiB used on the GPUs by every process (Unsloth and vLLM run in children)."""

    def __init__(self, every_s: float = 1.0) -> None:
        self.peak_mib: int | None = None
        self.window_peak_mib: int | None = None  # since start_window(): one phase's peak
        self.error: str | None = None
        self._every_s = every_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def __enter__(self) -> GpuMemorySampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def start_window(self) -> None:
        self.window_peak_mib = None

    def _loop(self) -> None:
        command = ["nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader,nounits"]
        while not self._stop.is_set():
            try:
                out = subprocess.run(command, capture_output=True, text=True, timeout=10).stdout
                used = parse_gpu_memory(out)
            except (OSError, ValueError, subprocess.SubprocessError) as exc:
                self.error = str(exc)[:120]
                return
            self.peak_mib = max(self.peak_mib or 0, used)
            self.window_peak_mib = max(self.window_peak_mib or 0, used)
            self._stop.wait(self._every_s)


def run_smoke(run: RunConfig, *, timeout_s: float) -> SmokeReport:
    report = SmokeReport()
    started = time.monotonic()
    previous = run_state.read_smoke_record(run_state.model_dir(run))  # before the wipe
    with GpuMemorySampler() as memory:
        asyncio.run(_smoke(run, report, started + timeout_s, memory, previous))
    if memory.peak_mib is not None:
        report.figures["peak GPU memory (all processes)"] = f"{memory.peak_mib / 1024:.1f} GiB"
        report.measured["peak_gpu_mib"] = memory.peak_mib
    else:
        report.figures["peak GPU memory"] = f"not measured ({memory.error})"
    norms = [report.measured[key] for key in GRAD_NORM_RECORDS if key in report.measured]
    report.figures["loss/grad_norm"] = grad_norm_note(
        [float(norm) for norm in norms if isinstance(norm, int | float)], run.grpo.max_grad_norm
    )
    report.figures["total"] = f"{time.monotonic() - started:.0f} s"
    return report


async def _smoke(
    run: RunConfig,
    report: SmokeReport,
    deadline: float,
    memory: GpuMemorySampler,
    previous: dict[str, Any] | None,
) -> None:
    patch = "kept" if transformers_patch_kept() else "undone (it does not fit this transformers)"
    report.add("setup", "note", f"ART's transformers patch {patch}")
    shutil.rmtree(run_state.model_dir(run), ignore_errors=True)  # the smoke's own model only
    backends = [make_backend(run)]
    try:
        await _checks(run, report, deadline, backends, memory, previous)
    except PhaseFailed:
        pass
    finally:
        for backend in backends:
            await backend.close()


async def _phase(report: SmokeReport, name: str, work: Awaitable[T], deadline: float) -> T:
    """`work` within the phase's own budget and the smoke's deadline; a timeout or an
    exception becomes the check's failure. Its seconds go to the record."""
    if name in PHASE_NAMES:
        deadline = phase_deadline(name, deadline)
    started = time.monotonic()
    remaining = deadline - started
    try:
        if remaining <= 0:
            if asyncio.iscoroutine(work):
                work.close()  # never started: no "never awaited" warning
            raise TimeoutError
        value = await asyncio.wait_for(work, remaining)
        report.measured[f"phase_s/{name}"] = round(time.monotonic() - started, 1)
        return value
    except TimeoutError:
        report.add(
            name,
            "fail",
            f"timed out after {time.monotonic() - started:.0f} s (its own "
            "budget or the smoke's --timeout-s)",
        )
    except Exception as exc:  # the report names it; the smoke stops at the first failure
        first_line = (str(exc).strip().splitlines() or [""])[0][:300]
        report.add(name, "fail", f"{type(exc).__name__}: {first_line}")
    raise PhaseFailed(name)


async def _checks(
    run: RunConfig,
    report: SmokeReport,
    deadline: float,
    backends: list[art.Backend],
    memory: GpuMemorySampler,
    previous: dict[str, Any] | None,
) -> None:
    backend = backends[0]
    versions = json.dumps(installed_versions(), sort_keys=True)
    report.measured["versions"] = versions
    skipped = skipped_on_rerun(previous, versions)
    await _kernels(run, report, deadline)  # before register: minutes sooner when it fails
    if "gdn" in skipped:
        report.add("gdn", "pass", "skipped: the last smoke passed it with these versions")
    else:
        await _gdn(run, report, deadline)
    load = asyncio.to_thread(AutoTokenizer.from_pretrained, run.base_model)
    tokenizer: PreTrainedTokenizerBase = await _phase(report, "template", load, deadline)
    template = tokenizer.chat_template if isinstance(tokenizer.chat_template, str) else None
    model = build_model(run, template)  # the template decides the chat-template settings
    started = time.monotonic()
    register = model.register(backend, _openai_client_config=server_config(run))
    await _phase(report, "register", register, deadline)
    report.figures["register (vLLM + Unsloth start)"] = f"{time.monotonic() - started:.0f} s"
    report.add("register", "pass", f"{run.base_model} served as {model.get_inference_name()}")

    kwargs = internal_config(run, template).get("chat_template_kwargs")
    _add_or_stop(report, template_check(tokenizer.chat_template, kwargs).as_check())

    started = time.monotonic()
    groups = await _phase(report, "rollout", _rollouts(run, model), deadline)
    trajectories = [t for group in groups for t in group.trajectories]
    report.measured["rollout_s"] = round(time.monotonic() - started, 1)
    report.measured["rollouts"] = len(trajectories)
    calls = sum(
        len(choice.message.tool_calls or [])
        for t in trajectories
        for _, choice in turn_prompts(t.messages_and_choices)
    )
    rewards = [round(t.reward, 3) for t in trajectories]
    detail = f"{len(trajectories)} trajectories, rewards {rewards}, {calls} parsed tool calls"
    ok = bool(trajectories) and calls > 0
    _add_or_stop(report, Check("rollout", "pass" if ok else "fail", detail))

    pair = _pair(trajectories[0])
    tokens = _compare(run, model, tokenizer, trajectories[0], pair)
    _add_or_stop(report, await _phase(report, "tokens", tokens, deadline))

    prepared, prep = prepare_groups_for_training(groups)
    train_on = prepared if prep.groups_out else pair
    note = "" if prep.groups_out else " (rewards were equal: trained on a 1/0 pair of one rollout)"
    started = time.monotonic()
    train = backend.train(model, train_on, **run_train_kwargs(run))
    result = await _phase(report, "train", train, deadline)
    report.figures["train step (backend.train)"] = f"{time.monotonic() - started:.1f} s"
    report.measured["train_s"] = round(time.monotonic() - started, 1)
    steps = result.metrics.get(GRADIENT_STEPS_KEY)
    keep_grad_norm(report.measured, "train_grad_norm", result.metrics)
    checkpoint = run_state.model_dir(run) / "checkpoints" / f"{result.step:04d}"
    problem = run_state.adapter_problem(checkpoint, run.lora.target_modules)
    ok = result.step == 1 and bool(steps) and problem is None
    saved = "yes" if problem is None else f"no ({problem})"
    detail = f"checkpoint {result.step}, gradient steps {steps}, adapter saved: {saved}{note}"
    _add_or_stop(report, Check("train", "pass" if ok else "fail", detail))
    trained_on = _trained_on(checkpoint)
    report.measured["base_trained_on"] = trained_on or "?"
    _add_or_stop(report, precision_check(run.model.load_in_4bit, trained_on))

    sample = _sample(model, result.step, trajectories[0])
    reply = await _phase(report, "checkpoint", sample, deadline)
    report.add("checkpoint", "pass", f"{model.get_inference_name(result.step)} answered: {reply}")
    from training.art.gpu_smoke_long_device import long_run_phases

    await long_run_phases(
        run,
        report,
        deadline,
        backend,
        model,
        tokenizer,
        template,
        trajectories[0],
        _phase,
        _add_or_stop,
        memory,
        backends,
    )


async def _kernels(run: RunConfig, report: SmokeReport, deadline: float) -> None:
    """transformers' Gated-DeltaNet verdict in this environment; the slow path fails the smoke."""
    module = gdn_modeling_module(run.base_model)
    if module is None:
        report.add("kernels", "note", f"{run.base_model} has no Gated-DeltaNet layers")
        return
    probe = asyncio.to_thread(probe_gdn_fast_path, module)
    fast_path, messages = await _phase(report, "kernels", probe, deadline)
    check = kernel_check(fast_path, messages, gdn_kernel_path(run.base_model)[1])
    report.measured["kernel_path"] = {"pass": "fast", "fail": "slow"}.get(check.status, "unknown")
    _add_or_stop(report, check)


async def _gdn(run: RunConfig, report: SmokeReport, deadline: float) -> None:
    """fla's Gated-DeltaNet gradients against an fp32 reference, in a child process (its GPU
    memory goes back before Unsloth and vLLM start)."""
    if gdn_modeling_module(run.base_model) is None:
        return
    command = [sys.executable, "-m", "training.art.gdn_check", "--json"]
    child = await asyncio.create_subprocess_exec(
        *command, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    try:
        out, err = await _phase(report, "gdn", child.communicate(), deadline)
    finally:
        if child.returncode is None:
            child.kill()
    check = gdn_gradient_check(
        -1 if child.returncode is None else child.returncode, out.decode(), err.decode()
    )
    report.measured["gdn_check"] = check.status
    _add_or_stop(report, check)


def _trained_on(checkpoint: Path) -> str | None:
    """The base Unsloth loaded, as the adapter config names it (a 4-bit copy says so)."""
    try:
        config = json.loads((checkpoint / run_state.ADAPTER_CONFIG).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    base = config.get("base_model_name_or_path") if isinstance(config, dict) else None
    return base if isinstance(base, str) else None


def _add_or_stop(report: SmokeReport, check: Check) -> None:
    report.checks.append(check)
    if check.status == "fail":
        raise PhaseFailed(check.name)


async def _rollouts(run: RunConfig, model: art.TrainableModel) -> list[art.TrajectoryGroup]:
    data = plan_data(run)
    scenario = generate(data.split, data.batch(0)[0])
    policy = TrainableModelPolicy(model, run.rollout)
    return await gather_groups(
        policy, [scenario], run.grpo.group_size, rollout_config(run), "smoke rollout"
    )


def _pair(trajectory: art.Trajectory) -> list[art.TrajectoryGroup]:
    """One rollout twice, rewards 1 and 0: ART tokenises and trains it whatever the rewards."""
    copies = [trajectory.model_copy(update={"reward": reward}) for reward in (1.0, 0.0)]
    prepared, _ = prepare_groups_for_training([art.TrajectoryGroup(copies)])
    return prepared


async def _compare(
    run: RunConfig,
    model: art.TrainableModel,
    tokenizer: PreTrainedTokenizerBase,
    trajectory: art.Trajectory,
    pair: list[art.TrajectoryGroup],
) -> Check:
    """vLLM's tokens of every turn of `trajectory` against ART's packing of its repaired copy."""
    template = tokenizer.chat_template if isinstance(tokenizer.chat_template, str) else None
    config = internal_config(run, template)
    kwargs = config.get("chat_template_kwargs")
    turns = []
    root = (model.inference_base_url or "").rstrip("/").removesuffix("/v1")
    headers = {"Authorization": f"Bearer {model.inference_api_key}"}
    async with httpx.AsyncClient(timeout=120) as client:
        for messages, choice in turn_prompts(trajectory.messages_and_choices):
            body = {
                "model": model.get_inference_name(),
                "messages": messages,
                "tools": trajectory.tools,
                "add_generation_prompt": True,
                "chat_template_kwargs": kwargs or {},
            }
            answer = await client.post(f"{root}/tokenize", json=body, headers=headers)
            answer.raise_for_status()
            logprobs = choice.logprobs.content if choice.logprobs else None
            sampled = sampled_token_ids([lp.token for lp in logprobs or []])
            turns.append(Turn(prompt=list(answer.json()["tokens"]), sampled=sampled))
    if not pair:
        return Check("tokens", "fail", "ART's repair dropped the trajectory (training.art.fixes)")
    packed = next(
        iter(
            tokenize_trajectory_groups(
                tokenizer,
                pair,
                allow_training_without_logprobs=False,
                scale_rewards=True,
                shuffle_group_trajectories=False,
                chat_template_kwargs=kwargs,
                chat_template_tool_schema_format=config.get(
                    "chat_template_tool_schema_format", "default"
                ),
            )
        )
    )
    comparison = compare_tokens(turns, packed.token_ids, packed.choice_offsets, tokenizer.decode)
    return comparison.as_check()


async def _sample(model: art.TrainableModel, step: int, trajectory: art.Trajectory) -> str:
    messages, _ = turn_prompts(trajectory.messages_and_choices)[0]
    response = await model.openai_client().chat.completions.create(
        model=model.get_inference_name(step),
        messages=cast(list[ChatCompletionMessageParam], messages),
        tools=cast(list[ChatCompletionToolParam], trajectory.tools or []),
        max_tokens=128,
    )
    message = response.choices[0].message
    calls = [call.function.name for call in message.tool_calls or [] if call.type == "function"]
    text = (message.content or "").strip().replace("\n", " ")
    if not calls and not text:
        raise AssertionError("an empty reply")
    return f"tool calls {calls}" if calls else f"text {text[:60]!r}"
