"""The run's base-rate probe (training.probe) as its first phase, before GRPO step 1.

It probes the checkpoint GRPO starts from (the warm start, or the base) once: the result is
kept in `ledgergym_probe.json` (and the episodes under `probe/NNNN/`), so a resumed run does not
pay for it again. Below `[probe] min_success` the run stops with one line unless `on_low =
"warn"` (the direct-GRPO ablation, which exists to measure exactly that).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path

from agent.rollout import RolloutConfig
from env.generation.generator import generate
from training import run_ledger
from training.art.trainable_policy import TrainableModelPolicy
from training.art.validation import RefusalsFailEpisodes
from training.data_order import DataPlan
from training.probe import ProbeResult, probe_config, probe_seeds, run_probe
from training.runs import RunConfig

PROBE_STATE_FILE = "ledgergym_probe.json"
PROBE_DIR = "probe"


class ProbeStopped(RuntimeError):
    """The probe found too few successes for GRPO to learn from: one line, nothing trained."""


async def ensure_probe(
    run: RunConfig,
    policy: TrainableModelPolicy,
    data: DataPlan,
    directory: Path,
    config: RolloutConfig,
    step: int,
    say: Callable[[str], None],
) -> ProbeResult | None:
    """Probes checkpoint `step` unless it was probed; raises ProbeStopped per `[probe]`."""
    section = run.probe
    if not section.enabled:
        return None
    result = _recorded(directory, step)
    if result is None:
        seeds = probe_seeds(data, section.scenarios, data.split)
        scenarios = [generate(data.split, seed) for seed in seeds]
        result = await run_probe(
            RefusalsFailEpisodes(policy),
            scenarios,
            k=section.k,
            run_dir=directory / PROBE_DIR / f"{step:04d}",
            config=probe_config(run, policy.name, section.k, len(scenarios)),
            rollout=config,
            concurrency=max(1, len(scenarios) * section.k),
            min_success=section.min_success,
        )
        record = {"step": step, "result": asdict(result), "at": run_ledger.now()}
        run_ledger.write_json(directory / PROBE_STATE_FILE, record)
        for line in result.lines():
            say(line)
    if result.success < section.min_success:
        message = (
            f"the probe of checkpoint {step} found grounded success {result.success:.1%} "
            f"(< [probe] min_success {section.min_success:g}): {result.verdict}"
        )
        if section.on_low == "stop":
            raise ProbeStopped(message + '; nothing was trained ([probe] on_low = "warn" goes on)')
        say(f'warning: {message}; going on ([probe] on_low = "warn")')
    return result


def _recorded(directory: Path, step: int) -> ProbeResult | None:
    path = directory / PROBE_STATE_FILE
    try:
        saved = json.loads(path.read_text(encoding="utf-8"))
        if saved.get("step") != step:
            return None
        fields = dict(saved["result"])
        fields["spread_at"] = {int(n): share for n, share in fields["spread_at"].items()}
        return ProbeResult(**fields)
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None  # none yet, or cut by a kill: probe again
