"""The ``python`` member engine: a callable ``(Turn) -> Reply``, sync or async."""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import inspect
import logging
import signal
import threading
import time
import types
from collections.abc import Awaitable, Callable, Coroutine, Generator, Iterator
from typing import Any, ClassVar, Final, TypeVar

from wopdsl.agents._workers import HandlerRaised, run_in_worker
from wopdsl.agents.base import MemberAgent
from wopdsl.model.turns import Reply, Turn

__all__ = [
    "INLINE_THRESHOLD_S",
    "QUICK_S",
    "Handler",
    "HandlerRaised",
    "LoopStopRefused",
    "PythonAgent",
    "UserInterrupt",
    "ctrl_c_in_place",
    "guard_loop",
    "host_loop",
    "in_context",
    "in_place_allowed",
]


class UserInterrupt(KeyboardInterrupt):
    """The person pressed Ctrl-C while a sync handler ran in place.

    Unlike the handler's own ``KeyboardInterrupt`` (which fails its turn), it stops the run,
    as Ctrl-C anywhere else does.
    """


class LoopStopRefused(RuntimeError):
    """A member handler called ``loop.stop()`` on the loop that runs the council.

    Stopping the loop would end ``wop run`` or a host's every request mid-run, leaving the run
    ``running``; refused, it fails the handler's turn instead (``TEAM_NODE_FAILED``).
    """


_IN_HANDLER: Final = contextvars.ContextVar("wopdsl_in_handler", default=False)
"""True in the context a handler runs in (each call has its own copy of the context)."""


def guard_loop(loop: asyncio.AbstractEventLoop | None = None) -> None:
    """Make ``loop.stop()`` raise :class:`LoopStopRefused` when a member handler calls it.

    Checked through the handler's own context, so a stop the handler schedules
    (``loop.call_soon(loop.stop)``) is ignored too (with a warning), while asyncio's own stop
    (at the end of ``run_until_complete``) runs as before. Idempotent; loops that forbid new
    attributes (uvloop) are left as they are.
    """
    loop = loop or asyncio.get_running_loop()
    if getattr(loop, "_wopdsl_stop_guarded", False):
        return
    original = loop.stop

    def stop() -> None:
        if not _IN_HANDLER.get():
            original()
        elif asyncio.current_task(loop) is None:
            # A callback the handler scheduled (loop.call_soon(loop.stop)): no turn to fail.
            logging.getLogger("wopdsl").warning("ignored loop.stop() scheduled by a member "
                                                "handler: the loop runs the council")
        else:
            raise LoopStopRefused("a member handler may not stop the event loop that runs "
                                  "the council (loop.stop()); return a result or raise "
                                  "instead")

    with contextlib.suppress(AttributeError):
        loop.stop = stop  # type: ignore[method-assign]
        loop._wopdsl_stop_guarded = True  # type: ignore[attr-defined]


def host_loop(loop: asyncio.AbstractEventLoop | None = None) -> None:
    """Run the sync handlers of runs driven on ``loop`` on worker threads from their first call.

    For a loop that serves other work too (an HTTP host): no handler call ever holds it, not
    even the first one of a handler not yet known to be slow (see :data:`INLINE_THRESHOLD_S`).
    """
    loop = loop or asyncio.get_running_loop()
    with contextlib.suppress(AttributeError):
        loop._wopdsl_hosted = True  # type: ignore[attr-defined]


def in_place_allowed() -> bool:
    """Whether sync handlers may run in place on the running loop (it is not a host's)."""
    return not getattr(asyncio.get_running_loop(), "_wopdsl_hosted", False)


def _marked(context: contextvars.Context) -> contextvars.Context:
    context.run(_IN_HANDLER.set, True)
    return context


def _call_marked(handler: Callable[[Turn], Any], turn: Turn) -> Any:
    _IN_HANDLER.set(True)
    return handler(turn)


INLINE_THRESHOLD_S: Final = 0.005
"""Two calls in a row longer than this (seconds), or one ten times as long, move a sync
handler's later calls off the event loop, to a daemon worker thread (one slow call alone
may be the machine's noise: a preemption or a garbage collection)."""

QUICK_S: Final = 0.001
"""A sync handler whose last in-place call took at most this (seconds) is :attr:`quick
<PythonAgent.quick>`: its next turn may run before the turns settled just before it are
committed, which are then committed with its own (docs/performance.md)."""

_T = TypeVar("_T")
_RESULTS: Final = frozenset({Reply, dict, str})
"""Result types that are never awaitable (checked first: ``isawaitable`` is slower)."""

Handler = Callable[[Turn], Any] | Callable[[Turn], Awaitable[Any]]
"""A member handler: returns a ``Reply``, a JSON result dict or a summary string."""


