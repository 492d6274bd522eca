"""Scenario generation: what builds worlds. `generator.generate(split, seed)` is the one entry
point the rest of env/ may import (tests/test_layers.py); the stories, builders, background,
look-alikes, faults and complaints behind it, and their data (`data/`), are this room's own."""
