"""The ART path (GPU): GRPO + LoRA on a LocalBackend, its run directory, smoke and checkpoint eval.

`train.py` drives it (`training.art.loop.train`); `python -m training.art.gpu_smoke` is the first
command on a new GPU machine, `python -m training.art.eval_checkpoint` grades a checkpoint.
`--check` and `--export` (plan.py, export.py, run_state.py) read plain files, without ART.
ART is imported only under this package, and only after its guards (guard.py), installed here
before any module of the package can import art; the rollout's trajectories become ART's in
trajectories.py.
"""

from training.art.guard import install_art_guards

install_art_guards()
