"""Fan a run's events out to many subscribers: one store reader per run, bounded buffers.

A :class:`Feeds` keeps one :class:`RunFeed` per run that has subscribers. The feed follows
the store once (``EventStore.subscribe``) and pushes each event, encoded once, into every
subscriber's bounded buffer. A subscriber first catches up from the store, then drains its
buffer, skipping what it already sent: registration before the catch-up read means no
event is missed, and the sequence check means none is sent twice. A subscriber whose buffer
fills (a slow reader) is dropped rather than buffered without bound; it reconnects with
``Last-Event-ID`` and loses nothing.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Final

from wopdsl import EventStore
from wopdsl.server.config import Limits
from wopdsl.server.errors import ApiError
from wopdsl.server.io import dumps

__all__ = ["TERMINAL_TYPES", "Feeds", "Frame", "Subscriber"]

TERMINAL_TYPES: Final = frozenset({"run.completed", "run.failed", "run.cancelled"})
"""Event types after which a run appends nothing more."""

_log = logging.getLogger("wopdsl.server")

_CATCH_UP_BATCH: Final = 256
"""Stored events sent per write when a subscriber catches up."""


@dataclass(frozen=True, slots=True)
class Frame:
    """One event, encoded once for every subscriber."""

    sequence: int
    type: str
    data: bytes
    """The ``RunEventDoc`` as JSON."""

    @property
    def terminal(self) -> bool:
        """Whether this is the run's last event."""
        return self.type in TERMINAL_TYPES


def encode(event: dict[str, object]) -> Frame:
    """Encode a stored event as a frame."""
    return Frame(int(event["sequence"]), str(event["type"]),  # type: ignore[call-overload]
                 dumps(event))


class Subscriber:
    """One reader of a run's events (an SSE stream or a long poll)."""

    def __init__(self, feed: RunFeed, capacity: int) -> None:
        self.feed = feed
        self._buffer: collections.deque[Frame] = collections.deque()
        self._capacity = capacity
        self._ready = asyncio.Event()
        self.dropped = False
        """Whether the subscriber fell ``capacity`` events behind and was dropped."""
        self._idle = _IdleTimer(self._ready)

    def push(self, frame: Frame) -> None:
        """Buffer ``frame`` (called by the feed); drop the subscriber when it is full."""
        if self.dropped:
            return
        if len(self._buffer) >= self._capacity:
            self.dropped = True
            self._buffer.clear()
            self.feed.remove(self)
        else:
            self._buffer.append(frame)
        self._ready.set()

    async def batches(self, after: int, idle: float | None = None,
                      admits: Callable[[str], bool] | None = None
                      ) -> AsyncIterator[list[Frame] | None]:
        """Yield the frames after sequence ``after``, in batches: stored ones, then live ones.

        Each batch holds what is ready at once (one write to the client, not one per
        event). Yields ``None`` after ``idle`` seconds without an event (a keep-alive tick).
        ``admits`` keeps the frames of the event types it admits (the others are skipped).
        Ends after the run's terminal event, or when the subscriber is dropped or stopped.
        """
        store, run_id = self.feed.store, self.feed.run_id
        cursor = after
        if self.dropped:
            return
        # Catch up from the store once the feed follows it from a known point (this
        # subscriber is registered already: nothing appended since is lost).
        await self.feed.following.wait()
        if self.dropped:
            return
        events = await store.call(store.read, run_id, cursor)
        ended = bool(events) and events[-1]["type"] in TERMINAL_TYPES
        if events:
            cursor = events[-1]["sequence"]
        stored = [encode(event) for event in events  # type: ignore[arg-type]
                  if admits is None or admits(event["type"])]
        # No local keeps the stored events once sent: the generator lives as long as the
        # stream, and a run's first events (its declaration) are the largest.
        del events
        while stored:
            yield stored[:_CATCH_UP_BATCH]
            del stored[:_CATCH_UP_BATCH]
        if ended or await self._ended(cursor):
            return
        while not self.dropped:
            batch = []
            ended = False
            while self._buffer:
                frame = self._buffer.popleft()
                if frame.sequence <= cursor:
                    continue
                cursor = frame.sequence
                if admits is None or admits(frame.type):
                    batch.append(frame)
                if frame.terminal:
                    ended = True
                    break
            if batch:
                yield batch
            if ended or self.dropped:
                return
            self._ready.clear()
            if self._buffer:
                continue
            if idle is None:
                await self._ready.wait()
            elif await self._idle.wait(idle) and not self._buffer and not self.dropped:
                yield None

    async def _ended(self, cursor: int) -> bool:
        """Whether the run ended at or before ``cursor`` (nothing more will come)."""
        if self.feed.ended_at is not None:
            return cursor >= self.feed.ended_at
        store, run_id = self.feed.store, self.feed.run_id
        last = await store.call(store.last_sequence, run_id)
        if last < 0 or cursor < last:
            return False
        tail = await store.call(store.read, run_id, last - 1)
        return bool(tail) and tail[-1]["type"] in TERMINAL_TYPES

    def stop(self) -> None:
        """End the frames (the host stops, the client went away, the store failed)."""
        self.dropped = True
        self._ready.set()

    def close(self) -> None:
        """Stop receiving (idempotent)."""
        self._idle.cancel()
        self.feed.remove(self)


