"""``GET /v1/runs/{runId}/events``: Server-Sent Events, or JSON when SSE is not asked for.

SSE frames are ``id: <sequence>``, ``event: <type>``, ``data: <RunEventDoc>``, for the events
the subscriber's ``streamMode`` admits (:mod:`.modes`; ``updates`` by default); ``values``
sends ``event: state.snapshot`` frames and ``bufferMs`` groups events into ``event: batch``
frames (``id:`` the highest sequence in them). A client resumes with ``Last-Event-ID:
<sequence>`` and gets exactly the events after it. An idle stream gets a ``: keepalive``
comment every ``Limits.keepalive_s`` seconds (at most 15). The stream ends after the run's
terminal event; a subscriber too slow to keep up is dropped with a comment saying so, and
reconnects with ``Last-Event-ID``.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any, cast

import orjson
from starlette.requests import Request
from starlette.responses import Response

from wopdsl import EventStore
from wopdsl.server.feed import TERMINAL_TYPES, Feeds, Frame, Subscriber
from wopdsl.server.io import JSONResponse, dumps, want_int
from wopdsl.server.modes import DEFAULT, Selection, in_updates
from wopdsl.server.streaming import SubscriberStream
from wopdsl.state import CouncilState, build_snapshot

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


def stream(feeds: Feeds, run_id: str, after: int, selection: Selection = DEFAULT, *,
           data: Callable[[Frame], bytes] | None = None,
           name: Callable[[str], str] | None = None,
           snapshot: Callable[[CouncilState], dict[str, Any]] | None = None) -> Response:
    """Return the SSE response (registers the subscriber first: 503 when full).

    ``selection`` is the subscriber's ``streamMode``/``bufferMs`` (:mod:`.modes`). ``data``
    renders a frame's ``data:`` line (default: the stored ``RunEventDoc``; the v2 API binds
    its run id), ``name`` its ``event:`` line from the stored type (the v2 API: the codemap's
    v2 name) and ``snapshot`` a ``values`` frame from the run's state (default: the v1
    ``RunSnapshot``).
    """
    subscriber = feeds.subscribe(run_id)
    render = _Render(data or _stored, name or _same, snapshot or build_snapshot)
    return SubscriberStream(
        subscriber, _frames(subscriber, after, feeds.limits.keepalive_s, selection, render),
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no",
                 "Connection": "keep-alive"})


def _stored(frame: Frame) -> bytes:
    return frame.data


def _same(event_type: str) -> str:
    return event_type


@dataclass(frozen=True, slots=True)
class _Render:
    data: Callable[[Frame], bytes]
    name: Callable[[str], str]
    snapshot: Callable[[CouncilState], dict[str, Any]]

    def events(self, frames: list[Frame]) -> bytes:
        """One frame per event: ``id: <sequence>``, ``event: <type>``, ``data: <event>``."""
        return b"".join(_frame(f.sequence, self.name(f.type).encode(), self.data(f))
                        for f in frames)

    def batch(self, frames: list[Frame]) -> bytes:
        """One ``event: batch`` frame; its ``id:`` is the highest sequence in it."""
        return _frame(frames[-1].sequence, b"batch",
                      b"[" + b",".join(self.data(f) for f in frames) + b"]")


def _frame(sequence: int, event: bytes, data: bytes) -> bytes:
    return b"id: %d\nevent: %s\ndata: %s\n\n" % (sequence, event, data)


async def _frames(subscriber: Subscriber, after: int, keepalive: float,
                  selection: Selection, render: _Render) -> AsyncGenerator[bytes, None]:
    try:
        yield b"retry: 1000\n\n"
        if selection.values:
            async for chunk in _values(subscriber.batches(after, idle=keepalive), subscriber,
                                       after, render):
                yield chunk
        else:
            admits = None if "debug" in selection.modes else selection.admits
            source = subscriber.batches(after, idle=keepalive, admits=admits)
            if selection.buffer_ms:
                async for window in windows(source, selection.buffer_ms / 1000):
                    yield _KEEPALIVE if window is None else render.batch(window)
            else:
                async for batch in source:
                    yield _KEEPALIVE if batch is None else render.events(batch)
                    del batch  # Not kept while the stream waits (a catch-up is large).
        if subscriber.dropped:
            yield _DROPPED
    finally:
        subscriber.close()


_KEEPALIVE = b": keepalive\n\n"


async def _values(source: AsyncIterator[list[Frame] | None], subscriber: Subscriber,
                  after: int, render: _Render) -> AsyncIterator[bytes]:
    """``values``: a ``state.snapshot`` after each ``updates``-tier event.

    The snapshot is the run folded to that event; a resumed stream first gets the snapshot
    at its ``Last-Event-ID``.
    """
    state = CouncilState()
    if after >= 0:
        store, run_id = subscriber.feed.store, subscriber.feed.run_id
        state.apply_all(e for e in await store.call(store.read, run_id)
                        if e["sequence"] <= after)
        yield _frame(after, b"state.snapshot", dumps(render.snapshot(state)))
    async for batch in source:
        if batch is None:
            yield _KEEPALIVE
            continue
        out = []
        for frame in batch:
            state.apply(orjson.loads(frame.data))
            if in_updates(frame.type):
                out.append(_frame(frame.sequence, b"state.snapshot",
                                  dumps(render.snapshot(state))))
        if out:
            yield b"".join(out)


async def windows(source: AsyncIterator[list[Frame] | None], window_s: float
                  ) -> AsyncIterator[list[Frame] | None]:
    """Regroup ``source``'s frames into windows of at most ``window_s`` seconds.

    A window is flushed when its time is up, at once after a terminal event or a
    ``node.suspended``, and when the source ends. ``None`` (a keep-alive tick) passes
    through while nothing is pending.
    """
    queue: asyncio.Queue[list[Frame] | _End | None] = asyncio.Queue()

    async def pump() -> None:
        try:
            async for item in source:
                queue.put_nowait(item)
        finally:
            queue.put_nowait(_END)

    task = asyncio.ensure_future(pump())
    loop = asyncio.get_running_loop()
    pending: list[Frame] = []
    deadline: float | None = None
    try:
        while True:
            wait = None if deadline is None else max(0.0, deadline - loop.time())
            try:
                item = await asyncio.wait_for(queue.get(), wait)
            except TimeoutError:
                item = []
                deadline = loop.time()
            if isinstance(item, _End):
                if pending:
                    yield pending
                return
            if item is None:
                if not pending:
                    yield None
                continue
            for frame in item:
                pending.append(frame)
                if frame.terminal or frame.type == "node.suspended":
                    yield pending
                    pending, deadline = [], None
            if pending and deadline is not None and loop.time() >= deadline:
                yield pending
                pending, deadline = [], None
            elif pending and deadline is None:
                deadline = loop.time() + window_s
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


class _End:
    """The source of :func:`windows` ended."""


_END = _End()


async def events_json(store: EventStore, run_id: str, after: int, status: str,
                      selection: Selection = DEFAULT) -> JSONResponse:
    """The events after ``after`` as one JSON document (for clients that do not ask SSE).

    Every event, or (a ``streamMode`` named) those the mode admits.
    """
    events = await store.call(store.read, run_id, after)
    if selection.explicit:
        events = [e for e in events if selection.admits(e["type"])]
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
