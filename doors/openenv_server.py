"""An OpenEnv server for LedgerGym: many WebSocket sessions in one process, one episode each.

    python -m doors.openenv_server --port 8000 --max-sessions 64 --session-timeout 300

openenv-core's `HTTPEnvServer` serves `doors.openenv_env.LedgerGymEnvironment` at
ws://127.0.0.1:PORT/ws (its protocol, its session bound and idle reaper); a client is
`doors.openenv_client.LedgerGymClient`. A connection past `--max-sessions` gets the library's
capacity refusal and is closed; a session idle past `--session-timeout` seconds is freed (the
library looks every quarter of the timeout, but at most every 5 s). GET /capacity says how
many sessions are live. Listens on 127.0.0.1 only.
"""

from __future__ import annotations

import argparse
import contextlib
import socket
import sys
from collections.abc import Sequence
from functools import partial
from typing import Any, get_args

from env.cli import Parser, UsageError, positive_int, run_command
from env.ledger_env import DEFAULT_TOOL_BUDGET
from ledgergym import __version__
from rewards.reward import Variant

DEFAULT_PORT = 8000
DEFAULT_MAX_SESSIONS = 64
DEFAULT_SESSION_TIMEOUT_S = 300.0


def build_app(
    *,
    max_sessions: int = DEFAULT_MAX_SESSIONS,
    session_timeout_s: float = DEFAULT_SESSION_TIMEOUT_S,
    tool_budget: int = DEFAULT_TOOL_BUDGET,
    variant: Variant = "shaped",
) -> Any:
    """The FastAPI app: openenv-core's routes for the environment, plus GET /capacity."""
    from fastapi import FastAPI
    from openenv.core.env_server.http_server import HTTPEnvServer
    from openenv.core.env_server.mcp_types import CallToolAction
    from openenv.core.env_server.types import ConcurrencyConfig

    from doors.openenv_env import LedgerGymEnvironment
    from doors.openenv_types import ToolResult

    factory = partial(LedgerGymEnvironment, tool_budget=tool_budget, variant=variant)
    concurrency = ConcurrencyConfig(
        max_concurrent_envs=max_sessions, session_timeout=session_timeout_s
    )
    server = HTTPEnvServer(factory, CallToolAction, ToolResult, concurrency_config=concurrency)
    app = FastAPI(title="LedgerGym", version=__version__)
    server.register_routes(app)

    @app.get("/capacity")
    def capacity() -> dict[str, Any]:
        return server.get_capacity_status().model_dump()

    return app


def serve(app: Any, port: int, banner: str) -> None:
    import uvicorn

    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", port))
    listener.listen(2048)  # before the banner: a client that read it can connect at once
    url = f"http://127.0.0.1:{listener.getsockname()[1]}"
    print(f"serving LedgerGym {__version__} at {url} ({banner})", file=sys.stderr, flush=True)
    # ws="websockets": uvicorn 0.54's default with websockets 17 (its sans-I/O protocol) let
    # clients' keepalive pings go unanswered under load (doors.bench: 5 of 16 and 36 of 64
    # sessions dropped with "keepalive ping timeout"); this implementation dropped none
    config = uvicorn.Config(app, log_level="warning", lifespan="on", ws="websockets")
    uvicorn.Server(config).run(sockets=[listener])


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be more than 0 seconds, got {text}")
    return value


def _parser() -> argparse.ArgumentParser:
    from doors.mcp_server import port_number

    parser = Parser(prog="python -m doors.openenv_server", description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=port_number, default=DEFAULT_PORT, help="0 picks a free one")
    parser.add_argument(
        "--max-sessions", type=positive_int, default=DEFAULT_MAX_SESSIONS,
        help="live sessions at most; one more is refused",
    )  # fmt: skip
    parser.add_argument(
        "--session-timeout", type=_seconds, default=DEFAULT_SESSION_TIMEOUT_S,
        help="seconds a session may idle before it is freed",
    )  # fmt: skip
    parser.add_argument("--tool-budget", type=positive_int, default=DEFAULT_TOOL_BUDGET)
    parser.add_argument(
        "--reward", choices=get_args(Variant), default="shaped",
        help="the variant the final observation's reward is (both are in its metadata)",
    )  # fmt: skip
    return parser


def _main(argv: Sequence[str] | None) -> int:
    args = _parser().parse_args(argv)
    try:
        import openenv.core  # noqa: F401
    except ImportError:
        raise UsageError("needs the [openenv] extra: pip install -e '.[openenv]'") from None
    app = build_app(
        max_sessions=args.max_sessions,
        session_timeout_s=args.session_timeout,
        tool_budget=args.tool_budget,
        variant=args.reward,
    )
    banner = f"at most {args.max_sessions} sessions, idle timeout {args.session_timeout:g} s"
    with contextlib.suppress(KeyboardInterrupt):
        serve(app, args.port, banner)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    return run_command("python -m doors.openenv_server", _main, argv)


if __name__ == "__main__":
    raise SystemExit(main())
