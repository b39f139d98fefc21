"""A scripted model server on loopback that speaks the OpenAI Chat Completions wire protocol.

Tests (yours and wopdsl's) run ``llm`` members against it instead of a real model: the real
``openai`` client and its HTTP stack are exercised end to end, answers are scripted, and
every request is captured::

    with ScriptedModelServer() as server:
        server.add(Answer({"summary": "Looks fine."}, usage=(120, 8)))
        os.environ["OPENAI_BASE_URL"] = server.url
        ...
        assert server.requests[0].body["model"] == "qwen2.5:7b-instruct"

Answers are taken in order from the queue of the member that calls (found by the
``member id: NAME`` line of wopdsl's default system prompt), else from the shared queue;
``add(..., member="critic")`` scripts one member. An answer may be a callable taking the
:class:`CapturedRequest` and returning an answer; ``Failure``, ``Cut``, ``Drop`` and
``Endless`` script faults, ``RawAnswer`` a recorded response. Plain JSON or SSE streaming is
chosen by the request's ``stream`` flag, as a real server does. Standard library only
(``http.server`` in a thread), so it needs nothing beyond the ``openai`` client under test.

From the command line it serves answers from a small TOML file, so an ``llm`` council can be
tried with no model at all (:mod:`wopdsl.testing.answers` describes the file)::

    python -m wopdsl.testing.model_server answers.toml --port 8090
    OPENAI_BASE_URL=http://127.0.0.1:8090/v1 wop run councils/llm-review.toml
"""

from __future__ import annotations

import json
import re
import select
import socket
import ssl
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from wopdsl.testing._loopback import LoopbackService
from wopdsl.testing._outcomes import Answer, Cut, Drop, Endless, Failure, RawAnswer
from wopdsl.testing._tool_answers import ToolCalls
from wopdsl.testing.chat_wire import completion_body, stream_chunks, usage_of

__all__ = ["Answer", "CapturedRequest", "Cut", "Drop", "Endless", "Failure", "RawAnswer",
           "ScriptedModelServer", "ToolCalls", "main"]

_MEMBER_LINE = re.compile(r"member id: ([A-Za-z0-9._-]{1,64})")

Outcome = Answer | Failure | Cut | Drop | Endless | RawAnswer | ToolCalls
Scripted = Outcome | Callable[["CapturedRequest"], Outcome]


