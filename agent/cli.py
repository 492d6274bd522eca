"""Exit codes and last-resort error handling of the resumable policy commands.

`python -m training.filter` and `python eval/run.py` both sample a policy over a split and append
progress as they go, so they end the same way: a user mistake is one line and status 2, work
left by transient API errors is status 3, a server that refused every connection for too long
is status 4, and Ctrl-C says that a rerun resumes. Not a command.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

EXIT_USER_ERROR = 2
EXIT_INCOMPLETE = 3
EXIT_UNREACHABLE = 4
EXIT_INTERRUPTED = 130  # the shell's code for SIGINT


def run_resumable(run: Callable[[], int], user_errors: tuple[type[Exception], ...]) -> int:
    """`run()`'s status; `user_errors` (bad names, files, splits) become one line, no traceback."""
    try:
        return run()
    except user_errors as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USER_ERROR
    except KeyboardInterrupt:
        print("interrupted; rerun the same command to resume", file=sys.stderr)
        return EXIT_INTERRUPTED
