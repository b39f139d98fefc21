"""A bounded span queue with a worker thread of its own that sends to the OTLP exporter.

The queue of a :class:`~wopdsl.projections.trace.writer.SpanWriter`. Nothing a run does
waits for the collector: :meth:`Outbox.put` only queues (a full queue drops the span and
counts it), the worker sends whatever is queued as soon as it can (through a
:class:`~wopdsl.projections.trace.otlp.Sender`), and
:meth:`Outbox.close` (at exit) waits for what is left only while the collector makes
progress, at most ``grace_s`` without any. A collector that refuses, fails or never answers
costs one line on the ``wopdsl.trace`` logger per outage, naming the endpoint and the fix;
what the OpenTelemetry exporter logs on this worker thread (its retries and failures) is kept
as the reason of that line instead of being printed raw.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Iterable, Sequence
from typing import Protocol

from wopdsl.projections.trace.spans import SpanSpec

__all__ = ["Outbox", "Sender"]

Item = tuple[int, SpanSpec]
"""A span to send: its trace id and its spec."""


class Sender(Protocol):
    """What the worker sends with (:class:`wopdsl.projections.trace.otlp.Sender`)."""

    logger: logging.Logger
    """Where it logs its retries and failures."""

    def send(self, specs: Sequence[Item]) -> bool:
        """Send spans in one request; return whether the collector took them."""

    def diagnose(self) -> str:
        """Why sending failed when the exporter did not say: a look at the endpoint."""

    def shutdown(self) -> None:
        """Stop: a retry in progress ends now."""


_log = logging.getLogger("wopdsl.trace")


class _WorkerLogs(logging.Filter):
    """Keeps what an exporter logs on an outbox's worker thread as that outbox's reason."""

    def __init__(self) -> None:
        super().__init__()
        self.outboxes: dict[int, Outbox] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        outbox = self.outboxes.get(record.thread or 0)
        if outbox is None:
            return True  # someone else's exporter: not ours to silence
        reason = _reason(record) if record.levelno >= logging.WARNING else None
        if reason is not None:
            outbox.trouble(reason)
        return False


_WORKER_LOGS = _WorkerLogs()


def _reason(record: logging.LogRecord) -> str | None:
    """What an exporter's log record says went wrong, in a few words.

    ``None`` when it does not say (its last words, "due to timeout, max retries or
    shutdown", name no cause).
    """
    args = record.args if isinstance(record.args, tuple) else ()
    for arg in args:
        if isinstance(arg, BaseException):
            text = f"{type(arg).__name__}: {arg}"
            if "refused" in text.lower():
                return "refused the connection"
            if "timeout" in text.lower() or "timed out" in text.lower():
                return "did not answer in time"
            return "failed: " + text.splitlines()[0][:160]
    for arg in args:
        if isinstance(arg, int) and not isinstance(arg, bool) and 100 <= arg < 600:
            return f"answered HTTP {arg}"
    if str(record.msg).startswith("Transient error") and args and isinstance(args[0], str):
        return f"answered {args[0][:80]}"  # the HTTP reason phrase of a retried status
    return None


class Outbox:
    """Queues spans and sends them on a worker thread (see the module docs).

    Args:
        sender: What sends (only the worker thread uses it).
        where: The endpoint as it may be printed (no password).
        hide: Secrets (the endpoint's password) shown as ``***`` in what the outbox says.
        capacity: Most spans queued; more are dropped and counted.
        batch: Most spans sent in one request.
        report: Say an outage on the ``wopdsl.trace`` logger (off where a command reports
            failure itself).
    """

    def __init__(self, sender: Sender, where: str, *, capacity: int, batch: int,
                 report: bool, hide: tuple[str, ...] = ()) -> None:
        self._sender = sender
        self._hide = tuple(secret for secret in hide if secret)
        if _WORKER_LOGS not in sender.logger.filters:
            sender.logger.addFilter(_WORKER_LOGS)
        self._where = where
        self._capacity, self._batch, self._report = capacity, batch, report
        self._queue: deque[Item] = deque()
        self._cond = threading.Condition()
        self._in_flight = 0
        self._problem: str | None = None  # what went wrong in the current (or last) export
        self._failing = False
        self._said = False  # this outage was told
        self._untold = 0  # dropped and not yet told
        self._closed = False
        self.exported = 0
        """Spans the collector took."""
        self.dropped = 0
        """Spans dropped: refused, failed, timed out, over capacity or left at close."""
        self._thread = threading.Thread(target=self._work, name="wopdsl-otel", daemon=True)
        self._thread.start()

    @property
    def pending(self) -> int:
        """Spans queued or being sent."""
        with self._cond:
            return len(self._queue) + self._in_flight

    @property
    def problem(self) -> str | None:
        """Why the last export failed (``None`` after a success), fit to print."""
        return None if self._problem is None else self._hidden(self._problem)

    def put(self, items: Iterable[Item]) -> None:
        """Queue spans (never blocks; a full or closed outbox drops them and counts)."""
        with self._cond:
            for item in items:
                if self._closed or len(self._queue) >= self._capacity:
                    self._drop(1)
                else:
                    self._queue.append(item)
            self._cond.notify_all()

    # -- the worker ------------------------------------------------------------------------

    def _work(self) -> None:
        ident = threading.get_ident()
        _WORKER_LOGS.outboxes[ident] = self
        try:
            self._loop()
        finally:
            _WORKER_LOGS.outboxes.pop(ident, None)

    def _loop(self) -> None:
        while True:
            with self._cond:
                while not self._queue and not self._closed:
                    self._cond.wait()
                if self._closed:
                    return
                batch = [self._queue.popleft()
                         for _ in range(min(self._batch, len(self._queue)))]
                self._in_flight, self._problem = len(batch), None
            sent = self._send(batch)
            if not sent and self._problem is None:
                self.trouble(self._diagnose())
            with self._cond:
                self._in_flight = 0
                self._cond.notify_all()
                if self._closed:
                    return  # this batch was counted as left behind
                self._settle(sent, len(batch))

    def _send(self, batch: Sequence[Item]) -> bool:
        try:
            return self._sender.send(batch)
        except Exception as exc:  # an exporter bug must not end the worker
            self.trouble(f"failed: {type(exc).__name__}: {exc}")
            return False

    def _diagnose(self) -> str:
        try:
            return self._sender.diagnose()
        except Exception:  # a look that fails says nothing new
            return "did not take the spans"

    def _settle(self, sent: bool, count: int) -> None:
        """Count a batch's outcome; tell an outage once (the lock is held)."""
        if sent:
            self.exported += count
            if self._failing:
                _log.info("the OpenTelemetry collector at %s answers again", self._where)
            self._failing = self._said = False
            return
        self._failing = True
        self._problem = self._problem or "did not take the spans"
        self._drop(count)
        self._tell(until_it_answers=True)

    def trouble(self, reason: str) -> None:
        """Note why the current export is failing (from the worker thread)."""
        with self._cond:
            self._problem = self._problem or reason
            self._cond.notify_all()

    def _drop(self, count: int) -> None:
        self.dropped += count
        self._untold += count

    def _tell(self, *, until_it_answers: bool) -> None:
        """One line per outage: what was dropped, where, why, and the fix."""
        if self._said or not self._report or not self._untold:
            return
        self._said = True
        more = ", and drops spans until it answers" if until_it_answers else ""
        _log.warning(
            "wopdsl tracing: dropped %d span%s: the OpenTelemetry collector at %s %s%s; start "
            "one there or set OTEL_EXPORTER_OTLP_ENDPOINT to yours (`wop trace RUN` sends a "
            "stored run's spans later)", self._untold, "" if self._untold == 1 else "s",
            self._where, self._hidden(self._problem or "did not answer"), more)
        self._untold = 0

    def _hidden(self, text: str) -> str:
        for secret in self._hide:
            text = text.replace(secret, "***")
        return text

    # -- waiting -----------------------------------------------------------------------------

    def flush(self, timeout_s: float) -> bool:
        """Wait until every queued span was sent or failed, at most ``timeout_s``.

        Returns whether all of them went out (none failed meanwhile).
        """
        deadline = time.monotonic() + timeout_s
        with self._cond:
            dropped = self.dropped
            while self._queue or self._in_flight:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(left)
            return self.dropped == dropped

    def close(self, grace_s: float) -> None:
        """Send what is queued while the collector makes progress, then stop.

        Waits at most ``grace_s`` without progress, and not at all once the current export
        has failed (a refused connection, an error answer). What is left is dropped and told
        in one line. The sender's shutdown then ends any retry in progress.
        """
        with self._cond:
            if self._closed:
                return
            done = self.exported + self.dropped
            stall = time.monotonic() + grace_s
            while (self._queue or self._in_flight) and self._problem is None \
                    and not self._failing:
                left = stall - time.monotonic()
                if left <= 0:
                    break
                self._cond.wait(left)
                if self.exported + self.dropped != done:
                    done, stall = self.exported + self.dropped, time.monotonic() + grace_s
            left_behind = len(self._queue) + self._in_flight
            self._queue.clear()
            self._closed, self._in_flight = True, 0  # a request still out is given up
            self._cond.notify_all()
            if left_behind:
                if self._problem is None:
                    self._problem = f"did not answer within {grace_s:g} s"
                self._drop(left_behind)
                self._tell(until_it_answers=False)
        self._sender.shutdown()
