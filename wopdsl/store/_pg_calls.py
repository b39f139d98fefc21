"""A PostgreSQL store's own worker threads: its calls made off the event loop, cheaply.

Every call a drive or a host makes on a :class:`~wopdsl.store.postgres.PostgresStore` (an
append per turn, reads, the claim) leaves the event loop, so that a server that stops
answering never freezes it. ``asyncio.to_thread`` made each such hop cost more than the
append's own work on a small machine: a ``concurrent.futures`` future beside the asyncio
one and a callback chain between them, the executor's bookkeeping, and a new thread
whenever the previous call's thread had not yet marked itself idle — so consecutive calls
of one drive ran on alternating, cold threads.

:class:`Workers` hands a call to an idle thread of the store's own through a queue and
settles the caller's asyncio future with one ``call_soon_threadsafe``; a drive's
consecutive calls run on the same thread. A call runs in a copy of the caller's context
(as with ``asyncio.to_thread``). Cancelling the caller abandons the result, never the call.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import queue
import threading
from collections.abc import Callable
from typing import Any

__all__ = ["Workers"]

_Job = tuple[asyncio.AbstractEventLoop, "asyncio.Future[Any]", contextvars.Context,
             Callable[..., Any], tuple[Any, ...]]


class Workers:
    """Daemon threads named ``name`` making blocking calls for event loops.

    A new thread starts only when every thread is busy. :meth:`stop` ends the idle ones and
    each busy one after its call; a later call gets a thread of its own, which then ends
    (the method says what it does on a closed store).
    """

    def __init__(self, name: str) -> None:
        self.name = name
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._idle = 0
        self._threads = 0
        self._stopped = False

    async def call(self, method: Callable[..., Any], *args: Any) -> Any:
        """``method(*args)`` on a worker thread; the caller's loop stays free meanwhile."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()
        self._submit((loop, future, contextvars.copy_context(), method, args))
        return await future

    def stop(self) -> None:
        """End the threads: the idle ones now, the busy ones after their call."""
        with self._lock:
            if self._stopped:
                return
            self._stopped = True
            threads = self._threads
        for _ in range(threads):
            self._jobs.put(None)

    def _submit(self, job: _Job) -> None:
        with self._lock:
            if self._idle and not self._stopped:
                self._idle -= 1  # Claimed: that thread takes the next job off the queue.
                self._jobs.put(job)
                return
            self._threads += 0 if self._stopped else 1  # After stop: a thread for this job.
        threading.Thread(target=self._work, args=(job,), name=self.name, daemon=True).start()

    def _work(self, job: _Job | None) -> None:
        while job is not None:
            deliver = _run(job)
            del job
            with self._lock:
                stopped = self._stopped
                if not stopped:
                    # Idle before the caller hears back, so its next call (made as soon as
                    # it does) finds this thread instead of starting another.
                    self._idle += 1
            deliver()
            del deliver
            if stopped:
                return
            job = self._jobs.get()


def _run(job: _Job) -> Callable[[], None]:
    """Make the call; return what tells the caller how it went."""
    loop, future, context, method, args = job
    if future.cancelled():
        return _nothing
    try:
        result = context.run(method, *args)
    except BaseException as exc:  # Delivered to the caller, as asyncio.to_thread does.
        return functools.partial(_deliver, loop, future, None, exc)
    return functools.partial(_deliver, loop, future, result, None)


def _nothing() -> None:
    return None


def _deliver(loop: asyncio.AbstractEventLoop, future: asyncio.Future[Any], result: Any,
             error: BaseException | None) -> None:
    def settle() -> None:
        if future.cancelled():
            return
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(result)

    # The loop may have closed while the call ran (its caller was abandoned).
    with contextlib.suppress(RuntimeError):
        loop.call_soon_threadsafe(settle)
