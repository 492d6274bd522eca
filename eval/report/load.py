"""What the report reads: eval run directories and training metrics files, checked on the way in.

A run directory is what `eval/run.py` writes (`episodes.jsonl`, `run.json`). Training metrics
are either ART's `history.jsonl` (train.py's GPU path; rows keyed `train/…`, `val/…`, `reward/…`,
`data/…`) or TRL's `metrics.jsonl` (`training.trl.report.StepRecorder`); both become the same
`TrainStep` rows. Anything unreadable raises `ReportInputError` with one line for the user.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from eval.episode_log import EPISODES, RUN_CONFIG, RunLogError, read_episodes
from eval.episode_log import EpisodeLine as EpisodeLine  # re-exported for the report's modules
from eval.report.diversity import row_diversity
from eval.summary import SUMMARY_JSON

ART_HISTORY = "history.jsonl"
STAMPED = ("ledgergym_version", "commit")  # from summary.json's stamp into the run's config
TRL_METRICS = "metrics.jsonl"
# ART's rollout metrics that are reward terms ("reward/<term>"); "reward/total" is the sum
_ART_TERM_PREFIX = "reward/"


class ReportInputError(RuntimeError):
    """An input the report cannot use (one line for the user)."""


@dataclass(frozen=True)
class RunData:
    """One eval run: its name in the report, where it came from and its episode lines."""

    name: str
    path: Path
    config: dict[str, Any]
    lines: list[EpisodeLine]

    @property
    def split(self) -> str:
        return str(self.config.get("split") or (self.lines[0].split if self.lines else "?"))

    @property
    def k(self) -> int:
        """The run's planned samples per scenario (run.json), else the most any scenario has."""
        planned = self.config.get("k")
        if isinstance(planned, int) and planned > 0:
            return planned
        counts: dict[str, int] = {}
        for line in self.lines:
            counts[line.scenario_id] = counts.get(line.scenario_id, 0) + 1
        return max(counts.values(), default=1)


@dataclass(frozen=True)
class TrainStep:
    """One training step as the report plots it; None where the source did not log it."""

    step: int
    reward: float | None = None
    terms: dict[str, float] = field(default_factory=dict)
    zero_variance_share: float | None = None
    tool_calls: float | None = None
    completion_tokens: float | None = None
    prompt_tokens: float | None = None
    tool_sequence_diversity: float | None = None  # eval.report.diversity


@dataclass(frozen=True)
class ValPoint:
    """Validation success at a checkpoint: pass^1 over `episodes` graded episodes."""

    step: int
    pass1: float
    episodes: int


@dataclass(frozen=True)
class TrainMetrics:
    name: str
    path: Path
    source: str  # "art" or "trl"
    steps: list[TrainStep]
    validation: list[ValPoint]


def load_run(path: Path, name: str | None = None) -> RunData:
    """A run directory (or its episodes.jsonl); refuses one without any episode line."""
    directory = path.parent if path.is_file() else path
    episodes = directory / EPISODES
    if not episodes.is_file():
        raise ReportInputError(f"{path}: no {EPISODES} here; pass an eval/run.py --out directory")
    try:
        lines = read_episodes(episodes)
    except RunLogError as exc:
        raise ReportInputError(str(exc)) from None
    if not lines:
        raise ReportInputError(f"{episodes} holds no episode line")
    config: dict[str, Any] = {}
    config_path = directory / RUN_CONFIG
    if config_path.is_file():
        try:
            config = dict(json.loads(config_path.read_text(encoding="utf-8")))
        except (OSError, ValueError) as exc:
            raise ReportInputError(f"cannot read {config_path}: {exc}") from None
    label = name or str(config.get("model") or lines[0].policy or directory.name)
    return RunData(name=label, path=directory, config=_stamped(directory, config), lines=lines)


def _stamped(directory: Path, config: dict[str, Any]) -> dict[str, Any]:
    """run.json plus what summary.json's stamp adds about the code that ran (its version and
    commit: run.json is written before them); an unreadable summary adds nothing."""
    try:
        stamp = json.loads((directory / SUMMARY_JSON).read_text(encoding="utf-8"))["stamp"]
        added = {key: stamp[key] for key in STAMPED if key in stamp}
    except (OSError, ValueError, KeyError, TypeError):
        return config
    return {**added, **config}


def unique_names(runs: list[RunData]) -> list[RunData]:
    """Two runs of the same model get their directory name added, so every name is unique."""
    seen: dict[str, int] = {}
    for run in runs:
        seen[run.name] = seen.get(run.name, 0) + 1
    return [
        RunData(f"{run.name} ({run.path.name})", run.path, run.config, run.lines)
        if seen[run.name] > 1
        else run
        for run in runs
    ]


