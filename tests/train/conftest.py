"""Keeps `import art` offline: litellm otherwise fetches its model cost map from GitHub."""

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
