"""A real OpenAI-compatible chat-completions server on 127.0.0.1 that answers from a script.

It stands in for vLLM, `transformers serve` or an API model so that the real client paths
(`openai.AsyncOpenAI`, `litellm.acompletion("openai/<name>", api_base=...)`, ART's
`Model.openai_client()`) run offline, byte for byte over HTTP. A *responder* turns each request
body into one assistant turn (helpers in `tests.support.scripted_turns`). Infrastructure faults
can be scripted too: any HTTP status (`fail_next`), a hang (`hang`), a crash mid-run
(`die_after`), a context limit (`max_model_len`), and the two ways real servers treat a tool
call they cannot parse (`malformed_calls`: vLLM returns it as text, `transformers serve`
answers a plain HTTP 500 up to 5.24 and, from 5.25, an HTTP 400 with FastAPI's `detail` body).
`streaming=True` answers `stream: true` requests as server-sent events (`"no-done"`: without the
closing `data: [DONE]`, as `transformers serve` streams)
(`tests.support.scripted_stream`); by default they are refused. Test support only.
Use: `with ScriptedOpenAIServer(replay_responder([...])) as server: ... server.base_url`.
"""

from __future__ import annotations

import contextlib
import json
import math
import re
import socket
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from tests.support.scripted_stream import stream_events
from tests.support.scripted_turns import (
    Responder,
    ScriptExhausted,
    call_as_text,
    malformed_call_turn,
    replay_responder,
    text_turn,
    tool_call,
    tool_call_turn,
)

ReplyTokenizer = Callable[[dict[str, Any]], list[str]]
"""Gets the validated reply as a dict and returns the logprob token strings for it."""

MalformedCalls = Literal["pass", "text", "http500", "http400"]
LOGPROB = -0.1
PLAIN_500 = "Internal Server Error"  # what uvicorn sends for an unhandled exception
# what transformers serve 5.25 says (as FastAPI's {"detail": ...}) for a tool call it cannot parse
UNPARSED_400 = "json parser could not parse region as JSON."


