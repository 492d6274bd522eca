"""doors.scenario_ids: an id names a scenario of a split, a twin's id its twin."""

from __future__ import annotations

import pytest

from doors.scenario_ids import ScenarioIdError, parse_scenario_id, scenario_from_id
from env.generation.generator import generate
from env.scenario import reveal_truth
from tests.env.test_twins import SEEDS


def test_a_twin_id_names_the_twin_of_that_eval_seed() -> None:
    seed = next(s for s in SEEDS if reveal_truth(generate("eval", s)).label != "no_error")
    assert parse_scenario_id(f"eval-twin-{seed}") == ("eval-twins", seed)
    twin = scenario_from_id(f"eval-twin-{seed}")
    assert twin.scenario_id == f"eval-twin-{seed}" and reveal_truth(twin).label == "no_error"
    assert parse_scenario_id(f"eval-{seed}") == ("eval", seed)


@pytest.mark.parametrize("text", ["eval-twin-5", "train-twin-1000000", "bogus"])
def test_ids_outside_a_split_are_refused(text: str) -> None:
    with pytest.raises(ScenarioIdError):
        parse_scenario_id(text)
