"""Version hashes stamped on every rollout and report: which tool contract, which generator.

The tool-contract hash covers the nine tools' OpenAI specs; the generator hash covers the
source and data files that decide what a (split, seed) produces. Both are content hashes.
"""

from __future__ import annotations

import hashlib
import json
from functools import cache
from pathlib import Path

from env.generator import GENERATOR_VERSION
from env.tool_specs import TOOL_CONTRACT_VERSION, openai_tools

_ENV_DIR = Path(__file__).resolve().parent


@cache
def tool_contract_hash() -> str:
    # the schemas and the version: an additive result field moves the hash too
    contract = {"version": TOOL_CONTRACT_VERSION, "tools": openai_tools()}
    text = json.dumps(contract, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:12]


# what decides the bytes of a (split, seed): the engine, the world, the builders and their data
_GENERATION_FILES = (
    "background.py",
    "background_payments.py",
    "background_pending.py",
    "billing.py",
    "builder.py",
    "calendar.py",
    "changes.py",
    "complaints.py",
    "decoys.py",
    "generator.py",
    "labels.py",
    "money.py",
    "records.py",
    "scenario.py",
    "splits.py",
    "story.py",
    "world.py",
)


def generation_sources() -> list[Path]:
    """The Python files that decide a scenario's bytes: the named ones, every fault builder and
    every look-alike module (`tests/env/test_determinism.py` checks nothing the generator imports
    is missing)."""
    files = [_ENV_DIR / name for name in _GENERATION_FILES]
    files += list((_ENV_DIR / "faults").glob("*.py"))
    return files + list(_ENV_DIR.glob("lookalikes_*.py"))


@cache
def generator_hash() -> str:
    digest = hashlib.sha256(GENERATOR_VERSION.encode())
    files = generation_sources()
    files += [p for p in (_ENV_DIR / "data").rglob("*") if p.is_file()]
    for path in sorted(files, key=lambda p: p.relative_to(_ENV_DIR).as_posix()):
        if path.name == "manifest.json":
            continue
        digest.update(path.relative_to(_ENV_DIR).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:12]
