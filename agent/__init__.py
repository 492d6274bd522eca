"""LedgerGym agents: the shared rollout, policies (API, vLLM, scripted) and baselines.

Importing this package first keeps OpenPipe ART's transformers patch out of the process and
litellm offline; see `agent/art_guard.py`. It must run before anything imports `art`.
"""

from agent.art_guard import install_art_guards

install_art_guards()
