"""Version hashes stamped on every rollout and report: which tool contract, which generator.

The tool-contract hash covers the nine tools' OpenAI specs; the generator hash covers the
source and data files that decide what a (split, seed) produces. Both are content hashes.
"""

from __future__ import annotations

import hashlib
import json
from functools import cache
from pathlib import Path

from env.generation.generator import GENERATOR_VERSION
from env.tool_specs import TOOL_CONTRACT_VERSION, openai_tools

_ENV_DIR = Path(__file__).resolve().parent


@cache
def tool_contract_hash() -> str:
    # the schemas and the version: an additive result field moves the hash too
    contract = {"version": TOOL_CONTRACT_VERSION, "tools": openai_tools()}
    text = json.dumps(contract, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:12]


# what decides the bytes of a (split, seed): the engine and generation rooms whole (builders,
# faults, look-alikes, their data) and the two types they fill, the scenario and the labels
_ROOMS = ("engine", "generation")
_SHARED = ("labels.py", "scenario.py")


def generation_sources() -> list[Path]:
    """The Python files that decide a scenario's bytes: every module of `env/engine/` and
    `env/generation/`, and the shared types (`tests/env/test_determinism.py` checks nothing the
    generator imports is missing)."""
    files = [_ENV_DIR / name for name in _SHARED]
    return files + [p for room in _ROOMS for p in (_ENV_DIR / room).rglob("*.py")]


@cache
def generator_hash() -> str:
    digest = hashlib.sha256(GENERATOR_VERSION.encode())
    files = generation_sources()
    files += [p for p in (_ENV_DIR / "generation" / "data").rglob("*") if p.is_file()]
    for path in sorted(files, key=lambda p: p.relative_to(_ENV_DIR).as_posix()):
        digest.update(path.relative_to(_ENV_DIR).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:12]