class ScriptedToolCall(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(description="Tool name, e.g. 'get_invoice'.")
    arguments: str = Field(
        description="Raw arguments string sent as-is; may be malformed JSON on purpose."
    )
    id: str | None = Field(default=None, description="Tool call id; 'call_<hex>' when omitted.")


class ScriptedReply(BaseModel):
    """One assistant turn as a responder returns it; checked so a bad script fails loudly."""

    model_config = ConfigDict(extra="forbid")

    content: str | None = None
    tool_calls: list[ScriptedToolCall] = Field(default_factory=list)
    finish_reason: Literal["stop", "length", "tool_calls"] | None = Field(
        default=None, description="Defaults to 'tool_calls' when there are calls, else 'stop'."
    )


class _HTTPError(Exception):
    """Ends a request with an OpenAI-style error body (uvicorn's plain text one: `plain`;
    FastAPI's `{"detail": message}`: `detail`)."""

    def __init__(
        self,
        status: int,
        message: str,
        code: str | None = None,
        *,
        plain: bool = False,
        detail: bool = False,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.code = code
        self.plain = plain
        self.detail = detail


class _Drop(Exception):
    """Ends a request by closing the connection without an answer (a crashed server)."""


def _parses(arguments: str) -> bool:
    try:
        return isinstance(json.loads(arguments), dict)
    except ValueError:
        return False


class ScriptedOpenAIServer:
    """Threaded HTTP server in a daemon thread; port 0 lets the OS pick a free port.

    `requests` records every chat-completions body that passed the auth check, including those
    answered with a scripted failure, so tests can count client retries.
    """

    def __init__(
        self,
        responder: Responder,
        *,
        model_name: str = "scripted",
        fail_first: int = 0,
        fail_status: int = 503,
        logprobs: bool = True,
        latency_s: float = 0.0,
        retry_after_s: float | None = None,
        strict_model: bool = False,
        reply_tokenizer: ReplyTokenizer | None = None,
        malformed_calls: MalformedCalls = "pass",
        max_model_len: int | None = None,
        die_after: int | None = None,
        streaming: bool | Literal["no-done"] = False,
    ) -> None:
        """`die_after`: answer that many chat requests, then crash on the next one (the
        connection drops unanswered and nothing listens any more)."""
        self.responder = responder
        self.model_name = model_name
        self.logprobs = logprobs
        self.latency_s = latency_s
        self.retry_after_s = retry_after_s
        self.strict_model = strict_model
        self.reply_tokenizer = reply_tokenizer or whitespace_tokens
        self.malformed_calls: MalformedCalls = malformed_calls
        self.max_model_len = max_model_len
        self.die_after = die_after
        self.streaming = streaming
        self._lock = threading.Lock()
        self._requests: list[dict[str, Any]] = []
        self._failures: deque[_HTTPError] = deque()
        self._answered = 0
        self._released = threading.Event()
        self._released.set()
        self._stopping = threading.Event()
        self._httpd: _ScriptedHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._port: int | None = None
        if fail_first:
            self.fail_next(fail_first, fail_status, f"scripted transient failure ({fail_status})")

    @property
    def port(self) -> int:
        if self._port is None:
            raise RuntimeError("server is not running")
        return self._port

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def requests(self) -> list[dict[str, Any]]:
        """A snapshot copy: handler threads may append while the caller iterates."""
        with self._lock:
            return list(self._requests)

    def fail_next(
        self, count: int, status: int, message: str | None = None, *, plain: bool = False
    ) -> None:
        """The next `count` chat requests fail with `status`; `plain` sends uvicorn's text body."""
        text = message or (PLAIN_500 if plain else f"scripted failure ({status})")
        with self._lock:
            self._failures.extend(_HTTPError(status, text, plain=plain) for _ in range(count))

    def hang(self) -> None:
        """From now on chat requests are accepted and never answered (until `release`/`stop`)."""
        self._released.clear()

    def release(self) -> None:
        self._released.set()

    def start(self) -> ScriptedOpenAIServer:
        if self._httpd is not None:
            raise RuntimeError("server already started")
        self._stopping.clear()
        self._httpd = _ScriptedHTTPServer(("127.0.0.1", self._port or 0), _Handler, self)
        self._port = int(self._httpd.server_address[1])
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.01},
            name=f"scripted-openai-{self.port}",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stops serving, closes kept-alive client connections, and frees the port."""
        self._stopping.set()
        httpd, thread = self._httpd, self._thread
        if httpd is None:
            return
        self._httpd, self._thread = None, None
        httpd.shutdown()
        httpd.server_close()
        httpd.close_open_connections()
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=5)

    def __enter__(self) -> ScriptedOpenAIServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def handle_chat(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        """Runs one chat-completions request; called from a handler thread."""
        with self._lock:
            self._requests.append(body)
            failure = self._failures.popleft() if self._failures else None
            dying = self.die_after is not None and self._answered >= self.die_after
        if dying:
            self.stop()
            raise _Drop
        while not self._released.wait(0.02):
            if self._stopping.is_set():
                raise _Drop
        if self.latency_s > 0:
            time.sleep(self.latency_s)
        if failure is not None:
            raise failure
        _check_chat_body(body, self.model_name if self.strict_model else None, self.streaming)
        self._check_context(body)
        try:
            reply = ScriptedReply.model_validate(self.responder(body))
        except ValidationError as error:
            raise _HTTPError(500, f"responder returned a malformed reply: {error}") from error
        except Exception as error:  # the responder is test code; report its failure to the client
            raise _HTTPError(500, f"responder failed: {type(error).__name__}: {error}") from error
        reply = self._treat_malformed(reply)
        with self._lock:
            self._answered += 1
        return 200, self._completion(body, reply)

    def _treat_malformed(self, reply: ScriptedReply) -> ScriptedReply:
        bad = [call for call in reply.tool_calls if not _parses(call.arguments)]
        if not bad or self.malformed_calls == "pass":
            return reply
        if self.malformed_calls == "http500":
            raise _HTTPError(500, PLAIN_500, plain=True)
        if self.malformed_calls == "http400":
            raise _HTTPError(400, UNPARSED_400, detail=True)
        raw = "\n".join(call_as_text(call.name, call.arguments) for call in reply.tool_calls)
        return ScriptedReply(content=((reply.content or "") + raw), finish_reason="stop")

    def _check_context(self, body: dict[str, Any]) -> None:
        if self.max_model_len is None:
            return
        prompt = _approx_tokens(_prompt_text(body))
        wanted = int(body.get("max_tokens") or body.get("max_completion_tokens") or 0)
        if prompt + wanted > self.max_model_len:
            raise _HTTPError(
                400,
                f"This model's maximum context length is {self.max_model_len} tokens. However, "
                f"you requested {prompt + wanted} tokens ({prompt} in the messages, {wanted} in "
                "the completion). Please reduce the length of the messages or completion.",
            )

    def _completion(self, body: dict[str, Any], reply: ScriptedReply) -> dict[str, Any]:
        tool_calls = [
            {
                "id": call.id or f"call_{uuid.uuid4().hex[:24]}",
                "type": "function",
                "function": {"name": call.name, "arguments": call.arguments},
            }
            for call in reply.tool_calls
        ]
        finish_reason = reply.finish_reason or ("tool_calls" if tool_calls else "stop")
        # vLLM sends `tool_calls: []` (not null) on plain text turns; clients must cope with both.
        message = {"role": "assistant", "content": reply.content, "tool_calls": tool_calls}
        choice: dict[str, Any] = {"index": 0, "message": message, "finish_reason": finish_reason}
        choice["logprobs"] = self._logprobs(reply) if self.logprobs else None
        completion_text = (reply.content or "") + "".join(
            call.name + call.arguments for call in reply.tool_calls
        )
        prompt_tokens = _approx_tokens(_prompt_text(body))
        completion_tokens = _approx_tokens(completion_text)
        return {
            "id": f"chatcmpl-{uuid.uuid4().hex}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model") or self.model_name,
            "choices": [choice],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }

    def _logprobs(self, reply: ScriptedReply) -> dict[str, Any]:
        tokens = self.reply_tokenizer(reply.model_dump())
        return {
            "content": [
                {
                    "token": token,
                    "logprob": LOGPROB,
                    "bytes": list(token.encode("utf-8")),
                    "top_logprobs": [],
                }
                for token in tokens
            ]
        }

    def models_body(self) -> dict[str, Any]:
        model: dict[str, Any] = {
            "id": self.model_name,
            "object": "model",
            "created": 0,
            "owned_by": "scripted",
        }
        if self.max_model_len is not None:
            model["max_model_len"] = self.max_model_len  # vLLM reports it here
        return {"object": "list", "data": [model]}


def whitespace_tokens(reply: dict[str, Any]) -> list[str]:
    """Fake tokens: the content, then each call's name and arguments, cut after whitespace.

    They only have to be structurally valid logprobs. ART reads a token 'token_id:N' as id N and
    looks any other string up in the tokenizer vocabulary, so pass a `reply_tokenizer` that
    returns 'token_id:N' strings when a training test needs real token ids.
    """
    pieces = [reply.get("content") or ""]
    for call in reply.get("tool_calls") or []:
        pieces += [call["name"], call["arguments"]]
    return [token for piece in pieces for token in re.findall(r"\S+\s*|\s+", piece)]


def _prompt_text(body: dict[str, Any]) -> str:
    return json.dumps(body.get("messages", [])) + json.dumps(body.get("tools") or [])


def _approx_tokens(text: str) -> int:
    return math.ceil(len(text) / 4)


def _check_chat_body(body: dict[str, Any], served_model: str | None, streaming: bool) -> None:
    if body.get("stream") and not streaming:
        raise _HTTPError(400, "streaming is not supported by the scripted server; use stream=false")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise _HTTPError(400, "'messages' must be a non-empty list")
    if served_model is not None and body.get("model") != served_model:
        message = f"The model `{body.get('model')}` does not exist."
        raise _HTTPError(404, message, code="model_not_found")


def _error_body(status: int, message: str, code: str | None) -> dict[str, Any]:
    kind = {401: "authentication_error", 429: "rate_limit_error"}.get(status)
    if kind is None:
        kind = "server_error" if status >= 500 else "invalid_request_error"
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


class _ScriptedHTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(
        self,
        address: tuple[str, int],
        handler: type[BaseHTTPRequestHandler],
        scripted: ScriptedOpenAIServer,
    ) -> None:
        self.scripted = scripted
        self.open_connections: set[socket.socket] = set()
        self.connections_lock = threading.Lock()
        super().__init__(address, handler)

    def close_open_connections(self) -> None:
        """Kept-alive client sockets would otherwise hold handler threads after shutdown."""
        with self.connections_lock:
            connections = list(self.open_connections)
        for connection in connections:
            with contextlib.suppress(OSError):  # the client may have closed it already
                connection.shutdown(socket.SHUT_RDWR)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, like vLLM behind uvicorn
    server: _ScriptedHTTPServer

    def setup(self) -> None:
        super().setup()
        with self.server.connections_lock:
            self.server.open_connections.add(self.connection)

    def finish(self) -> None:
        with self.server.connections_lock:
            self.server.open_connections.discard(self.connection)
        with contextlib.suppress(OSError):  # a dropped connection is already gone
            super().finish()

    def log_message(self, format: str, *args: Any) -> None:
        pass  # keep test output clean

    def do_GET(self) -> None:
        path = self.path.split("?")[0].rstrip("/")
        if path == "/health":
            self._send(200, {})
        elif not self._authorized():
            return
        elif path == "/v1/models":
            self._send(200, self.server.scripted.models_body())
        else:
            self._send_error(_HTTPError(404, f"no route GET {self.path}"))

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if not self._authorized():
            return
        if self.path.split("?")[0].rstrip("/") != "/v1/chat/completions":
            self._send_error(_HTTPError(404, f"no route POST {self.path}"))
            return
        try:
            body = json.loads(raw)
            if not isinstance(body, dict):
                raise ValueError("body is not a JSON object")
        except ValueError as error:
            self._send_error(_HTTPError(400, f"request body is not valid JSON: {error}"))
            return
        try:
            status, payload = self.server.scripted.handle_chat(body)
        except _HTTPError as error:
            self._send_error(error)
            return
        except _Drop:
            self.close_connection = True
            with contextlib.suppress(OSError):
                self.connection.shutdown(socket.SHUT_RDWR)
            return
        if body.get("stream"):  # only reached with `streaming=True`
            done = self.server.scripted.streaming != "no-done"
            events = stream_events(body, payload, done=done)
            self._send_bytes(status, events, "text/event-stream", {})
            return
        self._send(status, payload)

    def _authorized(self) -> bool:
        if self.headers.get("Authorization"):
            return True
        message = "You didn't provide an API key (Authorization: Bearer <key>)."
        self._send_error(_HTTPError(401, message, code="invalid_api_key"))
        return False

    def _send_error(self, error: _HTTPError) -> None:
        headers = {}
        retry_after = self.server.scripted.retry_after_s
        if retry_after is not None and error.status in (429, 503):
            headers["retry-after-ms"] = str(int(retry_after * 1000))
            headers["retry-after"] = str(math.ceil(retry_after))
        if error.plain:
            self._send_bytes(error.status, error.message.encode(), "text/plain", headers)
            return
        if error.detail:
            self._send(error.status, {"detail": error.message}, headers)
            return
        self._send(error.status, _error_body(error.status, error.message, error.code), headers)

    def _send(
        self, status: int, payload: Mapping[str, Any], headers: Mapping[str, str] | None = None
    ) -> None:
        data = json.dumps(payload).encode("utf-8")
        self._send_bytes(status, data, "application/json", headers or {})

    def _send_bytes(
        self, status: int, data: bytes, content_type: str, headers: Mapping[str, str]
    ) -> None:
        try:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)
        except OSError:  # the client gave up (its timeout) while the answer was being made
            self.close_connection = True


__all__ = [
    "PLAIN_500",
    "UNPARSED_400",
    "ReplyTokenizer",
    "Responder",
    "ScriptExhausted",
    "ScriptedOpenAIServer",
    "ScriptedReply",
    "ScriptedToolCall",
    "call_as_text",
    "malformed_call_turn",
    "replay_responder",
    "text_turn",
    "tool_call",
    "tool_call_turn",
    "whitespace_tokens",
]
