"""Scenario ids as the generator writes them, `<split>-<seed>` (e.g. `eval-100021`), read back.

`env.generation.generator.generate(split, seed)` names every scenario `f"{split}-{seed}"`; the
split's seed range (`env.generation.splits`) decides which seeds exist, so `eval-5` is refused, not
generated.
"""

from __future__ import annotations

import re

from env.cli import UsageError
from env.generation.generator import generate
from env.generation.splits import SPLITS, split_assignment
from env.scenario import Scenario

_ID = re.compile(r"(?P<split>[a-z]+)-(?P<seed>[0-9]{1,12})")


class ScenarioIdError(ValueError):
    """An id that names no scenario; the message says what an id looks like."""


def parse_scenario_id(text: str) -> tuple[str, int]:
    """`"eval-100021"` -> `("eval", 100021)`, checked against the split's seed range."""
    match = _ID.fullmatch(text)
    if match is None or match["split"] not in SPLITS:
        raise ScenarioIdError(
            f"scenario id {text[:60]!r} is not <split>-<seed> with a split of "
            f"{', '.join(SPLITS)} (e.g. eval-100021)"
        )
    split, seed = match["split"], int(match["seed"])
    try:
        split_assignment(split, seed)
    except ValueError as exc:
        raise ScenarioIdError(f"scenario id {text!r}: {exc}") from None
    return split, seed


def scenario_from_id(text: str) -> Scenario:
    return generate(*parse_scenario_id(text))


def scenario_argument(text: str) -> Scenario:
    """A command line's `--scenario`: a bad id is the user's mistake, said without a traceback."""
    try:
        return scenario_from_id(text)
    except ScenarioIdError as exc:
        raise UsageError(str(exc)) from None
