"""Export a run's spans live while this process drives it (``wop run``, ``serve``, notebooks).

``Run`` starts a :class:`LiveTrace` when :func:`~wopdsl.projections.trace.export_configured`
says so: it folds the log so far (exporting nothing of it that an earlier process already
saw), then follows the run's events and writes each span as the event that completes it
lands. :meth:`LiveTrace.stop` catches up, flushes the exporter (off the event loop) and
returns the last sequence it saw, where the next live export of the run carries on.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from wopdsl.projections.trace.derive import TraceProjection
from wopdsl.projections.trace.otlp import SpanWriter, shared_writer
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

    def start(self) -> LiveTrace:
        """Start following (in a task of the running loop; a blocking store is read there)."""
        if not self._store.blocking:
            self._feed(self._store.read(self._run_id))
        self._task = asyncio.ensure_future(self._follow())
        return self

    async def _follow(self) -> None:
        async for event in self._store.subscribe(self._run_id, self._projection.last_sequence):
            self._feed([event])

    def _feed(self, events: list[RunEventDoc]) -> None:
        projection = self._projection
        for event in events:
            if event["sequence"] <= projection.last_sequence:
                continue
            spans = projection.apply(event)
            if spans:
                try:
                    self._writer.write(projection.trace_id, spans)
                except Exception:  # never let tracing break a run
                    _log.exception("could not hand spans of run %s to OpenTelemetry",
                                   self._run_id)

    async def stop(self) -> int:
        """Stop following, export what is left, flush; return the last sequence seen."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
        store = self._store
        self._feed(await store.call(store.read, self._run_id, self._projection.last_sequence))
        await asyncio.get_running_loop().run_in_executor(None, self._writer.flush)
        return self._projection.last_sequence
