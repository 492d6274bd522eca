"""Test session setup: stay offline, and import ART through LedgerGym's shim first.

`import art` patches transformers in a way that breaks CPU model forwards under transformers
5.24 (see agent/art_import.py); importing the shim before any test imports art keeps every
test in one process on the unpatched path. litellm must not fetch its cost map from GitHub.
"""

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import agent.art_import  # noqa: F401
