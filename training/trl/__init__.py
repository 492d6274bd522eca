"""The TRL path (CPU, or GPUs under a launcher): the SFT warm start, then TRL GRPO on LedgerEnv.

`python train.py --run cpu-smoke` (or `python -m training.trl.runner --run cpu-smoke`) runs it;
`runner.py` starts it, `phases.py` runs the phases (`sft.py`, `grpo.py`), the episode environment
TRL calls is `episode_env.py`, the data `data.py`, what it records `report.py` and `summary.py`,
checkpoints and Ctrl-C `checkpoints.py`, several processes `ranks.py`.
"""
