"""The ART path (GPU): GRPO + LoRA on a LocalBackend, its run directory, smoke and checkpoint eval.

`train.py` drives it (`training.art.loop.train`); `python -m training.art.gpu_smoke` is the first
command on a new GPU machine, `python -m training.art.eval_checkpoint` grades a checkpoint.
`--check` and `--export` (plan.py, export.py, run_state.py) read plain files, without ART.
"""
