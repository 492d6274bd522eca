"""The GPU smoke's long-run phases, for real: a near-limit row, equal rewards, resume after a cut
write, validation, pruning and 64 concurrent rollouts (training.art.gpu_smoke_phases has their
table and verdicts). GPU side only: imported by training.art.gpu_smoke_device after its checks.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any, cast

import art
from openai.types.chat.chat_completion import Choice, ChoiceLogprobs
from openai.types.chat.chat_completion_message import ChatCompletionMessage
from openai.types.chat.chat_completion_token_logprob import ChatCompletionTokenLogprob
from transformers import PreTrainedTokenizerBase

from env.generation.generator import generate
from training.art import run_state
from training.art.art_files import STATE_FILE, repair_art_files
from training.art.backends import build_model, make_backend, server_config, train_kwargs
from training.art.fixes import prepare_groups_for_training
from training.art.gpu_smoke_checks import Check, SmokeReport
from training.art.gpu_smoke_phases import (
    CONCURRENT_ROLLOUTS,
    concurrency_check,
    equal_rewards_check,
    keep_grad_norm,
    long_episode_messages,
    long_row_check,
    pruning_check,
    resume_check,
)
from training.art.loop import gather_groups, prune_checkpoints, rollout_config
from training.art.trainable_policy import TrainableModelPolicy
from training.art.validation import validate, validation_scenarios
from training.data_order import plan_data
from training.runs import RunConfig

Phase = Callable[[SmokeReport, str, Awaitable[Any], float], Awaitable[Any]]
Stop = Callable[[SmokeReport, Check], None]
GRADIENT_STEPS_KEY = "data/step_num_gradient_steps"


async def long_run_phases(
    run: RunConfig,
    report: SmokeReport,
    deadline: float,
    backend: art.Backend,
    model: art.TrainableModel,
    tokenizer: PreTrainedTokenizerBase,
    template: str | None,
    trajectory: art.Trajectory,
    phase: Phase,
    stop: Stop,
    memory: Any,
    backends: list[art.Backend],
) -> None:
    """Every long-run phase in order; resume's new backend is appended to `backends` (the
    caller closes them all)."""
    kwargs = train_kwargs(run)
    memory.start_window()
    started = time.monotonic()
    rows, tokens = _long_rows(run, tokenizer)
    result = await phase(report, "long-row", backend.train(model, rows, **kwargs), deadline)
    seconds = time.monotonic() - started
    report.measured["long_row_train_s"] = round(seconds, 1)
    report.measured["long_row_tokens"] = tokens
    keep_grad_norm(report.measured, "long_row_grad_norm", result.metrics)
    peak = None
    if memory.window_peak_mib is not None:
        peak = memory.window_peak_mib / 1024
        report.measured["long_row_peak_gpu_mib"] = memory.window_peak_mib
        report.figures["long-row peak GPU memory"] = f"{peak:.1f} GiB"
    trained = bool(result.metrics.get(GRADIENT_STEPS_KEY))
    stop(report, long_row_check(tokens, run.grpo.max_seq_length, trained, seconds, peak))

    before = await model.get_step()
    same = [trajectory.model_copy(update={"reward": 0.5}) for _ in range(2)]
    groups = [art.TrajectoryGroup(same)]
    prepared, prep = prepare_groups_for_training(groups)
    result = await phase(
        report, "equal-rewards", backend.train(model, prepared, **kwargs), deadline
    )
    metrics = result.metrics | prep.as_metrics()
    await model.log(groups, metrics=metrics, step=result.step, split="train")
    directory = run_state.model_dir(run)
    logged = any(row.get("step") == result.step for row in run_state.read_history(directory))
    stop(report, equal_rewards_check(before, result.step, prep.zero_variance_groups, logged))

    backend, model, check = await phase(
        report, "resume", _resume(run, backend, template, backends), deadline
    )
    stop(report, check)
    policy = TrainableModelPolicy(model, run.rollout)
    step = await model.get_step()
    small = run.model_copy(
        update={"validation": run.validation.model_copy(update={"limit": 2, "k": 1})}
    )
    work = validate(model, policy, validation_scenarios(small), small, rollout_config(run), step)
    validated = await phase(report, "validation", work, deadline)
    ok = run_state.PASS1_KEY in (
        run_state.latest_validation(run_state.read_history(directory)) or {}
    )
    detail = f"pass^1 {validated.pass1:.2f} on {validated.scenarios} scenarios at step {step}"
    stop(report, Check("validation", "pass" if ok else "fail", detail))

    kept_before = run_state.checkpoint_steps(directory)
    notes: list[str] = []
    await phase(report, "pruning", prune_checkpoints(model, directory, notes.append), deadline)
    best = _best_validated(run_state.read_history(directory))
    stop(report, pruning_check(kept_before, run_state.checkpoint_steps(directory), best))

    started = time.monotonic()
    groups = await phase(report, "concurrency", _concurrent(run, policy), deadline)
    seconds = time.monotonic() - started
    done = sum(len(group.trajectories) for group in groups)
    failed = sum(len(group.exceptions) for group in groups)
    report.measured["concurrent_rollouts"] = done
    report.measured["concurrent_rollout_s"] = round(seconds, 1)
    stop(report, concurrency_check(done, failed, seconds))


def _long_rows(
    run: RunConfig, tokenizer: PreTrainedTokenizerBase
) -> tuple[list[art.TrajectoryGroup], int]:
    """Two copies (rewards 1, 0) of a synthetic episode at 90% of max_seq_length."""
    messages = long_episode_messages(tokenizer, run.grpo.max_seq_length)
    prompt = tokenizer.apply_chat_template(
        messages,
        add_generation_prompt=True,
        tokenize=True,
        return_dict=False,
        enable_thinking=False,
    )
    eos = tokenizer.eos_token_id
    sampled = [*tokenizer.encode("The seat add-on was billed twice.", add_special_tokens=False)]
    sampled += [eos] if isinstance(eos, int) else []
    choice = Choice(
        index=0,
        finish_reason="stop",
        message=ChatCompletionMessage(
            role="assistant", content="The seat add-on was billed twice."
        ),
        logprobs=ChoiceLogprobs(
            content=[
                ChatCompletionTokenLogprob(
                    token=f"token_id:{i}", logprob=-1.0, bytes=None, top_logprobs=[]
                )
                for i in sampled
            ]
        ),
    )
    copies = [
        art.Trajectory(messages_and_choices=[*messages, choice], reward=reward)
        for reward in (1.0, 0.0)
    ]
    return [art.TrajectoryGroup(copies)], len(cast(list[int], prompt)) + len(sampled)


async def _resume(
    run: RunConfig, backend: art.Backend, template: str | None, backends: list[art.Backend]
) -> tuple[art.Backend, art.TrainableModel, Check]:
    """A kill during model.log (state.json and a history row cut), then a restart."""
    directory = run_state.model_dir(run)
    data = plan_data(run)
    steps = run_state.checkpoint_steps(directory)
    before = steps[-1] if steps else 0
    expected = data.batch(before)
    state = directory / STATE_FILE
    if state.is_file():
        state.write_bytes(state.read_bytes()[: max(state.stat().st_size // 2, 1)])
    with (directory / run_state.HISTORY_FILE).open("ab") as handle:
        handle.write(b'{"step": 99, "train/rew')
    await backend.close()
    repairs = repair_art_files(directory, run.lora.target_modules)
    backend = make_backend(run)
    backends.append(backend)
    model = build_model(run, template)
    await model.register(backend, _openai_client_config=server_config(run))
    after = await model.get_step()
    taken = plan_data(run).batch(after)
    return backend, model, resume_check(before, after, expected, taken, repairs)


def _best_validated(history: list[dict[str, Any]]) -> int | None:
    rows = [row for row in history if run_state.PASS1_KEY in row and "step" in row]
    return int(max(rows, key=lambda row: row[run_state.PASS1_KEY])["step"]) if rows else None


async def _concurrent(run: RunConfig, policy: TrainableModelPolicy) -> list[art.TrajectoryGroup]:
    data = plan_data(run)
    seeds = [seed for phase in data.phases for seed in phase.seeds][: CONCURRENT_ROLLOUTS // 8]
    scenarios = [generate(data.split, seed) for seed in seeds]
    return await gather_groups(policy, scenarios, 8, rollout_config(run), "smoke concurrency")
