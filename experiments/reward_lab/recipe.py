"""`python -m experiments.reward_lab.recipe [--seeds N] [--quick] [--out DIR]`: issue 37's training
recipe, decision by decision (`recipe_plan`), with 95% intervals over seeds; writes
outputs/recipe/{report.md, summary.json}. The full scale is 5 seeds x 16 arms (about half an hour
on the project's 2-core machine); --quick is one seed, two steps (CI)."""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from pathlib import Path

from env.cli import Parser, run_command
from experiments.reward_lab.recipe_plan import SCALES, run_recipe
from experiments.reward_lab.recipe_report import ROOT, write
from experiments.reward_lab.report import write_and_show


def _main(argv: Sequence[str] | None) -> int:
    parser = Parser(prog="python -m experiments.reward_lab.recipe", description=__doc__)
    parser.add_argument("--seeds", type=int, help="seeds per arm (default: the scale's)")
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true", help="one seed, two small steps (CI)")
    parser.add_argument("--scale", choices=sorted(SCALES), help="overrides --quick")
    parser.add_argument("--out", type=Path, default=ROOT / "outputs" / "recipe")
    args = parser.parse_args(argv)
    scale = SCALES[args.scale or ("quick" if args.quick else "full")]
    count = scale.seeds if args.seeds is None else args.seeds
    if count < 1 or args.first_seed < 0:
        parser.error("--seeds must be 1 or more and --first-seed 0 or more")
    started = time.perf_counter()

    def say(line: str) -> None:
        print(f"[{time.perf_counter() - started:7.1f} s] {line}", flush=True)

    results = run_recipe(scale, range(args.first_seed, args.first_seed + count), say)
    return write_and_show(lambda: write(results, args.out), args.out)


def main(argv: Sequence[str] | None = None) -> int:
    return run_command("python -m experiments.reward_lab.recipe", _main, argv)


if __name__ == "__main__":
    sys.exit(main())
