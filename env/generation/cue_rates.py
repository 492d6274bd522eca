"""How often each class is plausible for a customer: the rates that steer complaint texts.

`env.generation.complaints` draws a mistaken customer's belief with weight 1/(how often that class
is plausible), read from `env/generation/data/complaints/plausibility.json`. This measures those
rates over train worlds; rerun it after a world change and commit the file it writes.
Run: `python -m env.generation.cue_rates [--measure] [--limit 1500]` (without --measure it only
prints).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from importlib import resources
from pathlib import Path

from env.cli import Parser, positive_int, run_command
from env.generation import complaints
from env.generation.complaints import RATES_FILE
from env.generation.generator import generate
from env.generation.splits import split_seeds


def measure_rates(limit: int) -> dict[str, float]:
    """How often each class is plausible over the first `limit` train scenarios' worlds.
    The rates steer only complaint text; the worlds (and so the rates) do not depend on them:
    cues are read before any complaint is written."""
    seen: list[list[str]] = []
    complaints.CUE_LOG = seen
    try:
        for seed in split_seeds("train", limit):
            generate.__wrapped__("train", seed)
    finally:
        complaints.CUE_LOG = None
    labels = sorted({label for plausible in seen for label in plausible})
    return {x: round(sum(x in p for p in seen) / len(seen), 3) for x in labels}


def _main(argv: Sequence[str] | None) -> int:
    parser = Parser(prog="python -m env.generation.cue_rates", description=measure_rates.__doc__)
    parser.add_argument("--measure", action="store_true", help=f"rewrite env/data/{RATES_FILE}")
    parser.add_argument("--limit", type=positive_int, default=1500, help="train scenarios")
    args = parser.parse_args(argv)
    rates = measure_rates(args.limit)
    print(json.dumps(rates, indent=1))
    if args.measure:
        payload = {"train_scenarios": args.limit, "rates": rates}
        path = Path(str(resources.files("env.generation").joinpath(f"data/{RATES_FILE}")))
        path.write_text(json.dumps(payload, indent=1) + "\n", encoding="utf-8")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    return run_command("python -m env.generation.cue_rates", _main, argv)


if __name__ == "__main__":
    sys.exit(main())
