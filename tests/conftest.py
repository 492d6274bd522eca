"""Test session setup: stay offline, and guard ART before any test imports it.

`import art` patches transformers in a way that breaks CPU model forwards under transformers
5.24 (see training/art/guard.py); installing the guards before any test imports art keeps
every test in one process on the unpatched path, as `training/art/__init__.py` does for the
ART path. litellm must not fetch its cost map from GitHub.
"""

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from training.art.guard import install_art_guards

install_art_guards()
