"""Counterfactual twins: the same world with the fault's wrong input set right.

`twin(split, seed)` is the scenario of (split, seed) after the billing engine re-bills the
fault's invoices from their correct inputs (an invoice that should not exist is gone, a second
charge is gone); the customer, story, background, look-alikes and complaint are unchanged, and
the label is `no_error`. The world is built with the same draws of the same rng and set right
only at the end (`env.generation.twin_repair`), so the two databases differ in the fault's
records alone. A `no_error` scenario is its own twin. `moved_twin` moves the fault to another
invoice where the class allows. The frozen split `eval-twins` holds the twin of each eval seed.
Run: `python -m checks.validate --split eval-twins`.
"""

from __future__ import annotations

from env.generation.generator import build, generate
from env.scenario import Scenario


def twin(split: str, seed: int) -> Scenario:
    """The `no_error` twin of (split, seed): scenario_id f"{split}-twin-{seed}" (a `no_error`
    scenario is returned as it is)."""
    original = generate(split, seed)
    if original._truth.label == "no_error":
        return original
    scenario = build(split, seed, twin=True)
    assert scenario is not None
    return scenario


def moved_twin(split: str, seed: int) -> Scenario | None:
    """The same fault on a different invoice of the same world, or None where the class does
    not allow it (see `env.generation.twin_moves`)."""
    return build(split, seed, moved=True)
