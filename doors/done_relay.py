"""A pass-through relay on 127.0.0.1 that ends every event stream with `data: [DONE]`.

    python -m doors.done_relay --upstream http://127.0.0.1:8000/v1 --port 8001

Why it exists: verifiers 0.4.0 refuses a chat-completions stream that ends without the `[DONE]`
sentinel ("upstream stream ended before its terminal event"), and `transformers serve`
(transformers 5.24 and 5.25) never sends one, so `vf-eval doors` behind a local
`transformers serve` fails every rollout. The relay forwards each request and response
untouched (method, path, body, the client's Authorization header, status, content type) and only
appends the sentinel to an event stream that lacks it; point `--client.base-url` at the URL it
prints. Not needed for vLLM or the OpenAI API, which send the sentinel. One exchange per
connection (HTTP/1.0), a thread per request; Ctrl-C stops it.
"""

from __future__ import annotations

import contextlib
import sys
import threading
from collections.abc import Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

import httpx

from env.cli import Parser, UsageError, run_command

DONE = b"data: [DONE]\n\n"
DEFAULT_PORT = 8001
TIMEOUT_S = 600.0  # one generation on a CPU may take minutes


class DoneRelay:
    """The relay in a background thread: `with DoneRelay(upstream) as relay: relay.base_url`."""

    def __init__(self, upstream: str, port: int = 0) -> None:
        """`upstream`: the server's base URL (http://127.0.0.1:8000/v1); `port` 0: a free one."""
        self.upstream = upstream.rstrip("/")
        self._httpd = ThreadingHTTPServer(("127.0.0.1", port), _Handler)
        self._httpd.daemon_threads = True
        self._httpd.relay = self  # type: ignore[attr-defined]
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def serve_forever(self) -> None:
        """In this thread, until interrupted."""
        try:
            self._httpd.serve_forever()
        finally:
            self._httpd.server_close()

    def __enter__(self) -> DoneRelay:
        self._thread.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"  # one exchange per connection; the end of a stream is EOF

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self._forward("GET", None)

    def do_POST(self) -> None:
        self._forward("POST", self.rfile.read(int(self.headers.get("Content-Length") or 0)))

    def _forward(self, method: str, body: bytes | None) -> None:
        relay: DoneRelay = self.server.relay  # type: ignore[attr-defined]
        url = relay.upstream + self.path.removeprefix("/v1")
        headers = {"Content-Type": self.headers.get("Content-Type", "application/json")}
        if auth := self.headers.get("Authorization"):
            headers["Authorization"] = auth
        try:
            with httpx.stream(method, url, content=body, headers=headers, timeout=TIMEOUT_S) as up:
                self._relay(up)
        except httpx.HTTPError as exc:  # the upstream is down: the client gets a 502, not a hang
            self.send_error(502, f"upstream {relay.upstream}: {type(exc).__name__}")

    def _relay(self, answer: httpx.Response) -> None:
        self.send_response(answer.status_code)
        kind = answer.headers.get("content-type", "application/json")
        self.send_header("Content-Type", kind)
        self.end_headers()
        tail = b""
        for chunk in answer.iter_raw():
            self.wfile.write(chunk)
            tail = (tail + chunk)[-64:]
        if kind.startswith("text/event-stream") and DONE.strip() not in tail:
            self.wfile.write(DONE)


def _main(argv: Sequence[str] | None) -> int:
    from doors.mcp_server import port_number

    parser = Parser(prog="python -m doors.done_relay", description=__doc__.splitlines()[0])
    parser.add_argument("--upstream", required=True, help="the server, e.g. http://host:8000/v1")
    parser.add_argument("--port", type=port_number, default=DEFAULT_PORT, help="0: a free one")
    args = parser.parse_args(argv)
    if not args.upstream.startswith(("http://", "https://")):
        raise UsageError(f"--upstream {args.upstream!r} is not an http(s) URL")
    try:
        relay = DoneRelay(args.upstream, args.port)
    except OSError as exc:
        raise UsageError(f"cannot listen on 127.0.0.1:{args.port}: {exc.strerror}") from None
    print(f"relaying at {relay.base_url} to {relay.upstream}; Ctrl-C stops", file=sys.stderr)
    sys.stderr.flush()
    with contextlib.suppress(KeyboardInterrupt):
        relay.serve_forever()
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    return run_command("python -m doors.done_relay", _main, argv)


if __name__ == "__main__":
    raise SystemExit(main())
