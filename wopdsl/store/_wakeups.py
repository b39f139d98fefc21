"""Private: in-process wake-ups of a store's subscribers when a run's log grows."""

from __future__ import annotations

import contextlib
import threading
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import asyncio

__all__ = ["Waiters", "waiters_for"]


class Waiters:
    """Futures of subscribers waiting on one database file, woken by appends in-process.

    Waiters are kept per run, so an append wakes only the subscribers of its run (a host
    with hundreds of followed runs would otherwise wake every one of them on each append).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._futures: dict[str, dict[asyncio.Future[None], asyncio.AbstractEventLoop]] = {}

    def add(self, loop: asyncio.AbstractEventLoop, future: asyncio.Future[None],
            run_id: str) -> None:
        with self._lock:
            self._futures.setdefault(run_id, {})[future] = loop

    def discard(self, future: asyncio.Future[None], run_id: str) -> None:
        with self._lock:
            waiting = self._futures.get(run_id)
            if waiting is not None:
                waiting.pop(future, None)
                if not waiting:
                    del self._futures[run_id]

    def wake(self, run_id: str) -> None:
        # Unlocked peek: a waiter added after it re-checks last_sequence before sleeping.
        if run_id not in self._futures:
            return
        with self._lock:
            waiting = self._futures.pop(run_id, {})
        for future, loop in waiting.items():
            # A closed loop raises RuntimeError: that subscriber is gone, nobody waits.
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(_resolve, future)


_WAITERS: dict[str, Waiters] = {}
_WAITERS_LOCK = threading.Lock()


def waiters_for(path: Path) -> Waiters:
    """Share one waiter list per file, so every store object on it wakes the others."""
    key = str(path.resolve())
    with _WAITERS_LOCK:
        return _WAITERS.setdefault(key, Waiters())


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)