class _IdleTimer:
    """Wakes a subscriber that waited ``idle`` seconds for an event (a keep-alive is due).

    One timer per subscriber, moved on lazily: a wait that ends with an event leaves it
    armed, and when it fires during a later wait it re-arms for that wait's own deadline.
    A busy stream so costs no timer per event (a per-wait timeout would create and cancel
    one for every event of every stream).
    """

    __slots__ = ("_deadline", "_expired", "_handle", "_ready", "_waiting")

    def __init__(self, ready: asyncio.Event) -> None:
        self._ready = ready
        self._deadline = 0.0
        self._waiting = False
        self._expired = False
        self._handle: asyncio.TimerHandle | None = None

    async def wait(self, idle: float) -> bool:
        """Wait for ``ready``; return whether ``idle`` seconds passed first."""
        loop = asyncio.get_running_loop()
        self._deadline = loop.time() + idle
        if self._handle is None:
            self._handle = loop.call_at(self._deadline, self._fire, self._deadline)
        self._waiting = True
        try:
            await self._ready.wait()
        finally:
            self._waiting = False
        expired, self._expired = self._expired, False
        return expired

    def _fire(self, deadline: float) -> None:
        self._handle = None
        if not self._waiting:
            return
        if deadline == self._deadline:
            self._expired = True
            self._ready.set()
        else:  # Armed for an earlier wait: this wait is due later.
            loop = asyncio.get_running_loop()
            self._handle = loop.call_at(self._deadline, self._fire, self._deadline)

    def cancel(self) -> None:
        """Disarm (the subscriber stopped)."""
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None


class RunFeed:
    """Follows one run in the store and pushes its events to the subscribers."""

    def __init__(self, feeds: Feeds, store: EventStore, run_id: str) -> None:
        self.feeds = feeds
        self.store = store
        self.run_id = run_id
        self.subscribers: set[Subscriber] = set()
        self.ended_at: int | None = None
        """The terminal event's sequence, once the feed has seen it."""
        self.following = asyncio.Event()
        """Set once the feed follows the store from a known sequence (subscribers catch up
        from the store only then, so that no event falls between the two)."""
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Start following after the store's last sequence (read off the loop)."""
        self._task = asyncio.ensure_future(self._pump())

    async def _pump(self) -> None:
        try:
            after = await self.store.call(self.store.last_sequence, self.run_id)
            self.following.set()
            async for event in self.store.subscribe(self.run_id, after):
                frame = encode(event)  # type: ignore[arg-type]
                for subscriber in list(self.subscribers):
                    subscriber.push(frame)
                if frame.terminal:
                    self.ended_at = frame.sequence
                    return
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # The store failed: end every stream; clients reconnect.
            _log.warning("event feed of run %s stopped: %s", self.run_id, type(exc).__name__)
            for subscriber in list(self.subscribers):
                subscriber.stop()
        finally:
            self.following.set()

    def remove(self, subscriber: Subscriber) -> None:
        """Unregister ``subscriber``; stop following once nobody listens."""
        if subscriber in self.subscribers:
            self.subscribers.discard(subscriber)
            self.feeds.count -= 1
        if not self.subscribers:
            self.feeds.forget(self)

    async def stop(self) -> None:
        """Stop following."""
        task, self._task = self._task, None
        if task is not None and not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task


class Feeds:
    """Every run feed of a host, with the subscriber caps of :class:`Limits`."""

    def __init__(self, store: EventStore, limits: Limits) -> None:
        self.store = store
        self.limits = limits
        self.count = 0
        """Open subscribers across all runs."""
        self._feeds: dict[str, RunFeed] = {}

    def subscribe(self, run_id: str) -> Subscriber:
        """Register a subscriber on ``run_id``.

        Raises:
            ApiError: 503 when the host or the run has as many subscribers as it allows.
        """
        limits = self.limits
        if self.count >= limits.max_subscribers:
            raise ApiError(503, "too_many_subscribers",
                           f"this host already serves {self.count} event streams (its limit)",
                           {"limit": "maxSubscribers", "value": limits.max_subscribers},
                           headers={"Retry-After": "5"})
        feed = self._feeds.get(run_id)
        if feed is not None and len(feed.subscribers) >= limits.max_subscribers_per_run:
            raise ApiError(503, "too_many_subscribers",
                           f"run {run_id} already has {len(feed.subscribers)} event streams "
                           "(the limit per run)",
                           {"limit": "maxSubscribersPerRun",
                            "value": limits.max_subscribers_per_run},
                           headers={"Retry-After": "5"})
        if feed is None:
            feed = self._feeds[run_id] = RunFeed(self, self.store, run_id)
            feed.start()
        subscriber = Subscriber(feed, limits.subscriber_buffer)
        feed.subscribers.add(subscriber)
        self.count += 1
        return subscriber

    def forget(self, feed: RunFeed) -> None:
        """Drop an idle feed."""
        if self._feeds.get(feed.run_id) is feed:
            del self._feeds[feed.run_id]
            if feed._task is not None:
                feed._task.cancel()

    async def close(self) -> None:
        """Stop every feed (host shutdown)."""
        feeds, self._feeds = list(self._feeds.values()), {}
        for feed in feeds:
            for subscriber in list(feed.subscribers):
                subscriber.stop()
            await feed.stop()
