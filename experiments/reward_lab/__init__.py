"""Reward lab: optimise a cheap macro-action policy against the real reward, on CPU in seconds.

A softmax policy picks *moves* (scripted procedures over the nine real tools: the auditor's
checks, honest closes, the truth-free cheats of `checks.hacks.cheats`) and is trained with
REINFORCE and a group baseline (RLOO, GRPO, Dr. GRPO) on the real reward. What it converges
to says whether a reward can be hacked at this scale (README.md in this folder).
Run: `python -m experiments.reward_lab [--quick]`.
"""
