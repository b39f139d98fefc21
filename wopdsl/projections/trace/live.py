"""Export a run's spans live while this process drives it (``wop run``, ``serve``, notebooks).

A :class:`Run <wopdsl.run.Run>` handle keeps one :class:`LiveTrace` for all its drives
(start, each continuation after input): it folds the log so far once (exporting nothing of it
that an earlier process already saw), then follows the run's events and hands each span to
the writer as the event that completes it lands. A drive that begins while the previous one
is still stopping shares the same fold, so no span is handed over twice. :meth:`LiveTrace.stop`
catches up and returns the last sequence it saw; it never waits for the collector (the
writer sends on its own thread, see :mod:`~wopdsl.projections.trace.writer`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from wopdsl.projections.trace.derive import TraceProjection
from wopdsl.projections.trace.writer import SpanWriter, shared_writer
from wopdsl.protocol.envelope import RunEventDoc
from wopdsl.store.base import EventStore

__all__ = ["LiveTrace"]

_log = logging.getLogger("wopdsl.trace")


class LiveTrace:
    """Follows one run and exports its spans (see the module docs).

    Args:
        store: The run's store.
        run_id: The run.
        after: The last sequence a previous export of this run saw (-1: none).
        writer: Where spans go (default: the process's shared OTLP writer).
    """

    def __init__(self, store: EventStore, run_id: str, after: int = -1,
                 writer: SpanWriter | None = None) -> None:
        self._store = store
        self._run_id = run_id
        self._writer = writer or shared_writer()
        self._projection = TraceProjection(export_after=after)
        self._task: asyncio.Task[None] | None = None
        self._drives = 0
        self._folded = False

    def start(self) -> LiveTrace:
        """Follow the run for one more drive (in the running loop; pair with :meth:`stop`)."""
        self._drives += 1
        if not self._folded:
            self._folded = True
            if not self._store.blocking:  # a blocking store is read by the follower instead
                self._feed(self._store.read(self._run_id))
        if self._task is None:
            self._task = asyncio.ensure_future(self._follow())
        return self

    async def _follow(self) -> None:
        async for event in self._store.subscribe(self._run_id, self._projection.last_sequence):
            self._feed([event])

    def _feed(self, events: list[RunEventDoc]) -> None:
        projection = self._projection
        for event in events:
            if event["sequence"] <= projection.last_sequence:
                continue  # the follower and a catch-up may both read an event: fold it once
            spans = projection.apply(event)
            if spans:
                try:
                    self._writer.write(projection.trace_id, spans)
                except Exception:  # never let tracing break a run
                    _log.exception("could not hand spans of run %s to OpenTelemetry",
                                   self._run_id)

    async def stop(self) -> int:
        """End one drive's follow: catch up with the log; return the last sequence seen.

        The last drive to stop ends the follower. Spans go out on the writer's own thread:
        this never waits for the collector.
        """
        self._drives -= 1
        task = self._task
        if self._drives <= 0 and task is not None:
            self._drives, self._task = 0, None
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        store = self._store
        self._feed(await store.call(store.read, self._run_id, self._projection.last_sequence))
        return self._projection.last_sequence
