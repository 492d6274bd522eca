"""A run directory on disk: `episodes.jsonl` (append-only, one line per episode) and `run.json`.

Each line is written whole, flushed and fsync'd as its episode completes, so a killed run loses
at most the line being written; reading repairs that (a torn last line is dropped and the file
rewritten without it) and never drops a complete line. `run.json` remembers what the run is, so
resuming it with another model, split or k is refused; it is written with the first episode
line, so a run that fails before any episode leaves none. One writer at a time: `RunLock`.
Readers see each (scenario, sample) once (the first line written for it). Tests: `pytest
tests/eval`.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
from dataclasses import asdict
from pathlib import Path
from types import TracebackType
from typing import IO, TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agent.messages import reply_digest, transcript
from env.scenario import Scenario, reveal_truth

if TYPE_CHECKING:
    from agent.rollout import RolloutResult
    from eval.grader import EpisodeGrade

EPISODES = "episodes.jsonl"
RUN_CONFIG = "run.json"
LOCK = ".run.lock"


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
    error: str | None = Field(None, description="why the episode failed ungraded; then no grade")
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
    end_reason: str | None = Field(None, description="agent.rollout.END_REASONS")
    finish_reasons: list[str] = Field(default_factory=list, description="per assistant turn")
    retry_causes: list[str] = Field(default_factory=list)
    peak_context_tokens: int = 0
    queue_s: float = Field(0.0, description="failed attempts and backoff pauses")
    generation_s: float = Field(0.0, description="requests that returned a turn")
    findings: dict[str, Any] | None = None
    transcript: list[dict[str, Any]] | None = None
    transcript_truncated: bool = False
    reply_digest: str | None = Field(None, description="fingerprint of the model's turns")
    tool_log: list[dict[str, Any]] | None = Field(
        None, description="every tool call as LedgerEnv logged it: name, arguments, result hash"
    )

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


def _episode_fields(result: RolloutResult, keep_transcript: bool) -> dict[str, Any]:
    stats, record = result.stats, result.record
    entries, cut = transcript(result.messages) if keep_transcript else (None, False)
    return {
        "episode_id": record.episode_id,
        "tool_calls": record.tool_calls,
        "tool_errors": sum(r.is_error for r in record.tool_log),
        "turns": stats.turns,
        "prompt_tokens": stats.prompt_tokens,
        "completion_tokens": stats.completion_tokens,
        "cost_usd": stats.cost_usd,
        "retries": stats.retries,
        "wall_s": round(result.wall_s, 3),
        "end_reason": stats.end_reason,
        "finish_reasons": list(stats.finish_reasons),
        "retry_causes": list(stats.retry_causes),
        "peak_context_tokens": stats.peak_context_tokens,
        "queue_s": round(stats.queue_s, 3),
        "generation_s": round(stats.generation_s, 3),
        "findings": record.findings.model_dump(mode="json") if record.findings else None,
        "transcript": entries,
        "transcript_truncated": cut,
        "reply_digest": reply_digest(result.messages),
        "tool_log": [
            {
                "name": call.name,
                "arguments": call.arguments,
                "result_sha256": hashlib.sha256(call.result.encode("utf-8")).hexdigest(),
                "is_error": call.is_error,
            }
            for call in record.tool_log
        ],
    }


def result_line(
    scenario: Scenario,
    sample: int,
    result: RolloutResult,
    grade: EpisodeGrade | None,
    *,
    keep_transcript: bool = True,
) -> EpisodeLine:
    """A graded episode; or, when the rollout ended on a server error, an error line (no grade)."""
    policy = str(result.trajectory.metadata.get("policy", ""))
    fields = _episode_fields(result, keep_transcript)
    if result.error is not None or grade is None:
        error = result.error or "the episode was not graded"
        return EpisodeLine(**_card(scenario, sample, policy), success=False, error=error, **fields)
    return EpisodeLine(
        **_card(scenario, sample, policy),
        success=grade.success,
        grade=asdict(grade),
        reward_total=result.reward.total,
        reward_terms=dict(result.reward.terms),
        **fields,
    )


def error_line(scenario: Scenario, sample: int, policy: str, error: BaseException) -> EpisodeLine:
    message = f"{type(error).__name__}: {error}"[:500]
    return EpisodeLine(
        **_card(scenario, sample, policy), success=False, error=message, end_reason="error"
    )


def distinct(lines: list[EpisodeLine]) -> list[EpisodeLine]:
    """The first line of each (scenario, sample), in file order."""
    seen: set[tuple[str, int]] = set()
    kept = []
    for line in lines:
        if line.key not in seen:
            seen.add(line.key)
            kept.append(line)
    return kept


def read_episodes(path: Path, *, repair: bool | None = None) -> list[EpisodeLine]:
    """Every complete line, one per (scenario, sample).

    A torn last line (no newline, not JSON) is dropped from the file when `repair` is True (the
    caller holds the run's lock) or None and no run is writing there now; a reader never
    rewrites a file under a live writer.
    """
    if not path.exists():
        return []
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise RunLogError(f"cannot read {path}: {exc.strerror or exc}") from None
    *complete, tail = data.split(b"\n")
    lines = [_parse(raw, path, number) for number, raw in enumerate(complete, 1) if raw.strip()]
    if tail.strip():
        with contextlib.suppress(ValidationError):  # torn by a kill: the episode runs again
            lines.append(EpisodeLine.model_validate_json(tail))
        if repair or (repair is None and not RunLock.held_elsewhere(path.parent)):
            _rewrite(path, lines)
    return distinct(lines)


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
    """Append-only writer; one `append` is one durable line.

    With `run_config`, `run.json` is written just before the first line (when absent, or
    always with `replace_config`), so a run that never records an episode leaves none.
    """

    def __init__(
        self,
        path: Path,
        run_config: dict[str, Any] | None = None,
        *,
        replace_config: bool = False,
    ) -> None:
        self.path = path
        self._config = run_config
        self._replace = replace_config
        self._file: IO[str] | None = None

    def append(self, line: EpisodeLine) -> None:
        if self._file is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            if self._config is not None:
                write_run_config(self.path.parent, self._config, replace=self._replace)
            self._file = self.path.open("a", encoding="utf-8")
        self._file.write(line.model_dump_json() + "\n")
        self._file.flush()
        os.fsync(self._file.fileno())

    def close(self) -> None:
        if self._file is not None:
            self._file.close()


def write_run_config(run_dir: Path, config: dict[str, Any], *, replace: bool = False) -> None:
    path = run_dir / RUN_CONFIG
    if path.exists() and not replace:
        return
    run_dir.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(config, indent=2, sort_keys=True) + "\n", encoding="utf-8")


def check_run_config(
    run_dir: Path, config: dict[str, Any], *, force: bool = False, write: bool = True
) -> list[str]:
    """Refuses to mix runs of another model, split or k; returns warnings for changed hashes.

    A changed tool contract or generator only warns: during development the generator's source
    changes often, and refusing would strand half-done runs. The summary stamps the current hashes.
    `write=False` only checks (eval/run.py writes run.json with its first episode line).
    """
    path = run_dir / RUN_CONFIG
    if not path.exists() or force:
        if write:
            write_run_config(run_dir, config, replace=True)
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
    if bool(old.get("twins")) != bool(config.get("twins")):  # runs before --twins have no key
        changed.append(f"twins {bool(old.get('twins'))} -> {bool(config.get('twins'))}")
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


def check_run_folder(run_dir: Path) -> None:
    """Refuses a folder that holds files but no run (a mistyped `--out .` would scatter run
    files among them); an absent or empty folder, or one with a run's episodes or run.json, is
    fine (the run resumes there or refuses in `check_run_config`)."""
    if not run_dir.is_dir() or (run_dir / EPISODES).exists() or (run_dir / RUN_CONFIG).exists():
        return
    try:
        found = sorted((p.name for p in run_dir.iterdir() if p.name != LOCK), key=_visible_first)
    except OSError as exc:
        raise RunLogError(f"cannot read --out {run_dir}: {exc.strerror or exc}") from None
    if found:
        shown = ", ".join(found[:3]) + (f" and {len(found) - 3} more" if len(found) > 3 else "")
        raise RunLogError(
            f"--out {run_dir} is not empty ({shown}) and holds no run; give a new or empty "
            "folder, or the folder of the run to resume"
        )


def _visible_first(name: str) -> tuple[bool, str]:
    return (name.startswith("."), name)


class RunLock:
    """An exclusive lock on a run directory (flock on `.run.lock`), so one run writes it at once.

    The directory is created if needed (a path that cannot be one is a one-line error); a
    directory this lock created and nothing else used is removed again on release.
    """

    def __init__(self, run_dir: Path) -> None:
        self.run_dir = run_dir
        self._file: IO[str] | None = None
        self._created = False

    def __enter__(self) -> RunLock:
        if self.run_dir.exists() and not self.run_dir.is_dir():
            raise RunLogError(f"--out {self.run_dir} is a file; give a directory for the run")
        try:
            self._created = not self.run_dir.exists()
            self.run_dir.mkdir(parents=True, exist_ok=True)
            handle = (self.run_dir / LOCK).open("a+", encoding="utf-8")
        except OSError as exc:
            raise RunLogError(
                f"cannot write the run directory {self.run_dir}: {exc.strerror or exc}"
            ) from None
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            owner = handle.read().strip() or "another process"
            handle.close()
            raise RunLogError(
                f"{self.run_dir} is being written by another run ({owner}); wait for it to "
                "finish or give another --out"
            ) from None
        handle.seek(0)
        handle.truncate()
        handle.write(f"pid {os.getpid()}\n")
        handle.flush()
        self._file = handle
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._file is None:
            return
        if self._created and [p.name for p in self.run_dir.iterdir()] == [LOCK]:
            with contextlib.suppress(OSError):
                (self.run_dir / LOCK).unlink()
                self.run_dir.rmdir()
        self._file.close()  # releases the flock
        self._file = None

    @staticmethod
    def held_elsewhere(run_dir: Path) -> bool:
        """True while some run holds the lock on `run_dir` (probing takes and drops it)."""
        try:
            with (run_dir / LOCK).open("r", encoding="utf-8") as handle:
                fcntl.flock(handle.fileno(), fcntl.LOCK_SH | fcntl.LOCK_NB)
        except FileNotFoundError:
            return False
        except OSError:
            return True
        return False
