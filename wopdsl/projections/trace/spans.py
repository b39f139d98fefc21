"""Spans as plain data, and the ids they get from the run and its events.

A :class:`SpanSpec` is one span derived from a run's log: name, ids, parent, timing (from the
events' timestamps), attributes, span events, links and status. Nothing here imports
OpenTelemetry: :mod:`wopdsl.projections.trace.otlp` hands specs to its SDK.

Ids are derived, never random: the trace id from the run id, a span id from the run id and
the ``eventId`` of the event that opened the span. Exporting a run twice, or from two
processes (a resumed run), gives the same ids, so a backend sees one trace and no duplicate.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Literal

__all__ = ["AttrValue", "SpanEvent", "SpanLink", "SpanSpec", "span_id", "trace_id"]

AttrValue = str | bool | int | float | list[str]
"""An attribute value OpenTelemetry accepts (the subset spans here use)."""


def _digest(*parts: str) -> bytes:
    return hashlib.sha256("\0".join(parts).encode("utf-8")).digest()


def trace_id(run_id: str) -> int:
    """The 128-bit trace id of a run (never 0)."""
    return int.from_bytes(_digest("wopdsl.trace", run_id)[:16], "big") or 1


def span_id(run_id: str, event_id: str) -> int:
    """The 64-bit id of the span an event of a run opens (never 0)."""
    return int.from_bytes(_digest("wopdsl.span", run_id, event_id)[:8], "big") or 1


@dataclass(frozen=True, slots=True)
class SpanEvent:
    """A point in time on a span (a human post, an interrupt, a retry …)."""

    name: str
    time_ns: int
    attributes: dict[str, AttrValue] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class SpanLink:
    """A link to a span of another trace (a fork's root to its source run's root)."""

    trace_id: int
    span_id: int
    attributes: dict[str, AttrValue] = field(default_factory=dict)


@dataclass(slots=True)
class SpanSpec:
    """One span derived from the log (see the module docs)."""

    name: str
    span_id: int
    parent_id: int | None
    """``None`` for the run's root span."""
    start_ns: int
    end_ns: int = 0
    kind: Literal["internal", "client"] = "internal"
    attributes: dict[str, AttrValue] = field(default_factory=dict)
    events: list[SpanEvent] = field(default_factory=list)
    links: list[SpanLink] = field(default_factory=list)
    error: str | None = None
    """Set when the span failed: its status is ERROR with this description."""
    released_at: int = -1
    """Sequence of the event that completed the span (what a resumed export compares)."""
