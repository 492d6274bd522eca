"""The gates CI holds LedgerGym to: manifest, dedup, shortcut probe, reward hacks, agreement.

Each gate is a command (`python -m checks.<name>`, see checks/README.md) that exits 1 when what
it guards breaks. Nothing in the product (env, rewards, agent, eval, training) imports this.
"""
