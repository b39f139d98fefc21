"""Hand derived spans to the OpenTelemetry SDK and its OTLP/HTTP exporter (``wopdsl[otel]``).

A :class:`Sender` owns a ``TracerProvider`` of its own (the application's global one is left
alone) whose id generator hands out the ids :mod:`~wopdsl.projections.trace.spans` derived,
so each span keeps its derived trace and span id; start and end times are the log's. The
spans go to an ``OTLPSpanExporter`` configured by the standard ``OTEL_EXPORTER_OTLP_*``
variables (headers, timeout, compression, TLS); ``OTEL_SERVICE_NAME`` /
``OTEL_RESOURCE_ATTRIBUTES`` name the service (default ``wopdsl``).

This module imports OpenTelemetry: only exporting loads it. A
:class:`~wopdsl.projections.trace.writer.SpanWriter` makes the sender and hands it to its
worker thread, the only one that uses it: a run never waits for the network.
"""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Sequence
from importlib import metadata
from typing import Any
from urllib.parse import urlsplit

from opentelemetry import trace as trace_api
from opentelemetry.context import Context
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SpanExportResult
from opentelemetry.sdk.trace.id_generator import IdGenerator
from opentelemetry.trace import Link, SpanContext, SpanKind, Status, StatusCode, TraceFlags

from wopdsl.projections.trace.spans import SpanSpec

__all__ = ["Sender"]

_SAMPLED = TraceFlags(TraceFlags.SAMPLED)


def _version() -> str:
    try:
        return metadata.version("wopdsl")
    except metadata.PackageNotFoundError:  # pragma: no cover - run from a source tree
        return "0"


__version__ = _version()
_KINDS = {"internal": SpanKind.INTERNAL, "client": SpanKind.CLIENT}


class _DerivedIds(IdGenerator):
    """Hands out the ids set just before a span starts."""

    def __init__(self) -> None:
        self.trace_id = 0
        self.span_id = 0

    def generate_trace_id(self) -> int:
        return self.trace_id

    def generate_span_id(self) -> int:
        return self.span_id


class _Ended(SpanProcessor):
    """Keeps the spans that ended, for the sender to export."""

    def __init__(self) -> None:
        self.spans: list[ReadableSpan] = []

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        pass

    def on_end(self, span: ReadableSpan) -> None:
        self.spans.append(span)


def _resource() -> Resource:
    given = os.environ.get("OTEL_SERVICE_NAME") or \
        "service.name=" in os.environ.get("OTEL_RESOURCE_ATTRIBUTES", "")
    attributes: dict[str, Any] = {"service.version": __version__}
    if not given:
        attributes["service.name"] = "wopdsl"
    return Resource.create(attributes)


class Sender:
    """Builds SDK spans from :class:`SpanSpec` specs and exports them (one thread uses it).

    Args:
        endpoint: The OTLP/HTTP traces URL (``…/v1/traces``).
    """

    logger = logging.getLogger(OTLPSpanExporter.__module__)
    """The exporter's logger (what it says of retries and failures)."""

    def __init__(self, endpoint: str) -> None:
        self.endpoint = endpoint
        self.exporter = OTLPSpanExporter(endpoint=endpoint)
        self._ids = _DerivedIds()
        self._ended = _Ended()
        provider = TracerProvider(resource=_resource(), id_generator=self._ids,
                                  shutdown_on_exit=False)
        provider.add_span_processor(self._ended)
        self._tracer = provider.get_tracer("wopdsl", __version__)

    def send(self, specs: Sequence[tuple[int, SpanSpec]]) -> bool:
        """Export ``(trace id, spec)`` pairs in one request; return whether it was taken."""
        self._ended.spans.clear()
        for trace_id, spec in specs:
            self._build(trace_id, spec)
        spans, self._ended.spans = self._ended.spans, []
        return self.exporter.export(spans) is SpanExportResult.SUCCESS

    def _build(self, trace_id: int, spec: SpanSpec) -> None:
        """Start and end the span with its derived ids and its logged times."""
        self._ids.trace_id, self._ids.span_id = trace_id, spec.span_id
        context = Context()
        if spec.parent_id is not None:
            parent = SpanContext(trace_id, spec.parent_id, is_remote=False,
                                 trace_flags=_SAMPLED)
            context = trace_api.set_span_in_context(trace_api.NonRecordingSpan(parent), context)
        links = [Link(SpanContext(link.trace_id, link.span_id, is_remote=True,
                                  trace_flags=_SAMPLED), dict(link.attributes))
                 for link in spec.links]
        span = self._tracer.start_span(spec.name, context=context, kind=_KINDS[spec.kind],
                                       attributes=dict(spec.attributes), links=links,
                                       start_time=spec.start_ns)
        for event in spec.events:
            span.add_event(event.name, dict(event.attributes), timestamp=event.time_ns)
        if spec.error:
            span.set_status(Status(StatusCode.ERROR, spec.error))
        span.end(end_time=max(spec.end_ns, spec.start_ns))

    def diagnose(self) -> str:
        """Why an export failed when the exporter did not say: try a connection (1 s)."""
        parts = urlsplit(self.endpoint)
        port = parts.port or (443 if parts.scheme == "https" else 80)
        try:
            with socket.create_connection((parts.hostname or "localhost", port), timeout=1.0):
                return "did not answer in time"  # it listens: the request ran out of time
        except ConnectionRefusedError:
            return "refused the connection"
        except TimeoutError:
            return "could not be reached"
        except OSError as exc:
            return f"could not be reached ({exc.strerror or type(exc).__name__})"

    def shutdown(self) -> None:
        """Stop the exporter (a retry it is waiting for ends now)."""
        self.exporter.shutdown()  # type: ignore[no-untyped-call]
