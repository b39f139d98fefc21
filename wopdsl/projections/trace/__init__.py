"""OpenTelemetry traces derived from a run's event log (``wopdsl[otel]``).

This package's ``__init__`` is light: :func:`export_configured` reads only the environment,
so a process with no OTLP endpoint set imports no OpenTelemetry module at all. The span
derivation (:mod:`~wopdsl.projections.trace.derive`), the SDK bridge
(:mod:`~wopdsl.projections.trace.otlp`) and the live follower
(:mod:`~wopdsl.projections.trace.live`) load OpenTelemetry when used.
"""

from __future__ import annotations

import logging
import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from wopdsl.projections.trace.live import LiveTrace
    from wopdsl.store.base import EventStore

__all__ = ["OTEL_MISSING", "enable", "export_configured", "live_trace", "otel_installed"]

OTEL_MISSING = "tracing needs the otel extra: pip install 'wopdsl[otel]'"
"""What to say when OpenTelemetry is not installed."""

_forced: bool | None = None


def enable(on: bool = True) -> None:
    """Turn live export on (``--otel``) or off for this process, whatever the environment."""
    global _forced
    _forced = on


def export_configured() -> bool:
    """Whether runs driven in this process export their spans live.

    True after :func:`enable`, or when ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` or
    ``OTEL_EXPORTER_OTLP_ENDPOINT`` is set, unless ``OTEL_SDK_DISABLED=true`` or
    ``OTEL_TRACES_EXPORTER=none``.
    """
    if _forced is not None:
        return _forced
    env = os.environ
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true" or \
            env.get("OTEL_TRACES_EXPORTER", "").strip().lower() == "none":
        return False
    return bool(env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "").strip()
                or env.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip())


def otel_installed() -> bool:
    """Whether the OpenTelemetry SDK and OTLP exporter can be imported (without importing)."""
    from importlib.util import find_spec

    try:
        return all(find_spec(name) is not None for name in (
            "opentelemetry.sdk", "opentelemetry.exporter.otlp.proto.http",
            "opentelemetry.semconv"))
    except ModuleNotFoundError:
        return False


def live_trace(store: EventStore, run_id: str, after: int) -> LiveTrace | None:
    """A live export of a run's spans, if :func:`export_configured`; else ``None``.

    ``trace.start()`` inside the running event loop when a drive begins, ``await
    trace.stop()`` when it ends; keep one per run handle for all its drives. With the
    ``otel`` extra missing, it logs a warning once and exports nothing.
    """
    global _warned
    if not export_configured():
        return None
    try:
        if not otel_installed():
            raise ModuleNotFoundError(OTEL_MISSING, name="opentelemetry")
        from wopdsl.projections.trace.live import LiveTrace

        return LiveTrace(store, run_id, after)
    except Exception as exc:  # tracing never stops a run: say why once, export nothing
        if not _warned:
            _warned = True
            missing = isinstance(exc, ModuleNotFoundError) and \
                (exc.name or "").startswith("opentelemetry")
            logging.getLogger("wopdsl.trace").warning(
                "%s", OTEL_MISSING if missing else f"live tracing is off: {exc}")
        return None


_warned = False
