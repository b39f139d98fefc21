"""Where live and after-the-fact export write spans: a :class:`SpanWriter`.

Writing only queues (a bounded :class:`~wopdsl.projections.trace._outbox.Outbox` whose
worker thread sends through :mod:`~wopdsl.projections.trace.otlp`): a run never waits for
the collector.
``OTEL_BSP_MAX_QUEUE_SIZE`` (default 2048) bounds the queue, ``OTEL_BSP_MAX_EXPORT_BATCH_SIZE``
(512) a request. The endpoint is read as the OpenTelemetry SDK reads it:
``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` as it is, else ``OTEL_EXPORTER_OTLP_ENDPOINT`` +
``/v1/traces``, else ``http://localhost:4318/v1/traces``. The process's shared writers are
closed at exit, waiting at most :data:`EXIT_GRACE_S` without progress for what is left.
"""

from __future__ import annotations

import atexit
import os
import threading
from collections.abc import Iterable
from urllib.parse import urlsplit

from wopdsl.projections.trace._outbox import Outbox
from wopdsl.projections.trace.otlp import Sender
from wopdsl.projections.trace.spans import SpanSpec
from wopdsl.projections.trace.urls import shown_url

__all__ = ["EXIT_GRACE_S", "SpanWriter", "configured_endpoint", "shared_writer"]

EXIT_GRACE_S = 2.0
"""At exit, how long the shared writers wait for a collector that makes no progress."""


def configured_endpoint() -> str:
    """The traces URL the ``OTEL_EXPORTER_OTLP_*`` variables name (as the SDK reads them)."""
    env = os.environ
    if signal := env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "").strip():
        return signal
    base = env.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip() or "http://localhost:4318"
    return f"{base.removesuffix('/')}/v1/traces"


def _positive(name: str, default: int, what: str) -> int:
    raw = os.environ.get(name, "").strip()
    try:
        value = int(raw) if raw else default
    except ValueError:
        value = 0
    if value <= 0:
        raise ValueError(f"{what} must be a positive integer ({name}={raw!r})")
    return value


class SpanWriter:
    """Writes :class:`SpanSpec` spans to an OTLP/HTTP endpoint (see the module docs).

    Args:
        endpoint: The OTLP/HTTP traces URL (``…/v1/traces``); default:
            :func:`configured_endpoint`.
        report: Tell a collector outage in one line on the ``wopdsl.trace`` logger (live
            export); off where the caller reports failure itself (``wop trace``).

    Raises:
        ValueError: an ``OTEL_BSP_*`` size is not a positive integer, or OpenTelemetry
            refused an ``OTEL_EXPORTER_OTLP_*`` setting.
    """

    def __init__(self, endpoint: str | None = None, *, report: bool = True) -> None:
        capacity = _positive("OTEL_BSP_MAX_QUEUE_SIZE", 2048, "max_queue_size")
        batch = min(_positive("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", 512, "max_export_batch_size"),
                    capacity)
        self.endpoint = endpoint or configured_endpoint()
        """Where spans go."""
        self.outbox = Outbox(Sender(self.endpoint), shown_url(self.endpoint), capacity=capacity,
                             batch=batch, report=report,
                             hide=(urlsplit(self.endpoint).password or "",))

    def write(self, trace_id: int, spans: Iterable[SpanSpec]) -> None:
        """Queue the spans of a trace (never waits; a full queue drops and counts)."""
        self.outbox.put((trace_id, spec) for spec in spans)

    def flush(self, timeout_s: float = 30.0) -> bool:
        """Wait until what was written is sent; return whether it all went out in time."""
        return self.outbox.flush(timeout_s)

    def close(self, grace_s: float = EXIT_GRACE_S) -> None:
        """Send what is left, then stop the exporter.

        Waits while the collector makes progress, at most ``grace_s`` without any; the rest
        is dropped with one line.
        """
        self.outbox.close(grace_s)


_SHARED: dict[tuple[str, ...], SpanWriter] = {}
_SHARED_LOCK = threading.Lock()
_SETTINGS = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT",
             "OTEL_EXPORTER_OTLP_TRACES_HEADERS", "OTEL_EXPORTER_OTLP_HEADERS")


def shared_writer() -> SpanWriter:
    """The process's writer for live export, one per OTLP setting (closed at exit)."""
    key = tuple(os.environ.get(name, "") for name in _SETTINGS)
    with _SHARED_LOCK:
        writer = _SHARED.get(key)
        if writer is None:
            if not _SHARED:
                atexit.register(_close_shared)
            writer = _SHARED[key] = SpanWriter()
        return writer


def _close_shared() -> None:
    """At exit: each shared writer sends what it can within :data:`EXIT_GRACE_S`."""
    with _SHARED_LOCK:
        writers = list(_SHARED.values())
        _SHARED.clear()
    for writer in writers:
        writer.close()
