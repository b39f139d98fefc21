"""A council run as AG-UI 1.0 events (DESIGN.md §26): a pure projection of its event log.

:class:`AguiProjection` folds a run's events and turns each into the AG-UI events a chat
front end renders: posts as text messages attributed to their members (streamed tokens as
content deltas), tool calls as ``TOOL_CALL_*``, the rooms, roster, decisions and status as
shared state (``STATE_SNAPSHOT`` then JSON Patch ``STATE_DELTA``), and the end — the run's, or
the people it waits for — as ``RUN_FINISHED``/``RUN_ERROR``. It writes nothing: the host
(:mod:`wopdsl.server.agui`) frames what it returns, so a reconnect replays the same stream.
Events are plain JSON documents in the protocol's camelCase (the host validates them with the
official ``ag-ui-protocol`` types).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

from wopdsl.projections.agui.messages import Messages
from wopdsl.projections.agui.outcome import (
    APPROVAL_SCHEMA,
    TURN_SCHEMA,
    ending,
    interrupt_id,
    open_interrupts,
)
from wopdsl.projections.agui.shared import json_patch, shared_state
from wopdsl.state import CouncilState

__all__ = ["APPROVAL_SCHEMA", "PROTOCOL_VERSION", "TURN_SCHEMA", "AguiProjection",
           "interrupt_id", "json_patch", "open_interrupts", "shared_state", "thread_messages"]

Doc = dict[str, Any]
Event = Mapping[str, Any]
"""A stored event (``RunEventDoc``)."""

PROTOCOL_VERSION: Final = "1.0"
"""The AG-UI version these events follow (``RUN_STARTED.protocolVersion``)."""


class AguiProjection:
    """One council run projected for one AG-UI stream.

    Args:
        thread_id: The AG-UI thread the run belongs to.

    Example:
        >>> projection = AguiProjection("thread-1")
        >>> projection.ending("run-1") is None  # nothing folded: nothing ends
        True
    """

    def __init__(self, thread_id: str) -> None:
        self.thread_id = thread_id
        self.state = CouncilState()
        """The run's fold, as far as it was fed."""
        self.messages = Messages()
        self._shared: Doc | None = None
        self._usage: dict[tuple[str, str], Doc] = {}

    def feed(self, event: Event, *, live: bool = True) -> list[Doc]:
        """Fold ``event``; return its AG-UI events (``live=False``: a prefix the client has).

        Usage counts only for live events: an AG-UI run reports the model calls it saw.
        """
        if not self.messages.run_id:
            self.messages.run_id = str(event.get("runId", ""))
        out = self.messages.feed(event, self.state)
        self.state.apply(event)  # type: ignore[arg-type]
        if live and event["type"] == "provider.usage":
            self._count(event.get("payload") or {})
        return out

    def started(self, run_id: str) -> Doc:
        """The ``RUN_STARTED`` of the AG-UI run ``run_id``."""
        return {"type": "RUN_STARTED", "threadId": self.thread_id, "runId": run_id,
                "protocolVersion": PROTOCOL_VERSION}

    def step(self, events: Iterable[Event], run_id: str) -> tuple[list[Doc], bool]:
        """Project a batch of live events; return them and whether the AG-UI run ended.

        The batch's messages and tool calls, then the state's change, then — when the
        council run ended or now waits for a person — what ends the AG-UI run ``run_id``.
        """
        out: list[Doc] = []
        for event in events:
            out += self.feed(event)
        out += self.state_events()
        end = self.ending(run_id)
        return out + end, bool(end)

    def feed_all(self, events: Iterable[Event]) -> None:
        """Fold events the client already has (nothing is returned)."""
        for event in events:
            self.feed(event, live=False)

    def state_events(self) -> list[Doc]:
        """``STATE_SNAPSHOT`` the first time, then a ``STATE_DELTA`` when the state changed."""
        if self.state.last_sequence < 0:
            return []
        doc = shared_state(self.state, self.thread_id)
        old, self._shared = self._shared, doc
        if old is None:
            return [{"type": "STATE_SNAPSHOT", "snapshot": doc}]
        ops = json_patch(old, doc)
        return [{"type": "STATE_DELTA", "delta": ops}] if ops else []

    def ending(self, run_id: str) -> list[Doc]:
        """What ends the AG-UI run ``run_id`` now (open messages first), or ``[]``."""
        end = ending(self.state, self.thread_id, run_id, list(self._usage.values()))
        if end is None:
            return []
        held = self.messages.release_all() if self.state.terminal else []
        return [*held, *self.messages.close_all(), *self.state_events(), end]

    def _count(self, payload: Doc) -> None:
        key = (str(payload.get("provider", "")), str(payload.get("model", "")))
        entry = self._usage.setdefault(key, {"provider": key[0], "model": key[1],
                                             "inputTokens": 0, "outputTokens": 0,
                                             "totalTokens": 0})
        for field in ("inputTokens", "outputTokens", "totalTokens"):
            value = payload.get(field)
            if isinstance(value, int):
                entry[field] += value


def thread_messages(runs: Iterable[tuple[Iterable[Event], Doc | None]]) -> list[Doc]:
    """The conversation of a thread's council runs as AG-UI messages (``MESSAGES_SNAPSHOT``).

    Args:
        runs: Each run's events, with the user message that started it (or ``None``).
    """
    messages: list[Doc] = []
    for events, opening in runs:
        projection = AguiProjection("")
        projection.feed_all(events)
        if opening is not None:
            messages.append(opening)
        messages += projection.messages.snapshot
    return messages
