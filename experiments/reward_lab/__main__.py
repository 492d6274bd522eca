"""`python -m experiments.reward_lab [--quick] [--seed N] [--out DIR]`: run the four experiments,
print the tables, write outputs/lab/{report.md, summary.json, lab.png}; then one seed of the
training-recipe comparisons at a small scale (a smoke of `python -m experiments.reward_lab.recipe`,
which has the evidence) into outputs/lab/recipe/."""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from pathlib import Path

from env.cli import Parser, run_command
from experiments.reward_lab import recipe_report
from experiments.reward_lab.experiments import SCALES, run_all
from experiments.reward_lab.recipe_plan import SCALES as RECIPE_SCALES
from experiments.reward_lab.recipe_plan import run_recipe
from experiments.reward_lab.report import ROOT, write, write_and_show

RECIPE_SMOKE = {"default": "quick", "quick": "quick", "tiny": "tiny"}  # lab scale -> recipe scale


def _main(argv: Sequence[str] | None) -> int:
    parser = Parser(prog="python -m experiments.reward_lab", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="every part at a small size (CI)")
    parser.add_argument("--scale", choices=sorted(SCALES), help="overrides --quick")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=ROOT / "outputs" / "lab")
    args = parser.parse_args(argv)
    if args.seed < 0:
        parser.error("--seed must be 0 or more")
    scale = SCALES[args.scale or ("quick" if args.quick else "default")]
    started = time.perf_counter()

    def say(line: str) -> None:
        print(f"[{time.perf_counter() - started:6.1f} s] {line}", flush=True)

    results = run_all(scale, args.seed, say)
    recipe = run_recipe(RECIPE_SCALES[RECIPE_SMOKE[scale.name]], [args.seed], say)
    return write_and_show(
        lambda: [*write(results, args.out), *recipe_report.write(recipe, args.out / "recipe")],
        args.out,
    )


def main(argv: Sequence[str] | None = None) -> int:
    return run_command("python -m experiments.reward_lab", _main, argv)


if __name__ == "__main__":
    sys.exit(main())
