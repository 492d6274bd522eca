"""How much of a GRPO step's trained tokens ART 0.5.18's LocalBackend spends on padding.

ART keeps one trajectory per row (`_supports_result_packing = False`, art/local/backend.py) and
pads every row of a train call to one length, the longest row rounded up to 2,048 tokens
(capped at max_seq_length; art/preprocessing/pack.py shuffles the rows, so their order changes
nothing). This prints the padded share of the rows for the first steps of a run's data order,
with each episode's length from the auditor played on its scenario and counted in Qwen3.5's
vocabulary (`training.art.episode_tokens`, what `--check` sizes a run by; every sample of a
group taken as long), and for episodes spread evenly over 6.5k-21k tokens.

    python scripts/padding_waste.py [--run binary-01] [--steps 5]
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from training.art.episode_tokens import auditor_sizes
from training.data_order import plan_data
from training.runs import load_run_config

ROUND = 2048  # ART: math.ceil(max_tokens / 2048) * 2048


def padded_share(lengths: list[int], max_seq_length: int) -> float:
    row = min(math.ceil(max(lengths) / ROUND) * ROUND, max_seq_length)
    kept = [length for length in lengths if length <= row]
    return 1 - sum(kept) / (row * len(kept))


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--run", default="binary-01")
    parser.add_argument("--steps", type=int, default=5)
    args = parser.parse_args()
    run = load_run_config(args.run)
    data = plan_data(run)
    shares = []
    for step in range(args.steps):
        seeds = data.batch(step)
        sizes = auditor_sizes(run.data.split, {str(seed): [seed] for seed in seeds})
        lengths = [round(size.mean_tokens) for size in sizes] * run.grpo.group_size
        shares.append(padded_share(lengths, run.grpo.max_seq_length))
        print(
            f"step {step + 1}: auditor episode lengths {min(lengths):,}-{max(lengths):,} "
            f"tokens, padded share {shares[-1]:.0%}"
        )
    print(f"auditor episodes: mean padded share {statistics.fmean(shares):.0%}")
    even = [6500 + (21000 - 6500) * i // 63 for i in range(64)]
    share = padded_share(even, run.grpo.max_seq_length)
    print(f"64 episodes spread evenly over 6.5k-21k tokens: padded share {share:.0%}")
    print(f"train compute per step, relative to unpadded rows: x{1 / (1 - share):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
