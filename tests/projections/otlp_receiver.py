"""A real OTLP/HTTP receiver on loopback: decodes the protobuf wire with `opentelemetry-proto`.

It stands in for a collector (Jaeger, Tempo …): ``POST /v1/traces`` bodies are parsed as
``ExportTraceServiceRequest`` messages and kept, with their headers, for the tests to read.
"""

from __future__ import annotations

import contextlib
import gzip
import socket
import threading
import time
import zlib
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)


@dataclass
class Received:
    """A decoded span with its resource, in the receiver's words."""

    trace_id: str
    span_id: str
    parent_id: str
    name: str
    kind: int
    start: int
    end: int
    attributes: dict[str, Any]
    events: list[tuple[str, int, dict[str, Any]]]
    links: list[tuple[str, str, dict[str, Any]]]
    status: tuple[int, str]
    resource: dict[str, Any] = field(default_factory=dict)
    scope: str = ""


def _value(any_value: Any) -> Any:
    kind = any_value.WhichOneof("value")
    if kind == "array_value":
        return [_value(v) for v in any_value.array_value.values]
    return getattr(any_value, kind) if kind else None


def _attributes(items: Any) -> dict[str, Any]:
    return {item.key: _value(item.value) for item in items}


class OtlpReceiver:
    """``with OtlpReceiver() as receiver:`` … ``receiver.spans``; ``receiver.endpoint``.

    ``delay``: seconds it takes to answer each request after keeping its spans (a slow
    collector).
    """

    def __init__(self, delay: float = 0.0) -> None:
        self.delay = delay
        self.requests: list[tuple[dict[str, str], bytes]] = []
        self.spans: list[Received] = []
        self._lock = threading.Condition()
        self._server: ThreadingHTTPServer | None = None

    @property
    def endpoint(self) -> str:
        """The base URL (what ``OTEL_EXPORTER_OTLP_ENDPOINT`` takes)."""
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> OtlpReceiver:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length", 0)))
                encoding = self.headers.get("content-encoding", "")
                if encoding == "gzip":
                    body = gzip.decompress(body)
                elif encoding == "deflate":
                    body = zlib.decompress(body)
                if self.path != "/v1/traces":
                    self.send_response(404)
                    self.end_headers()
                    return
                receiver._take(dict(self.headers), body)
                time.sleep(receiver.delay)
                reply = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("content-type", "application/x-protobuf")
                self.send_header("content-length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.shutdown()
        self._server.server_close()

    def _take(self, headers: dict[str, str], body: bytes) -> None:
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        spans = []
        for resource_spans in request.resource_spans:
            resource = _attributes(resource_spans.resource.attributes)
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    spans.append(Received(
                        span.trace_id.hex(), span.span_id.hex(), span.parent_span_id.hex(),
                        span.name, span.kind, span.start_time_unix_nano,
                        span.end_time_unix_nano, _attributes(span.attributes),
                        [(e.name, e.time_unix_nano, _attributes(e.attributes))
                         for e in span.events],
                        [(link.trace_id.hex(), link.span_id.hex(),
                          _attributes(link.attributes)) for link in span.links],
                        (span.status.code, span.status.message), resource,
                        scope_spans.scope.name))
        with self._lock:
            self.requests.append((headers, body))
            self.spans.extend(spans)
            self._lock.notify_all()

    def wait_for(self, count: int, timeout: float = 30) -> list[Received]:
        """Wait until ``count`` spans arrived (spans go out on the exporter's own thread,
        after the run that made them may have returned); return those received so far."""
        with self._lock:
            self._lock.wait_for(lambda: len(self.spans) >= count, timeout)
            return list(self.spans)


class HangingCollector:
    """``with HangingCollector() as collector:`` a socket server on loopback that accepts
    every connection and never answers (a collector that hangs); ``collector.endpoint``."""

    def __init__(self) -> None:
        self._sock = socket.create_server(("127.0.0.1", 0))
        self.endpoint = f"http://127.0.0.1:{self._sock.getsockname()[1]}"
        """The base URL (what ``OTEL_EXPORTER_OTLP_ENDPOINT`` takes)."""
        self._held: list[socket.socket] = []
        self.accepted = 0

    def __enter__(self) -> HangingCollector:
        threading.Thread(target=self._accept, daemon=True).start()
        return self

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._sock.accept()
            except OSError:  # closed: the test is over
                return
            self._held.append(conn)  # held open, never read from nor answered
            self.accepted += 1

    def __exit__(self, *exc: object) -> None:
        with contextlib.suppress(OSError):
            self._sock.shutdown(socket.SHUT_RDWR)  # wakes the accepting thread
        self._sock.close()
        for conn in self._held:
            conn.close()


def closed_endpoint() -> str:
    """A loopback base URL where nothing listens (a collector that is not running)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}"
