"""Private: daemon worker threads for sync handlers that must not run on the event loop.

``asyncio.to_thread`` uses the loop's default executor, whose threads are joined when the
loop shuts down and when the interpreter exits: one handler stuck past its
``turn_timeout_ms`` would keep ``wop run`` alive forever. These workers are daemon threads:
a timed-out handler is abandoned (it keeps its thread until it returns, if ever) and never
holds the process open. Idle workers are reused; a new one starts only when all are busy.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import queue
import threading
from collections.abc import Callable
from typing import Any

__all__ = ["HandlerRaised", "run_in_worker"]


class HandlerRaised(Exception):
    """Carries a ``BaseException`` a handler raised (``SystemExit``, ``KeyboardInterrupt`` ...).

    asyncio re-raises ``SystemExit`` and ``KeyboardInterrupt`` out of the event loop when a
    task's coroutine raises them; wrapped, they stay the failure of one turn.
    """

    def __init__(self, error: BaseException) -> None:
        super().__init__(f"{type(error).__name__}: {error}")
        self.error = error

_Job = tuple[asyncio.AbstractEventLoop, "asyncio.Future[Any]", contextvars.Context,
             Callable[[Any], Any], Any]


class _Workers:
    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[_Job] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._idle = 0

    def submit(self, job: _Job) -> None:
        with self._lock:
            if self._idle:
                self._idle -= 1  # claimed: that worker takes the next job off the queue
                self._jobs.put(job)
                return
        threading.Thread(target=self._work, args=(job,), name="wopdsl-handler",
                         daemon=True).start()

    def _work(self, job: _Job) -> None:
        while True:
            _run(job)
            del job
            with self._lock:
                self._idle += 1
            job = self._jobs.get()


def _run(job: _Job) -> None:
    loop, future, context, function, argument = job
    if future.cancelled():
        return
    try:
        result = context.run(function, argument)
    except Exception as exc:
        _deliver(loop, future, None, exc)
    except BaseException as exc:
        # SystemExit, KeyboardInterrupt ...: wrapped, they fail the turn, never the process.
        _deliver(loop, future, None, HandlerRaised(exc))
    else:
        _deliver(loop, future, result, None)


def _deliver(loop: asyncio.AbstractEventLoop, future: asyncio.Future[Any], result: Any,
             error: BaseException | None) -> None:
    def settle() -> None:
        if future.cancelled():
            return
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(result)

    # The loop may have closed while the handler ran (an abandoned turn).
    with contextlib.suppress(RuntimeError):
        loop.call_soon_threadsafe(settle)


_WORKERS = _Workers()


def run_in_worker(function: Callable[[Any], Any], argument: Any) -> asyncio.Future[Any]:
    """Call ``function(argument)`` on a daemon worker thread, in a copy of this context.

    Returns:
        A future of the running loop with the result (or the exception, any
        ``BaseException`` included). Cancelling it abandons the call.
    """
    loop = asyncio.get_running_loop()
    future: asyncio.Future[Any] = loop.create_future()
    _WORKERS.submit((loop, future, contextvars.copy_context(), function, argument))
    return future
