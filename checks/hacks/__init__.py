"""The reward-hacking suite: scripted cheats that must score low (`python -m checks.hacks`).

`programs` holds what a cheat is and the steps cheats share; `cheats`, `cheats_grounding` and
`cheats_surface` hold the cheats; `samples` picks their eval scenarios; `check` runs them all.
"""
