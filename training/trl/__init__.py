"""The TRL path (CPU): the tiny model's SFT warm start, then TRL GRPO on LedgerEnv episodes.

`python train.py --run cpu-smoke` (or `python -m training.trl.runner --run cpu-smoke`) runs it;
the episode environment TRL calls is `episode_env.py`, the data `data.py`, the report `report.py`.
"""
