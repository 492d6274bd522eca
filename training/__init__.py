"""Training: runs as data (runs.py), the GRPO data order, and two paths, ART (`art/`, GPU) and
TRL (`trl/`, CPU). The local models both paths load live in agent/.

Trap: `training/art` and `training/trl` share their names with the `art` and `trl` libraries.
Run modules as `python -m training.…` from the repository root, never `python training/x.py`,
which would put training/ on sys.path and shadow both libraries.
"""
