"""Hand derived spans to the OpenTelemetry SDK and its OTLP/HTTP exporter (``wopdsl[otel]``).

A :class:`SpanWriter` owns a ``TracerProvider`` of its own (the application's global one is
left alone) whose id generator hands out the ids :mod:`~wopdsl.projections.trace.spans`
derived, so each span keeps its derived trace and span id; start and end times are the
log's. Spans go through a ``BatchSpanProcessor`` to an ``OTLPSpanExporter``, configured by
the standard ``OTEL_EXPORTER_OTLP_*`` variables (endpoint, headers, timeout, TLS) unless an
endpoint is given; ``OTEL_SERVICE_NAME`` / ``OTEL_RESOURCE_ATTRIBUTES`` name the service
(default ``wopdsl``).

This module imports OpenTelemetry: only exporting loads it.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable, Sequence
from importlib import metadata
from typing import Any

from opentelemetry import trace as trace_api
from opentelemetry.context import Context
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    SpanExporter,
    SpanExportResult,
)
from opentelemetry.sdk.trace.id_generator import IdGenerator
from opentelemetry.trace import Link, SpanContext, SpanKind, Status, StatusCode, TraceFlags

from wopdsl.projections.trace.spans import SpanSpec

__all__ = ["SpanWriter", "shared_writer"]

_SAMPLED = TraceFlags(TraceFlags.SAMPLED)


def _version() -> str:
    try:
        return metadata.version("wopdsl")
    except metadata.PackageNotFoundError:  # pragma: no cover - run from a source tree
        return "0"


__version__ = _version()
_KINDS = {"internal": SpanKind.INTERNAL, "client": SpanKind.CLIENT}


class _DerivedIds(IdGenerator):
    """Hands out the ids set just before a span starts (under the writer's lock)."""

    def __init__(self) -> None:
        self.trace_id = 0
        self.span_id = 0

    def generate_trace_id(self) -> int:
        return self.trace_id

    def generate_span_id(self) -> int:
        return self.span_id


class _Counting(SpanExporter):
    """The OTLP exporter, counting what it exported and what failed."""

    def __init__(self, inner: SpanExporter) -> None:
        self.inner = inner
        self.exported = 0
        self.failed = 0

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        result = self.inner.export(spans)
        if result is SpanExportResult.SUCCESS:
            self.exported += len(spans)
        else:
            self.failed += len(spans)
        return result

    def shutdown(self) -> None:
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return self.inner.force_flush(timeout_millis)


def _resource() -> Resource:
    given = os.environ.get("OTEL_SERVICE_NAME") or \
        "service.name=" in os.environ.get("OTEL_RESOURCE_ATTRIBUTES", "")
    attributes: dict[str, Any] = {"service.version": __version__}
    if not given:
        attributes["service.name"] = "wopdsl"
    return Resource.create(attributes)


class SpanWriter:
    """Writes :class:`SpanSpec` spans through the OpenTelemetry SDK to an OTLP endpoint.

    Args:
        endpoint: The OTLP/HTTP traces URL (``…/v1/traces``); default: from the
            ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` / ``OTEL_EXPORTER_OTLP_ENDPOINT``
            variables, else ``http://localhost:4318/v1/traces``.
    """

    def __init__(self, endpoint: str | None = None) -> None:
        self._ids = _DerivedIds()
        self._lock = threading.Lock()
        exporter = OTLPSpanExporter(endpoint=endpoint) if endpoint else OTLPSpanExporter()
        self.exporter = _Counting(exporter)
        self.provider = TracerProvider(resource=_resource(), id_generator=self._ids)
        self.provider.add_span_processor(BatchSpanProcessor(self.exporter))
        self._tracer = self.provider.get_tracer("wopdsl", __version__)

    @property
    def endpoint(self) -> str:
        """Where spans go (as the exporter resolved it)."""
        return str(getattr(self.exporter.inner, "_endpoint", ""))

    def write(self, trace_id: int, spans: Iterable[SpanSpec]) -> None:
        """Start and end each span with its derived ids and its logged times."""
        for spec in spans:
            with self._lock:
                self._ids.trace_id, self._ids.span_id = trace_id, spec.span_id
                context = Context()
                if spec.parent_id is not None:
                    parent = SpanContext(trace_id, spec.parent_id, is_remote=False,
                                         trace_flags=_SAMPLED)
                    context = trace_api.set_span_in_context(
                        trace_api.NonRecordingSpan(parent), context)
                links = [Link(SpanContext(link.trace_id, link.span_id, is_remote=True,
                                          trace_flags=_SAMPLED), dict(link.attributes))
                         for link in spec.links]
                span = self._tracer.start_span(spec.name, context=context,
                                               kind=_KINDS[spec.kind],
                                               attributes=dict(spec.attributes), links=links,
                                               start_time=spec.start_ns)
            for event in spec.events:
                span.add_event(event.name, dict(event.attributes), timestamp=event.time_ns)
            if spec.error:
                span.set_status(Status(StatusCode.ERROR, spec.error))
            span.end(end_time=max(spec.end_ns, spec.start_ns))

    def flush(self, timeout_s: float = 30.0) -> bool:
        """Send what is queued; return whether it all went out in time."""
        return self.provider.force_flush(int(timeout_s * 1000))

    def close(self) -> None:
        """Flush and stop the exporter's thread."""
        self.provider.shutdown()


_SHARED: dict[tuple[str, ...], SpanWriter] = {}
_SHARED_LOCK = threading.Lock()
_SETTINGS = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT",
             "OTEL_EXPORTER_OTLP_TRACES_HEADERS", "OTEL_EXPORTER_OTLP_HEADERS")


def shared_writer() -> SpanWriter:
    """The process's writer for live export, one per OTLP setting (shut down at exit)."""
    key = tuple(os.environ.get(name, "") for name in _SETTINGS)
    with _SHARED_LOCK:
        writer = _SHARED.get(key)
        if writer is None:
            writer = _SHARED[key] = SpanWriter()
        return writer
