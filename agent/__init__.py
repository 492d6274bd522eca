"""LedgerGym agents: the shared rollout, policies (API, vLLM, scripted, local models), baselines.

Nothing here imports a trainer: the rollout returns `agent.trajectory.Trajectory`, and only the
ART training path (`training/art/`) imports ART and converts to its trajectory type.
"""