def _json_rows(path: Path) -> list[dict[str, Any]]:
    rows = []
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ReportInputError(f"cannot read {path}: {exc}") from None
    for number, raw in enumerate(text.splitlines(), 1):
        if not raw.strip():
            continue
        try:
            row = json.loads(raw)
        except json.JSONDecodeError:
            if number == len(text.splitlines()):
                continue  # a last line cut by a kill mid-write
            raise ReportInputError(f"{path} line {number} is not JSON") from None
        if isinstance(row, dict):
            rows.append(row)
    return rows


def load_train_metrics(path: Path) -> TrainMetrics:
    """ART's history.jsonl or TRL's metrics.jsonl, or a directory holding one of them."""
    file = path
    if path.is_dir():
        candidates = [path / ART_HISTORY, path / TRL_METRICS]
        found = [candidate for candidate in candidates if candidate.is_file()]
        if not found:
            raise ReportInputError(f"{path}: neither {ART_HISTORY} nor {TRL_METRICS} here")
        file = found[0]
    if not file.is_file():
        raise ReportInputError(f"{path}: no such metrics file")
    rows = _json_rows(file)
    name = file.parent.name or file.stem
    try:
        if any("episodes" in row and "reward_mean" in row for row in rows):
            return TrainMetrics(name, file, "trl", _trl_steps(rows), [])
        if any(_is_train_row(row) or "val/pass1" in row for row in rows):
            return TrainMetrics(name, file, "art", _art_steps(rows), _art_validation(rows))
    except (TypeError, ValueError, AttributeError) as exc:
        raise ReportInputError(f"{file}: a row does not read as metrics ({exc})") from None
    raise ReportInputError(f"{file}: neither ART history rows nor TRL metrics rows")


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _trl_steps(rows: list[dict[str, Any]]) -> list[TrainStep]:
    steps: list[TrainStep] = []
    for row in rows:
        trl = row.get("trl") or {}
        steps.append(
            TrainStep(
                step=int(row.get("step", len(steps) + 1)),
                reward=_number(row.get("reward_mean")),
                terms={str(k): float(v) for k, v in (row.get("terms") or {}).items()},
                zero_variance_share=_number(row.get("zero_variance_group_share")),
                tool_calls=_number(row.get("tool_calls_mean")),
                completion_tokens=_number(trl.get("completions/mean_length")),
                tool_sequence_diversity=row_diversity(row),
            )
        )
    return steps


def _is_train_row(row: dict[str, Any]) -> bool:
    return "train/reward" in row and "step" in row


def _art_steps(rows: list[dict[str, Any]]) -> list[TrainStep]:
    steps = []
    for row in filter(_is_train_row, rows):
        terms = {
            key[len(_ART_TERM_PREFIX) :]: float(value)
            for key, value in row.items()
            if key.startswith(_ART_TERM_PREFIX)
            and key != "reward/total"
            and _number(value) is not None
        }
        steps.append(
            TrainStep(
                step=int(row["step"]),
                reward=_number(row.get("train/reward")),
                terms=terms,
                zero_variance_share=_number(row.get("data/prep_zero_variance_share")),
                tool_calls=_number(row.get("train/tool_calls")),
                # per-episode totals; ART's gather overwrites `completion_tokens` with a
                # per-turn mean, so older logs fall back to it only when nothing else exists
                completion_tokens=_number(
                    row.get("train/episode_completion_tokens", row.get("train/completion_tokens"))
                ),
                prompt_tokens=_number(
                    row.get("train/episode_prompt_tokens", row.get("train/prompt_tokens"))
                ),
                tool_sequence_diversity=row_diversity(row),
            )
        )
    return steps


def _art_validation(rows: list[dict[str, Any]]) -> list[ValPoint]:
    """`val/pass1` rows (training.art.validation); the episode count is ART's trajectories count."""
    points: dict[int, ValPoint] = {}
    for row in rows:
        pass1 = _number(row.get("val/pass1"))
        if pass1 is None or "step" not in row:
            continue
        # a failed rollout counts as a failure in val/pass1 but is no trajectory
        episodes = (_number(row.get("data/step_num_trajectories")) or 0.0) + (
            _number(row.get("val/failed_rollouts")) or 0.0
        )
        points[int(row["step"])] = ValPoint(int(row["step"]), pass1, int(episodes))
    return [points[step] for step in sorted(points)]
