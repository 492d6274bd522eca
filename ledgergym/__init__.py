"""LedgerGym's one version number, the one summaries, reports and the doors carry.

pyproject reads it from here (`[tool.setuptools.dynamic]`); the bump rules and every release
are in CHANGELOG.md. This package imports nothing, so every layer may read it.
"""

__version__ = "9.0.0"