@dataclass
class CapturedRequest:
    """One request the server received."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    member: str | None
    at: float = field(default_factory=time.monotonic)
    ended: float | None = None
    """``time.monotonic()`` when the answer was sent, or the client hung up (a stopped stream)."""
    hung_up: bool = False
    """Whether the client closed the connection before the answer was sent in full."""

    @property
    def stream(self) -> bool:
        """Whether the client asked for an SSE stream."""
        return isinstance(self.body, dict) and bool(self.body.get("stream"))


class ScriptedModelServer(LoopbackService):
    """A threaded HTTP server on ``127.0.0.1`` answering ``POST /v1/chat/completions``.

    Args:
        answers: Initial shared queue of answers.
        model_name: The ``model`` field of responses (default: the requested model).
        tls: A server-side TLS context (certificate loaded): serve HTTPS, and ``url`` is an
            ``https://`` address (its certificate must name ``127.0.0.1``).
        port: The port to listen on (default: a free one).
        keep_requests: Keep every request in :attr:`requests` (``False``: keep none, for a
            server that lives as long as a host does).
    """

    def __init__(self, answers: list[Scripted] | None = None, *,
                 model_name: str | None = None, tls: ssl.SSLContext | None = None,
                 port: int = 0, keep_requests: bool = True) -> None:
        self._queues: dict[str | None, deque[Scripted]] = {None: deque(answers or [])}
        self.requests: list[CapturedRequest] = []
        """Every request received, in arrival order (none without ``keep_requests``)."""
        self._keep = keep_requests
        self.model_name = model_name
        self.default: Scripted | None = None
        """Answer for any request whose queues are empty (else: HTTP 500 'script exhausted')."""
        self._lock = threading.Lock()
        self._counter = 0
        self._calls = 0
        self._tls = tls
        self._port = port

    # -- scripting -------------------------------------------------------------------------

    def add(self, *answers: Scripted, member: str | None = None) -> ScriptedModelServer:
        """Queue answers (for one member, or shared); returns the server."""
        with self._lock:
            self._queues.setdefault(member, deque()).extend(answers)
        return self

    def _next(self, request: CapturedRequest) -> Scripted | None:
        with self._lock:
            for key in (request.member, None):
                queue = self._queues.get(key)
                if queue:
                    return queue.popleft()
            return self.default

    @property
    def url(self) -> str:
        """The API root to use as ``base_url`` (``http://127.0.0.1:PORT/v1``)."""
        assert isinstance(self._server, ThreadingHTTPServer), "start the server first"
        scheme = "https" if self._tls is not None else "http"
        return f"{scheme}://127.0.0.1:{self._server.server_address[1]}/v1"

    # -- lifecycle -------------------------------------------------------------------------

    def start(self) -> ScriptedModelServer:
        """Listen on the loopback port (a free one by default), serving from a daemon thread."""
        owner = self

        class Handler(_Handler):
            server_owner = owner

        server = _Server(("127.0.0.1", self._port), Handler)
        server.daemon_threads = True
        if self._tls is not None:  # The handshake runs in the request's thread, on first read.
            server.socket = self._tls.wrap_socket(server.socket, server_side=True,
                                                  do_handshake_on_connect=False)
        return self._serve(server, "scripted-model")

    def _completion_id(self) -> str:
        with self._lock:
            self._counter += 1
            return f"chatcmpl-scripted-{self._counter}"


class _Server(ThreadingHTTPServer):
    """The listening socket, with a backlog for a batch of concurrent calls.

    socketserver's default backlog of 5 drops the SYNs of a larger burst, and their clients
    retry a second later — a batch of eight would seem to take a second more than it does.
    """

    request_queue_size = 128


class _Handler(BaseHTTPRequestHandler):
    server_owner: ScriptedModelServer
    protocol_version = "HTTP/1.1"

    def setup(self) -> None:
        """Send each SSE chunk at once (no Nagle delay, as real servers stream)."""
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: tests read :attr:`ScriptedModelServer.requests` instead."""

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        try:
            body: Any = json.loads(raw)
        except ValueError:
            body = raw.decode("utf-8", "replace")
        member = None
        if isinstance(body, dict):
            for message in body.get("messages", []):
                found = _MEMBER_LINE.search(str(message.get("content", "")))
                if message.get("role") == "system" and found:
                    member = found.group(1)
                    break
        owner = self.server_owner
        request = CapturedRequest("POST", self.path, {k.lower(): v for k, v in
                                                      self.headers.items()}, body, member)
        if owner._keep:
            with owner._lock:
                owner.requests.append(request)
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self._error(404, f"no route {self.path}")
            return
        scripted = owner._next(request)
        if callable(scripted):
            scripted = scripted(request)
        if scripted is None:
            self._error(500, "script exhausted: no answer queued for this request")
            return
        try:
            self._answer(scripted, request, body)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the client hung up (it may: it has its answer)
            request.hung_up = True
        finally:
            request.ended = time.monotonic()

    def _answer(self, scripted: Outcome, request: CapturedRequest, body: Any) -> None:
        owner = self.server_owner
        model = str(owner.model_name or (body.get("model") if isinstance(body, dict) else "m"))
        if isinstance(scripted, Drop):
            self.connection.shutdown(socket.SHUT_RDWR)
            self.close_connection = True
        elif isinstance(scripted, Endless):
            self._endless(model, scripted)
        elif isinstance(scripted, RawAnswer):
            self._raw(scripted, request)
        elif isinstance(scripted, Failure):
            time.sleep(scripted.delay_s)
            headers = {"Retry-After": scripted.retry_after} if scripted.retry_after else {}
            self._error(scripted.status, scripted.message, headers)
        elif isinstance(scripted, ToolCalls):  # a model in a tool loop (DESIGN.md §20)
            time.sleep(scripted.delay_s)
            self._tool_calls(model, scripted, request)
        elif isinstance(scripted, Cut):
            body = completion_body(owner._completion_id(), model, scripted.text)
            self._stream(stream_chunks(body, pieces=scripted.chunks, include_usage=False),
                         0.0, cut_after=scripted.after_chunks)
        else:
            time.sleep(scripted.delay_s)
            answer = completion_body(owner._completion_id(), model, scripted.text,
                                     finish_reason=scripted.finish_reason, usage=scripted.usage)
            if request.stream:
                options = body.get("stream_options") or {}
                self._stream(stream_chunks(answer, pieces=scripted.chunks,
                                           include_usage=bool(options.get("include_usage"))),
                             scripted.chunk_delay_s)
            else:
                self._send(200, json.dumps(answer).encode())

    # -- answers ---------------------------------------------------------------------------

    def _send(self, status: int, payload: bytes, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(payload)

    def _error(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
        kind = {401: "invalid_request_error", 429: "rate_limit_exceeded"}.get(status, "error")
        body = {"error": {"message": message, "type": kind, "code": str(status)}}
        self._send(status, json.dumps(body).encode(), headers)

    def _raw(self, answer: RawAnswer, request: CapturedRequest) -> None:
        if answer.status != 200 or not request.stream:
            self._send(answer.status, json.dumps(answer.body).encode(), answer.headers)
            return
        options = request.body.get("stream_options") or {}
        self._stream(stream_chunks(answer.body, include_usage=bool(options.get("include_usage"))),
                     0.0)

    def _tool_calls(self, model: str, answer: ToolCalls, request: CapturedRequest) -> None:
        owner = self.server_owner
        with owner._lock:
            first, owner._calls = owner._calls, owner._calls + len(answer.calls)
        base = {"id": owner._completion_id(), "created": int(time.time()), "model": model}
        usage = {"usage": usage_of(*answer.usage)} if answer.usage is not None else {}
        if not request.stream:
            self._send(200, json.dumps({**base, "object": "chat.completion", **usage,
                                        "choices": [{"index": 0, "finish_reason": "tool_calls",
                                                     "message": answer.message(first)}]}
                                       ).encode())
            return
        chunk = {**base, "object": "chat.completion.chunk"}
        events = [{**chunk, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}
                  for delta in answer.deltas(first)]
        events.append({**chunk, "choices": [{"index": 0, "delta": {},
                                             "finish_reason": "tool_calls"}]})
        if usage and (request.body.get("stream_options") or {}).get("include_usage"):
            events.append({**chunk, "choices": [], **usage})
        self._stream(events, 0.0)

    def _stream(self, events: list[dict[str, Any]], delay: float, *,
                cut_after: int | None = None) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for index, event in enumerate(events):
            if cut_after is not None and index > cut_after:
                # The connection drops mid-stream: no terminating chunk, no [DONE].
                self.wfile.flush()
                self.connection.shutdown(socket.SHUT_RDWR)
                self.close_connection = True
                return
            self._chunk(f"data: {json.dumps(event)}\n\n".encode())
            if delay and 0 < index < len(events) - 1:
                time.sleep(delay)
        self._chunk(b"data: [DONE]\n\n")
        self._chunk(b"")

    def _endless(self, model: str, endless: Endless) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        base = {"id": self.server_owner._completion_id(), "object": "chat.completion.chunk",
                "created": int(time.time()), "model": model}
        chunk = json.dumps({**base, "choices": [{"index": 0, "delta": {"content": endless.piece},
                                                 "finish_reason": None}]})
        data = f"data: {chunk}\n\n".encode()
        stop = time.monotonic() + endless.max_s
        while time.monotonic() < stop:
            self._chunk(data)  # raises once the client has hung up
            if endless.delay_s:
                self._pause(endless.delay_s)
        self.close_connection = True

    def _pause(self, seconds: float) -> None:
        """Wait ``seconds`` between chunks; raise at once should the client hang up meanwhile.

        So :attr:`CapturedRequest.ended` is the moment a stopped stream was closed, not the
        next write after it.
        """
        if isinstance(self.connection, ssl.SSLSocket):  # no peeking under TLS
            time.sleep(seconds)
            return
        readable, _, _ = select.select([self.connection], [], [], seconds)
        if readable:
            if not self.connection.recv(1, socket.MSG_PEEK):
                raise ConnectionResetError("the client closed the stream")
            time.sleep(seconds)  # the client sent something (it never does): just wait

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()


def main(argv: list[str] | None = None) -> int:
    """``python -m wopdsl.testing.model_server ANSWERS.toml [--port P]``: serve until stopped.

    The answers file is described in :mod:`wopdsl.testing.answers`.
    """
    import signal

    from wopdsl.testing.answers import command_line

    book, source, port = command_line(argv)  # exits 2, saying why, on a bad file

    def answer(request: CapturedRequest) -> Answer | RawAnswer | ToolCalls:
        found = book.reply(request.body, request.member)
        if isinstance(found, str):
            return RawAnswer(400, {"error": {"message": found, "type": "invalid_request_error"}})
        if found.tool_calls:
            return ToolCalls(*found.calls(), usage=found.usage, delay_s=found.delay_ms / 1000,
                             chunks=1)
        return Answer(found.content(), usage=found.usage, delay_s=found.delay_ms / 1000,
                      chunks=1)

    server = ScriptedModelServer(port=port)
    server.default = answer
    try:
        server.start()
    except OSError as exc:
        print(f"error: cannot listen on 127.0.0.1:{port}: {exc.strerror}\nhint: pick another "
              "--port (0 takes a free one)", file=sys.stderr)
        return 2
    signal.signal(signal.SIGTERM, signal.default_int_handler)  # stop as on Ctrl+C
    print(server.url, flush=True)
    print(f"serving {len(book.answers)} answer(s) from {source}; export "
          f"OPENAI_BASE_URL={server.url}; stop with Ctrl+C", file=sys.stderr, flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        return 0
    finally:
        server.stop()


if __name__ == "__main__":
    raise SystemExit(main())
