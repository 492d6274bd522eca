"""Train worlds that rare generator paths once broke, found by the hypothesis property test
(`test_world_properties.py`) and by a scan of train's first 50,001 seeds: each now generates,
obeys every invariant, and its reference scores full marks with the grader's agreement.

- train-1005907: a tax rate that came back after a temporary one kept two rows in force;
- train-1020972, train-1024648: a currency fault whose victim's right rate sat at the top of the
  band found no stale day converting higher, and the generator raised;
- train-1003078, train-1007755, train-1010130: a trial's end splits a period; the stub alone was
  compared with whole months as if the period had finished (the check, not the world, was
  wrong).
"""

from __future__ import annotations

from collections.abc import Generator

import pytest

from checks.agreement import judge, play
from checks.validate import invariant_problems
from env.generation.generator import generate
from env.scenario import Scenario, ToolCall, reveal_truth

RARE = [1005907, 1020972, 1024648, 1003078, 1007755, 1010130]


def _steps(scenario: Scenario) -> Generator[ToolCall, str, None]:
    for step in reveal_truth(scenario).reference:
        _result = yield step  # the reference's calls; `play` sends each result back


@pytest.mark.parametrize("seed", RARE)
def test_a_rare_train_world_is_whole_and_its_reference_scores(seed: int) -> None:
    scenario = generate.__wrapped__("train", seed)
    assert invariant_problems(scenario) == []
    verdict = judge("reference", scenario, play(scenario, _steps(scenario)))
    assert verdict.binary == 1.0 and verdict.grounded_success
