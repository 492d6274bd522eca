"""Scenario ids as the generator writes them, `<split>-<seed>` (e.g. `eval-100021`), read back;
an eval twin's is `eval-twin-<seed>`.

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
_TWIN_ID = re.compile(r"(?P<split>[a-z]+)-twin-(?P<seed>[0-9]{1,12})")  # `env.generation.twins`


class ScenarioIdError(ValueError):
    """An id that names no scenario; the message says what an id looks like."""


def parse_scenario_id(text: str) -> tuple[str, int]:
    """`"eval-100021"` -> `("eval", 100021)`, checked against the split's seed range; a twin,
    `"eval-twin-100021"`, -> `("eval-twins", 100021)` (a frozen split of twins)."""
    twin = _TWIN_ID.fullmatch(text)
    match = _ID.fullmatch(text)
    if twin is not None and f"{twin['split']}-twins" in SPLITS:
        split, seed = f"{twin['split']}-twins", int(twin["seed"])
    elif match is not None and match["split"] in SPLITS:
        split, seed = match["split"], int(match["seed"])
    else:
        raise ScenarioIdError(
            f"scenario id {text[:60]!r} is not <split>-<seed> with a split of "
            f"{', '.join(SPLITS)} (e.g. eval-100021, or eval-twin-100021 for a twin)"
        )
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
