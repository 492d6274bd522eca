"""A pass-through proxy on 127.0.0.1 that ends every event stream with `data: [DONE]`.

Why it exists: verifiers 0.4.0 refuses a chat-completions stream that ends without the `[DONE]`
sentinel ("upstream stream ended before its terminal event"), and `transformers serve`
(transformers 5.24) never sends one. The relay forwards requests and responses untouched and only
adds the missing sentinel, so the SmolLM2 test can show the door working with a real model, while
its sibling test records the gap itself. Test support only.
"""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

import httpx

DONE = b"data: [DONE]\n\n"


class DoneRelay:
    def __init__(self, upstream: str) -> None:
        """`upstream`: the server's base URL, e.g. http://127.0.0.1:8000/v1."""
        self.upstream = upstream.rstrip("/")
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._httpd.relay = self  # type: ignore[attr-defined]
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

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
        headers = {"Content-Type": "application/json", "Authorization": "Bearer sk-local"}
        with httpx.stream(method, url, content=body, headers=headers, timeout=600) as answer:
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
