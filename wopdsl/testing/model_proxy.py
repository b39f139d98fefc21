"""A loopback proxy in front of a real OpenAI-wire model server that records every request.

It may set fields of the requests it forwards (a ``seed``, say).

Tests and benchmarks that run councils against a real server (``llama-server``) use it to
see the wire — what was sent, how long each call took, that a replay sent nothing — without
touching the client under test::

    with ModelProxy("http://127.0.0.1:8089/v1", set_fields={"seed": 7}) as proxy:
        os.environ["OPENAI_BASE_URL"] = proxy.url
        ...
        assert proxy.calls[0].body["response_format"]["type"] == "json_schema"

Each request is forwarded on a connection of its own (``Connection: close`` both ways), and
the answer is passed back byte for byte as it arrives (streams stay streams). Standard
library only.
"""

from __future__ import annotations

import json
import socket
import socketserver
import threading
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from wopdsl.testing._loopback import LoopbackService

__all__ = ["ModelProxy", "ProxiedCall"]

_MAX_HEAD = 65536


@dataclass
class ProxiedCall:
    """One request that went through the proxy."""

    method: str
    path: str
    body: Any
    """The JSON body as forwarded (with the fields the proxy set), or ``None``."""
    started: float = field(default_factory=time.monotonic)
    ended: float | None = None
    """When the server's answer ended (``None`` while it streams)."""
    status: int | None = None

    @property
    def seconds(self) -> float | None:
        """How long the call took, request to the end of the answer."""
        return None if self.ended is None else self.ended - self.started


class ModelProxy(LoopbackService):
    """A threaded TCP proxy on ``127.0.0.1`` for the server at ``upstream`` (a base URL).

    Args:
        upstream: The real server's base URL, e.g. ``http://127.0.0.1:8089/v1``.
        set_fields: JSON fields set in every forwarded JSON request body.
    """

    def __init__(self, upstream: str, *, set_fields: dict[str, Any] | None = None) -> None:
        parts = urlsplit(upstream)
        if parts.scheme != "http" or not parts.hostname:
            raise ValueError(f"ModelProxy forwards to http:// servers only, not {upstream!r}")
        self.target = (parts.hostname, parts.port or 80)
        self.base_path = parts.path.rstrip("/")
        self.set_fields = dict(set_fields or {})
        self.calls: list[ProxiedCall] = []
        """Every request forwarded, in arrival order."""
        self._lock = threading.Lock()

    @property
    def url(self) -> str:
        """The proxy's base URL (same path as the upstream's)."""
        assert isinstance(self._server, socketserver.TCPServer), "start the proxy first"
        return f"http://127.0.0.1:{self._server.server_address[1]}{self.base_path}"

    def start(self) -> ModelProxy:
        """Listen on a free loopback port, serving from daemon threads."""
        owner = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                owner._handle(self.request)

        server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
        server.daemon_threads = True
        return self._serve(server, "model-proxy")

    # -- one connection: one request --------------------------------------------------------

    def _handle(self, client: socket.socket) -> None:
        head, rest = _read_head(client)
        if head is None:
            return
        lines = head.decode("latin-1").split("\r\n")
        method, path, _version = [*lines[0].split(" ", 2), "", ""][:3]
        headers = [line.split(":", 1) for line in lines[1:] if ":" in line]
        length = next((int(v) for k, v in headers if k.strip().lower() == "content-length"), 0)
        body_bytes = rest
        while len(body_bytes) < length:
            more = client.recv(65536)
            if not more:
                return
            body_bytes += more
        body: Any = None
        if body_bytes:
            try:
                body = json.loads(body_bytes)
            except ValueError:
                body = None
        if isinstance(body, dict) and self.set_fields:
            body.update(self.set_fields)
            body_bytes = json.dumps(body).encode()
        call = ProxiedCall(method, path, body)
        with self._lock:
            self.calls.append(call)
        kept = [(k, v) for k, v in headers
                if k.strip().lower() not in {"content-length", "connection", "host"}]
        out = [f"{method} {path} HTTP/1.1", f"Host: {self.target[0]}:{self.target[1]}",
               *(f"{k}:{v}" for k, v in kept), f"Content-Length: {len(body_bytes)}",
               "Connection: close", "", ""]
        try:
            with socket.create_connection(self.target, timeout=600) as upstream:
                upstream.sendall("\r\n".join(out).encode("latin-1") + body_bytes)
                first = True
                while chunk := upstream.recv(65536):
                    if first:
                        first = False
                        call.status = _status(chunk)
                    client.sendall(chunk)
        except OSError:
            pass
        finally:
            call.ended = time.monotonic()


def _read_head(sock: socket.socket) -> tuple[bytes | None, bytes]:
    data = b""
    while b"\r\n\r\n" not in data:
        more = sock.recv(65536)
        if not more or len(data) > _MAX_HEAD:
            return None, b""
        data += more
    head, _, rest = data.partition(b"\r\n\r\n")
    return head, rest


def _status(chunk: bytes) -> int | None:
    try:
        return int(chunk.split(b" ", 2)[1])
    except (IndexError, ValueError):
        return None
