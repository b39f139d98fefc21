"""``GET /v1/runs/{runId}/events``: Server-Sent Events, or JSON when SSE is not asked for.

SSE frames are ``id: <sequence>``, ``event: <type>``, ``data: <RunEventDoc>``. A client
resumes with ``Last-Event-ID: <sequence>`` and gets exactly the events after it. An idle
stream gets a ``: keepalive`` comment every ``Limits.keepalive_s`` seconds (at most 15). The
stream ends after the run's terminal event; a subscriber too slow to keep up is dropped
with a comment saying so, and reconnects with ``Last-Event-ID``.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from typing import Any, cast

from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from wopdsl import EventStore
from wopdsl.server.feed import TERMINAL_TYPES, Feeds, Frame, Subscriber
from wopdsl.server.io import JSONResponse, want_int

__all__ = ["events_json", "poll", "stream"]

_DROPPED = (b": dropped: this stream fell too far behind; reconnect with Last-Event-ID "
            b"to continue\n\n")


def wants_sse(request: Request) -> bool:
    """Whether the client asked for ``text/event-stream``."""
    return "text/event-stream" in request.headers.get("accept", "")


def cursor_of(request: Request) -> int:
    """The sequence to resume after: ``Last-Event-ID`` (or ``lastSequence``/``since``)."""
    raw = request.headers.get("last-event-id")
    if raw is not None and raw.strip():
        return want_int(raw.strip(), "Last-Event-ID", low=-1)
    query = request.query_params
    raw = query.get("lastSequence", query.get("since"))
    return -1 if raw is None else want_int(raw, "lastSequence", low=-1)


def stream(feeds: Feeds, run_id: str, after: int,
           data: Callable[[Frame], bytes] | None = None,
           name: Callable[[str], str] | None = None) -> Response:
    """Return the SSE response (registers the subscriber first: 503 when full).

    ``data`` renders a frame's ``data:`` line (default: the stored ``RunEventDoc``; the v2
    API binds its run id) and ``name`` its ``event:`` line from the stored type (the v2 API:
    the codemap's v2 name).
    """
    subscriber = feeds.subscribe(run_id)
    return StreamingResponse(
        _frames(subscriber, after, feeds.limits.keepalive_s, data or _stored,
                name or _same),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no",
                 "Connection": "keep-alive"})


def _stored(frame: Frame) -> bytes:
    return frame.data


def _same(event_type: str) -> str:
    return event_type


async def _frames(subscriber: Subscriber, after: int, keepalive: float,
                  data: Callable[[Frame], bytes], name: Callable[[str], str]
                  ) -> AsyncIterator[bytes]:
    try:
        yield b"retry: 1000\n\n"
        async for batch in subscriber.batches(after, idle=keepalive):
            if batch is None:
                yield b": keepalive\n\n"
            else:
                yield b"".join(b"id: %d\nevent: %s\ndata: %s\n\n" % (
                    frame.sequence, name(frame.type).encode(), data(frame)) for frame in batch)
        if subscriber.dropped:
            yield _DROPPED
    finally:
        subscriber.close()


async def events_json(store: EventStore, run_id: str, after: int, status: str) -> JSONResponse:
    """The events after ``after`` as one JSON document (for clients that do not ask SSE)."""
    events = await store.call(store.read, run_id, after)
    return JSONResponse(await _page(store, run_id, events, after, status, with_run=True))


async def poll(feeds: Feeds, store: EventStore, run_id: str, after: int, timeout: float,
               status_of: Callable[[], Awaitable[str]]) -> JSONResponse:
    """Long poll: the events after ``after``, waiting up to ``timeout`` s for the first one."""
    events = await store.call(store.read, run_id, after)
    if not events and not await _ended(store, run_id) and timeout > 0:
        subscriber = feeds.subscribe(run_id)
        try:
            gen = cast(AsyncGenerator[list[Frame] | None, None],
                       subscriber.batches(after, idle=timeout))
            try:
                first = await asyncio.wait_for(anext(gen), timeout + 1)
            except (StopAsyncIteration, TimeoutError):
                first = None
            finally:
                await gen.aclose()
            if first is not None:
                events = await store.call(store.read, run_id, after)
        finally:
            subscriber.close()
    return JSONResponse(await _page(store, run_id, events, after, await status_of(),
                                    with_run=False))


async def _page(store: EventStore, run_id: str, events: list[Any], after: int, status: str,
                *, with_run: bool) -> dict[str, Any]:
    last = events[-1]["sequence"] if events else max(after, -1)
    terminal = status in ("completed", "failed", "cancelled")
    caught_up = last >= await store.call(store.last_sequence, run_id)
    page: dict[str, Any] = {"events": events, "isComplete": terminal and caught_up,
                            "lastEventSeq": last}
    if with_run:
        page = {"runId": run_id, **page, "runStatus": status, "isTerminal": terminal}
    return page


async def _ended(store: EventStore, run_id: str) -> bool:
    last = await store.call(store.last_sequence, run_id)
    tail = await store.call(store.read, run_id, last - 1) if last >= 0 else []
    return bool(tail) and tail[-1]["type"] in TERMINAL_TYPES
