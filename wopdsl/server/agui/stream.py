"""The SSE body of one AG-UI run: the projection of a council run's events, framed.

Every event the projection returns is parsed with the official ``ag-ui-protocol`` types and
encoded with its ``EventEncoder`` (``data: <event JSON>``); keep-alive comments fill idle
times. The live events come from the host's event feed (:mod:`wopdsl.server.feed`: one store
reader per run, bounded buffers): a subscriber that falls too far behind is dropped, and its
AG-UI run ends with ``RUN_ERROR`` ``STREAM_DROPPED`` — the client sends the thread's input
again and gets a ``MESSAGES_SNAPSHOT`` of where the council is.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator
from dataclasses import dataclass
from typing import Any, Final

import orjson
from ag_ui.core import Event
from ag_ui.encoder import EventEncoder
from pydantic import TypeAdapter

from wopdsl import EventStore
from wopdsl.projections.agui import AguiProjection, thread_messages
from wopdsl.server.feed import Subscriber

__all__ = ["Plan", "frames"]

_log = logging.getLogger("wopdsl.server")

_EVENT: Final = TypeAdapter(Event)
_ENCODER: Final = EventEncoder()
_KEEPALIVE: Final = b": keepalive\n\n"


@dataclass(frozen=True, slots=True)
class Plan:
    """What one AG-UI run streams."""

    thread: str
    agui_run: str
    runs: list[str]
    """The thread's council runs, oldest first; the last one is streamed."""
    after: int
    """The last sequence of the council run the client has seen (-1: none)."""
    replay: bool
    """Restate the thread first (``MESSAGES_SNAPSHOT``): a reconnect or a replay."""
    settled: bool
    """Nothing was submitted: a run that has ended or waits ends the AG-UI run at once."""


def encode(doc: dict[str, Any]) -> bytes:
    """One event, checked with the official types, as an SSE frame."""
    return _ENCODER.encode(_EVENT.validate_python(doc)).encode()


async def frames(store: EventStore, subscriber: Subscriber, plan: Plan,
                 keepalive: float) -> AsyncGenerator[bytes, None]:
    """The frames of ``plan``'s AG-UI run (``subscriber`` follows its council run)."""
    projection = AguiProjection(plan.thread)
    current = plan.runs[-1]
    try:
        yield encode(projection.started(plan.agui_run))
        if plan.replay:
            yield encode({"type": "MESSAGES_SNAPSHOT",
                          "messages": await _messages(store, plan, current)})
        if plan.after >= 0:
            prefix = await store.call(store.read, current, -1)
            projection.feed_all(e for e in prefix if e["sequence"] <= plan.after)
        # A client joining mid-stream gets the messages being written so far; one that
        # continues saw them end with its previous run.
        joined = projection.messages.reopen() if plan.replay else \
            projection.messages.close_all()[:0]
        out = [*joined, *projection.state_events()]
        if plan.settled:
            out += projection.ending(plan.agui_run)
        yield b"".join(encode(doc) for doc in out)
        if out and out[-1]["type"] in ("RUN_FINISHED", "RUN_ERROR"):
            return
        async for batch in subscriber.batches(plan.after, idle=keepalive):
            if batch is None:
                yield _KEEPALIVE
                continue
            docs, ended = projection.step((orjson.loads(f.data) for f in batch),
                                          plan.agui_run)
            yield b"".join(encode(doc) for doc in docs)
            if ended:
                return
        yield encode({"type": "RUN_ERROR", "code": "STREAM_DROPPED",
                      "message": "this stream fell too far behind the council and was "
                                 "dropped; send the thread's input again to continue"})
    except Exception as exc:  # Never a bare broken stream: the client is told, the log says.
        _log.error("AG-UI stream of thread run %s failed: %s", current, type(exc).__name__,
                   exc_info=exc)
        yield encode({"type": "RUN_ERROR", "code": "internal_error",
                      "message": "the host failed to project this run; it has been logged"})
    finally:
        subscriber.close()


async def _messages(store: EventStore, plan: Plan, current: str) -> list[dict[str, Any]]:
    """The thread's conversation so far (the current run up to ``after``)."""
    runs = []
    for run_id in plan.runs:
        events = await store.call(store.read, run_id, -1)
        if run_id == current:
            events = [e for e in events if e["sequence"] <= plan.after]
        runs.append((events, _opening(events)))
    return thread_messages(runs)


def _opening(events: list[Any]) -> dict[str, Any] | None:
    """The user message that started a run (``run.started`` ``metadata.request.agui``)."""
    if not events or events[0]["type"] != "run.started":
        return None
    payload = events[0]["payload"]
    agui = ((payload.get("metadata") or {}).get("request") or {}).get("agui") or {}
    message = agui.get("messageId")
    if not isinstance(message, str):
        return None
    return {"id": message, "role": "user", "content": str((payload.get("inputs") or {})
                                                          .get("task", ""))}
