"""`python -m eval.report RUN_DIR... [--train-metrics PATH...] [--gpu-price USD] --out report/`.

Writes report/index.html (open it in a browser; no server needed), the PNGs it embeds and
report.json. Exit codes: 0 written; 2 an input that cannot be used (one line on stderr).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from env.cli import EXIT_USER_ERROR, Parser, run_command
from eval.report.load import ReportInputError


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = Parser(prog="python -m eval.report", description=__doc__.splitlines()[0])
    parser.add_argument(
        "runs",
        nargs="+",
        type=Path,
        help="eval.run run directories, the first is the baseline of the paired comparisons",
    )
    parser.add_argument(
        "--train-metrics",
        nargs="+",
        type=Path,
        default=[],
        metavar="PATH",
        help="ART history.jsonl or TRL metrics.jsonl (or their directories)",
    )
    parser.add_argument(
        "--gpu-price",
        type=float,
        metavar="USD_PER_HOUR",
        help="self-hosted runs: dollars per GPU hour for the cost per scenario",
    )
    parser.add_argument("--out", type=Path, default=Path("report"), help="output folder")
    parser.add_argument("--seed", type=int, default=0, help="bootstrap and reading-list seed")
    args = parser.parse_args(argv)
    if args.gpu_price is not None and args.gpu_price < 0:
        parser.error("--gpu-price must not be negative")
    return args


def _main(argv: Sequence[str] | None) -> int:
    args = parse_args(argv)
    from eval.report.build import build_report

    try:
        page = build_report(
            args.runs,
            args.out,
            train_metrics=args.train_metrics,
            gpu_price=args.gpu_price,
            seed=args.seed,
        )
    except ReportInputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USER_ERROR
    except ModuleNotFoundError as exc:
        if exc.name != "matplotlib":
            raise
        print("error: the report draws with matplotlib: pip install -e '.[agent]'", file=sys.stderr)
        return EXIT_USER_ERROR
    except OSError as exc:
        print(f"error: cannot write the report: {exc}", file=sys.stderr)
        return EXIT_USER_ERROR
    print(f"report: {page}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    return run_command("python -m eval.report", _main, argv)


if __name__ == "__main__":
    sys.exit(main())