class PythonAgent(MemberAgent):
    """Runs a bound handler, sync or async.

    Each call runs in a fresh copy of the caller's context (as a task of its own would), so
    the engine may await a lone turn without a task per turn.

    Sync handlers: :meth:`take_turn` runs them on a daemon worker thread, off the event
    loop (a timed-out call is abandoned, and never keeps the process alive). The engine
    may instead call a lone turn's handler in place with :meth:`call_inline` — no thread
    hop, so a sync handler costs what an async one does — as long as :attr:`runs_inline`:
    once one call takes longer than :data:`INLINE_THRESHOLD_S`, the handler's later calls
    go to a worker thread.
    """

    kind: ClassVar[str] = "python"
    inline: ClassVar[bool] = True

    def __init__(self, handler: Handler) -> None:
        self.handler = handler
        self._is_async = _is_async_callable(handler)
        self._runs_inline = not self._is_async
        self._slow = False
        self._quick = False

    @property
    def is_async(self) -> bool:
        """Whether the handler is a coroutine function (it runs on the event loop)."""
        return self._is_async

    @property
    def runs_inline(self) -> bool:
        """Whether :meth:`call_inline` may run the (sync) handler's next call in place."""
        return self._runs_inline

    @property
    def quick(self) -> bool:
        """Whether the sync handler runs in place and its last call took ≤ :data:`QUICK_S`.

        Never before its first call: a handler is not assumed quick until it has been.
        """
        return self._quick and self._runs_inline

    def call_inline(self, turn: Turn) -> object:
        """Call the sync handler on this thread, in a copy of the current context.

        Two calls in a row longer than :data:`INLINE_THRESHOLD_S` (or one ten times as
        long) send the later calls to a worker thread (:attr:`runs_inline` becomes false).
        """
        _IN_PLACE[0] += 1
        started = time.perf_counter()
        try:
            return contextvars.copy_context().run(_call_marked, self.handler, turn)
        except GeneratorExit as exc:  # The handler's own: nothing closes a plain call.
            raise HandlerRaised(exc) from exc
        finally:
            _IN_PLACE[0] -= 1
            took = time.perf_counter() - started
            self._quick = took <= QUICK_S
            slow = took > INLINE_THRESHOLD_S
            if took > 10 * INLINE_THRESHOLD_S or (slow and self._slow):
                self._runs_inline = False
            self._slow = slow

    async def take_turn(self, turn: Turn) -> object:
        """Call the handler with the turn input.

        Raises:
            HandlerRaised: the handler raised a ``BaseException`` that is not an
                ``Exception`` (other than cancellation).
        """
        try:
            return await self._take_turn(turn)
        except (asyncio.CancelledError, GeneratorExit):
            raise
        except Exception:
            raise
        except BaseException as exc:
            raise HandlerRaised(exc) from exc

    async def _take_turn(self, turn: Turn) -> object:
        if self._is_async:
            context = _marked(contextvars.copy_context())
            call = context.run(self.handler, turn)
            if inspect.iscoroutine(call):
                result = await in_context(call, context)
            else:
                result = await call
        else:
            # Sync handlers may block (I/O, CPU); a thread keeps the loop and other turns
            # moving. A daemon one: an abandoned (timed-out) call never holds the process.
            result = await run_in_worker(self.handler, turn)
        # A sync wrapper (``lambda turn: work(turn)``) may hand back a coroutine: await it.
        while type(result) not in _RESULTS and inspect.isawaitable(result):
            result = await result
        return result


_IN_PLACE = [0]
"""How many sync handlers run in place right now (read by the Ctrl-C handler)."""


@contextlib.contextmanager
def ctrl_c_in_place() -> Iterator[None]:
    """Make Ctrl-C during an in-place sync handler raise :class:`UserInterrupt` there.

    Used while a run is driven on the main thread; anywhere else Ctrl-C does what it did.

    A sync handler running in place blocks the loop, so asyncio's own Ctrl-C handler (which
    cancels the main task) could not act until the handler returned; a bare
    ``KeyboardInterrupt`` raised inside the handler would read as the handler's own failure.
    Installed once per drive: setting a signal handler costs ~90 µs, too much per turn.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGINT)
    if previous in (signal.SIG_IGN, None):
        yield
        return

    def on_ctrl_c(signum: int, frame: Any) -> None:
        if _IN_PLACE[0]:
            raise UserInterrupt
        if callable(previous):
            previous(signum, frame)
        else:  # pragma: no cover - SIG_DFL: what the default would do, as Python does.
            raise KeyboardInterrupt

    signal.signal(signal.SIGINT, on_ctrl_c)
    try:
        yield
    finally:
        if signal.getsignal(signal.SIGINT) is on_ctrl_c:
            signal.signal(signal.SIGINT, previous)


def _is_async_callable(obj: object) -> bool:
    while isinstance(obj, functools.partial):
        obj = obj.func
    return inspect.iscoroutinefunction(obj) or inspect.iscoroutinefunction(
        getattr(obj, "__call__", None)  # noqa: B004 - callable objects with async __call__.
    )


@types.coroutine
def in_context(
    coro: Coroutine[Any, Any, _T], context: contextvars.Context
) -> Generator[Any, Any, _T]:
    """Await ``coro`` with each of its steps run in ``context``, as a task of its own would.

    The awaiting task drives the coroutine (what it awaits, cancellation and exceptions pass
    through unchanged, but a ``GeneratorExit`` the coroutine raises itself comes out as
    :class:`HandlerRaised`: it must not read as this driver being closed), while the context
    variables it sets stay in ``context``.
    """
    value: Any = None
    error: BaseException | None = None
    while True:
        try:
            if error is None:
                yielded = context.run(coro.send, value)
            else:
                yielded = context.run(coro.throw, error)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]
        except GeneratorExit as exc:
            # Raised by the coroutine itself (this driver closes it only at its own yield,
            # below): a failure of the awaited code, not a request to close this one.
            raise HandlerRaised(exc) from exc
        value = error = None
        try:
            value = yield yielded
        except GeneratorExit:
            coro.close()
            raise
        except BaseException as exc:  # CancelledError included: pass it on.
            error = exc
