"""``streamMode`` and ``bufferMs`` of ``GET …/runs/{runId}/events``.

v1 ``stream-modes.md``, v2 ``events.md`` §The events channel. A mode is a filter over the
run's log: ``updates`` (the default) its state changes — run transitions, terminal node
transitions, suspensions and resumptions, interrupt, approval and conversation events (the
conversation primitive's interrupt events, RFC 0005); ``messages`` the streamed model output
(``output.chunk``); ``debug`` every event; ``values`` one ``state.snapshot`` (the run's
``RunSnapshot``) after each ``updates``-tier event. Modes but ``values`` combine
(``updates,messages``: the union). ``bufferMs`` (0..5000) batches frames into ``event:
batch``. Both are checked before anything else about the request, so a bad value is a 400
whatever the ``Accept`` header asks for.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from starlette.requests import Request

from wopdsl.server.errors import ApiError
from wopdsl.server.io import want_int

__all__ = ["DEFAULT", "MAX_BUFFER_MS", "MODES", "Selection", "selection_of"]

MODES: Final = ("values", "updates", "messages", "debug")
"""Every mode this host serves (``details.supported`` of a refusal)."""

MAX_BUFFER_MS: Final = 5000
"""The largest ``bufferMs`` (stream-modes.md §Aggregation hint)."""

_PATTERN: Final = re.compile(r"values|(?:updates|messages|debug)(?:,(?:updates|messages|debug))*")
"""v2 events.md: one pattern; ``values`` never combines."""

_UPDATES: Final = frozenset({
    "run.started", "run.completed", "run.failed", "run.cancelled", "run.paused",
    "run.resumed", "run.annotated", "workspace.updated",
    "node.completed", "node.failed", "node.skipped", "node.cancelled", "node.suspended",
    "node.resumed", "node.dispatched",
    "approval.requested", "approval.received", "approval.granted", "approval.rejected",
    "clarification.requested", "clarification.resolved",
    "interrupt.requested", "interrupt.resolved",
    "conversation.opened", "conversation.exchanged", "conversation.closed",
    "artifact.created",
})
"""The ``updates`` tier (stream-modes.md §Mode-to-event mapping, with the conversation
primitive's events as interrupt events)."""

_UPDATES_DOMAINS: Final = ("eval.", "deployment.")
_MESSAGES: Final = frozenset({"output.chunk", "ai.message.chunk"})


def in_updates(event_type: str) -> bool:
    """Whether ``updates`` emits an event of ``event_type``."""
    return event_type in _UPDATES or event_type.startswith(_UPDATES_DOMAINS)


@dataclass(frozen=True, slots=True)
class Selection:
    """What a subscriber asked for: its modes and its batching window."""

    modes: frozenset[str]
    buffer_ms: int = 0
    explicit: bool = False
    """Whether the request named ``streamMode`` (the JSON form filters only then)."""

    @property
    def values(self) -> bool:
        """Whether this is the ``values`` mode (snapshots, not events)."""
        return "values" in self.modes

    def admits(self, event_type: str) -> bool:
        """Whether an event of ``event_type`` is sent (``values``: the snapshot points)."""
        if "debug" in self.modes:
            return True
        if event_type in _MESSAGES and "messages" in self.modes:
            return True
        return bool(self.modes & {"updates", "values"}) and in_updates(event_type)


DEFAULT: Final = Selection(frozenset({"updates"}))


def selection_of(request: Request) -> Selection:
    """The request's ``streamMode`` and ``bufferMs``.

    Raises:
        ApiError: 400 ``unsupported_stream_mode`` (``details.supported``: each mode) for a
            ``streamMode`` outside the pattern; 400 ``validation_error`` for a ``bufferMs``
            that is not an integer 0..5000.
    """
    query = request.query_params
    raw = query.get("streamMode")
    if raw is not None and not _PATTERN.fullmatch(raw):
        shown = raw if len(raw) <= 64 else raw[:64] + "…"
        raise ApiError(400, "unsupported_stream_mode",
                       f"streamMode {shown!r} is not served here: name one of "
                       f"{', '.join(MODES)}, or several of updates, messages and debug "
                       "separated by commas (values never combines)",
                       {"supported": list(MODES), "field": "streamMode"})
    buffer_ms = 0
    if (buffer := query.get("bufferMs")) is not None:
        buffer_ms = want_int(buffer, "bufferMs", low=0, high=MAX_BUFFER_MS)
    if raw is None:
        return Selection(DEFAULT.modes, buffer_ms)
    return Selection(frozenset(raw.split(",")), buffer_ms, explicit=True)
