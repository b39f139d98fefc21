"""Private: wake-ups of a store's subscribers when a run's log grows.

Two sources of change, two mechanisms, neither a timer per waiting subscriber:

- **Appends in this process** (any ``SqliteStore`` on the file) wake the waiters of their
  run at once (:meth:`Waiters.wake`).
- **Commits by other processes** are seen by one :class:`Watch` per store object and event
  loop, which asks SQLite every poll interval whether another connection committed
  (``PRAGMA data_version``, one statement for every waiting run) and then wakes every waiter
  of the loop, each checking its own run. A host following a thousand runs so costs one
  statement per interval, not a thousand queries and a thousand timers.
"""

from __future__ import annotations

import contextlib
import sys
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import asyncio

__all__ = ["Follower", "Waiters", "Watch", "waiters_for"]


class Waiters:
    """Futures of subscribers waiting on one database file, woken by appends in-process.

    Waiters are kept per run, so an append wakes only the subscribers of its run (a host
    with hundreds of followed runs would otherwise wake every one of them on each append).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._futures: dict[str, dict[asyncio.Future[None], asyncio.AbstractEventLoop]] = {}
        self._per_loop: dict[asyncio.AbstractEventLoop, int] = {}
        """How many waiters wait on each loop."""

    def add(self, loop: asyncio.AbstractEventLoop, future: asyncio.Future[None],
            run_id: str) -> None:
        with self._lock:
            self._futures.setdefault(run_id, {})[future] = loop
            self._per_loop[loop] = self._per_loop.get(loop, 0) + 1

    def discard(self, future: asyncio.Future[None], run_id: str) -> None:
        with self._lock:
            waiting = self._futures.get(run_id)
            if waiting is not None:
                loop = waiting.pop(future, None)
                if loop is not None:
                    self._gone(loop, 1)
                if not waiting:
                    del self._futures[run_id]

    def _gone(self, loop: asyncio.AbstractEventLoop, count: int) -> None:
        left = self._per_loop[loop] - count
        if left:
            self._per_loop[loop] = left
        else:
            del self._per_loop[loop]

    def wake(self, run_id: str) -> None:
        """Wake the waiters of ``run_id`` (an append to it committed)."""
        # Unlocked peek: a waiter added after it re-checks last_sequence before sleeping.
        if run_id not in self._futures:
            return
        with self._lock:
            waiting = self._futures.pop(run_id, {})
            for loop in waiting.values():
                self._gone(loop, 1)
        _resolve_all(waiting.items())

    def waiting_on(self, loop: asyncio.AbstractEventLoop) -> bool:
        """Whether any waiter waits on ``loop``."""
        return loop in self._per_loop

    def wake_loop(self, loop: asyncio.AbstractEventLoop) -> None:
        """Wake every waiter on ``loop`` (some run may have changed; each checks its own)."""
        woken: list[tuple[asyncio.Future[None], asyncio.AbstractEventLoop]] = []
        with self._lock:
            for run_id in list(self._futures):
                waiting = self._futures[run_id]
                mine = [future for future, owner in waiting.items() if owner is loop]
                for future in mine:
                    del waiting[future]
                    woken.append((future, loop))
                if not waiting:
                    del self._futures[run_id]
            self._per_loop.pop(loop, None)
        _resolve_all(woken)


class Watch:
    """Sees commits made by other connections to the file, for the waiters on one loop.

    Created (by the first waiter on the loop) before that waiter checks the log: its first
    reading of ``probe`` is then older than the check, so a commit after the check changes
    the value the next tick reads, and that tick wakes the waiter. It stops once no waiter
    is left on its loop.

    Args:
        loop: The event loop whose waiters it wakes (and whose timer it uses).
        waiters: The file's waiters.
        probe: Returns a value that changes when another connection commits
            (``PRAGMA data_version`` on the store's connection).
        interval: Seconds between two readings.
        stopped: Called when it stops.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop, waiters: Waiters,
                 probe: Callable[[], int], interval: float,
                 stopped: Callable[[Watch], None]) -> None:
        self._loop = loop
        self._waiters = waiters
        self._probe = probe
        self._interval = interval
        self._stopped = stopped
        self._version: int | None = self._read()
        loop.call_later(interval, self._tick)

    def _read(self) -> int | None:
        try:
            return self._probe()
        except Exception:  # A closed store: the woken waiters read it and raise its error.
            return None

    def _tick(self) -> None:
        if not self._waiters.waiting_on(self._loop):
            self._stopped(self)
            return
        version = self._read()
        if version != self._version:
            self._version = version
            self._waiters.wake_loop(self._loop)
        if version is None:  # Closed or failing: the waiters found out; the next one
            self._stopped(self)  # to wait starts a new watch.
            return
        self._loop.call_later(self._interval, self._tick)


