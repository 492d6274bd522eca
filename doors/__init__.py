"""Doors: LedgerGym's episodes behind other people's interfaces (a verifiers environment, MCP).

`vf-eval doors` resolves a taskset id by importing the top-level package of that name and
reading the Taskset and Env classes named in its `__all__`. They are loaded on first access, so
`python -m doors.mcp_server` runs without verifiers installed. See doors/README.md.
"""

from __future__ import annotations

from typing import Any

__all__ = ["BillSleuthEnv", "BillSleuthTaskset"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from doors import verifiers_env

        return getattr(verifiers_env, name)
    raise AttributeError(f"module 'doors' has no attribute {name!r}")
