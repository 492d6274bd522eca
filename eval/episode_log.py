"""A run directory on disk: `episodes.jsonl` (append-only, one line per episode) and `run.json`.

Each line is written whole, flushed and fsync'd as its episode completes, so a killed run loses
at most the line being written; reading repairs that (a torn last line is dropped and the file
rewritten without it) and never drops a complete line. `run.json` remembers what the run is, so
resuming it with another model, split or k is refused. Tests: `pytest tests/eval`.
"""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import asdict
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from env.scenario import Scenario, reveal_truth

if TYPE_CHECKING:
    from agent.rollout import RolloutResult
    from eval.grader import EpisodeGrade

EPISODES = "episodes.jsonl"
RUN_CONFIG = "run.json"


class RunLogError(RuntimeError):
    """The run directory cannot be used as asked (one line for the user)."""


class EpisodeLine(BaseModel):
    """One finished episode as persisted; `error` lines count as failures."""

    model_config = ConfigDict(extra="forbid")

    scenario_id: str
    sample: int = Field(ge=0, description="index of the sample within its scenario, 0..k-1")
    split: str
    seed: int
    label: str = Field(description="the true root cause")
    difficulty: str
    policy: str
    episode_id: str | None = None
    success: bool
    error: str | None = Field(None, description="set when the rollout raised; then no grade")
    grade: dict[str, Any] | None = None
    reward_total: float | None = None
    reward_terms: dict[str, float] = Field(default_factory=dict)
    tool_calls: int = 0
    tool_errors: int = 0
    turns: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    retries: int = 0
    wall_s: float = 0.0

    @property
    def key(self) -> tuple[str, int]:
        return (self.scenario_id, self.sample)

    @property
    def flag(self) -> dict[str, bool]:
        """The grade's per-episode flags; an error line raised none."""
        grade = self.grade or {}
        return {
            "false_reversal": bool(grade.get("false_reversal")),
            "hallucinated_numbers": bool(grade.get("hallucinated_numbers")),
            "submitted": bool(grade.get("submitted")),
        }


def _card(scenario: Scenario, sample: int, policy: str) -> dict[str, Any]:
    return {
        "scenario_id": scenario.scenario_id,
        "sample": sample,
        "split": scenario.split,
        "seed": scenario.seed,
        "label": reveal_truth(scenario).label,
        "difficulty": scenario.difficulty,
        "policy": policy,
    }


def result_line(
    scenario: Scenario, sample: int, result: RolloutResult, grade: EpisodeGrade
) -> EpisodeLine:
    stats = result.stats
    return EpisodeLine(
        **_card(scenario, sample, str(result.trajectory.metadata.get("policy", ""))),
        episode_id=result.record.episode_id,
        success=grade.success,
        grade=asdict(grade),
        reward_total=result.reward.total,
        reward_terms=dict(result.reward.terms),
        tool_calls=result.record.tool_calls,
        tool_errors=sum(r.is_error for r in result.record.tool_log),
        turns=stats.turns,
        prompt_tokens=stats.prompt_tokens,
        completion_tokens=stats.completion_tokens,
        cost_usd=stats.cost_usd,
        retries=stats.retries,
        wall_s=round(result.wall_s, 3),
    )


def error_line(scenario: Scenario, sample: int, policy: str, error: BaseException) -> EpisodeLine:
    message = f"{type(error).__name__}: {error}"[:500]
    return EpisodeLine(**_card(scenario, sample, policy), success=False, error=message)


def read_episodes(path: Path) -> list[EpisodeLine]:
    """Every complete line; a torn last line (no newline, not JSON) is dropped from the file."""
    if not path.exists():
        return []
    data = path.read_bytes()
    *complete, tail = data.split(b"\n")
    lines = [_parse(raw, path, number) for number, raw in enumerate(complete, 1) if raw.strip()]
    if tail.strip():
        with contextlib.suppress(ValidationError):  # torn by a kill: the episode runs again
            lines.append(EpisodeLine.model_validate_json(tail))
        _rewrite(path, lines)
    return lines


def _parse(raw: bytes, path: Path, number: int) -> EpisodeLine:
    try:
        return EpisodeLine.model_validate_json(raw)
    except ValidationError as exc:
        problem = exc.errors()[0]["msg"]
        raise RunLogError(f"{path} line {number} is not an episode line ({problem})") from None


def _rewrite(path: Path, lines: list[EpisodeLine]) -> None:
    temporary = path.with_suffix(".jsonl.tmp")
    with temporary.open("w", encoding="utf-8") as out:
        out.writelines(line.model_dump_json() + "\n" for line in lines)
        out.flush()
        os.fsync(out.fileno())
    os.replace(temporary, path)


class EpisodeLog:
    """Append-only writer; one `append` is one durable line."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._file: IO[str] = path.open("a", encoding="utf-8")

    def append(self, line: EpisodeLine) -> None:
        self._file.write(line.model_dump_json() + "\n")
        self._file.flush()
        os.fsync(self._file.fileno())

    def close(self) -> None:
        self._file.close()


def check_run_config(run_dir: Path, config: dict[str, Any], *, force: bool = False) -> list[str]:
    """Refuses to mix runs of another model, split or k; returns warnings for changed hashes.

    A changed tool contract or generator only warns: during development the generator's source
    changes often, and refusing would strand half-done runs. The summary stamps the current hashes.
    """
    path = run_dir / RUN_CONFIG
    if not path.exists() or force:
        run_dir.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(config, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        return []
    try:
        old = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise RunLogError(f"cannot read {path}: {exc}; pass --force to replace it") from None
    changed = [
        f"{key} {old.get(key)!r} -> {config.get(key)!r}"
        for key in ("model", "split", "k")
        if old.get(key) != config.get(key)
    ]
    if changed:
        raise RunLogError(
            f"{run_dir} holds a different run ({'; '.join(changed)}); "
            "use another --out, or --force to add to it anyway"
        )
    return [
        f"warning: {run_dir} was started with {key} {old.get(key)}, this checkout has "
        f"{config.get(key)}; its results will mix both"
        for key in ("tool_contract", "generator")
        if old.get(key) != config.get(key)
    ]