class Follower:
    """A store object's ``wait_for_change``: in-process wake-ups, and a :class:`Watch` per loop.

    Args:
        waiters: The file's waiters.
        probe: Returns a value that changes when another connection commits to the file.
    """

    def __init__(self, waiters: Waiters, probe: Callable[[], int]) -> None:
        self._waiters = waiters
        self._probe = probe
        self._lock = threading.Lock()
        self._watches: dict[asyncio.AbstractEventLoop, Watch] = {}

    async def wait(self, run_id: str, after: int, last_sequence: Callable[[str], int],
                   interval: float) -> None:
        """Return when the run may have events after ``after``.

        At once when it has; else on an append here, or on a commit elsewhere (seen within
        ``interval`` seconds).

        A wake-up is not checked again: the caller reads the log next anyway (a read that
        finds nothing new just waits again), so the check is not paid twice per event.
        """
        import asyncio  # Here, not at import: asyncio is loaded once a loop runs.

        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()
        # Register (and watch other processes) before checking, so that a commit after the
        # check is never missed.
        self._waiters.add(loop, future, run_id)
        try:
            self._watch(loop, interval)
            if last_sequence(run_id) <= after:
                await future
        finally:
            self._waiters.discard(future, run_id)

    def _watch(self, loop: asyncio.AbstractEventLoop, interval: float) -> None:
        if loop in self._watches:  # Unlocked peek: a watch that stops re-checks its waiters.
            return
        with self._lock:
            if loop not in self._watches:
                self._watches[loop] = Watch(loop, self._waiters, self._probe, interval,
                                            self._stopped)

    def _stopped(self, watch: Watch) -> None:
        with self._lock:
            for loop, kept in list(self._watches.items()):
                if kept is watch:
                    del self._watches[loop]

    def close(self) -> None:
        """Wake the waiters (the store closed: they find out; the watches then stop)."""
        with self._lock:
            loops = list(self._watches)
        for loop in loops:
            self._waiters.wake_loop(loop)


_WAITERS: dict[str, Waiters] = {}
_WAITERS_LOCK = threading.Lock()


def waiters_for(path: Path) -> Waiters:
    """Share one waiter list per file, so every store object on it wakes the others."""
    key = str(path.resolve())
    with _WAITERS_LOCK:
        return _WAITERS.setdefault(key, Waiters())


def _resolve_all(
        woken: Iterable[tuple[asyncio.Future[None], asyncio.AbstractEventLoop]]) -> None:
    """Resolve each ``(future, loop)``: in place on the loop's own thread, else through it."""
    aio = sys.modules.get("asyncio")  # Loaded: a future exists only once a loop ran.
    running = None
    if aio is not None:
        with contextlib.suppress(RuntimeError):
            running = aio.get_running_loop()
    for future, loop in woken:
        if loop is running:
            _resolve(future)
        else:
            # A closed loop raises RuntimeError: that subscriber is gone, nobody waits.
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(_resolve, future)


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)
