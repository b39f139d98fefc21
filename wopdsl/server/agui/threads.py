"""An AG-UI thread's council runs: ids derived from the thread, found again after a restart.

A thread of council ``C`` holds the runs ``C-t<digest>-1``, ``-2`` … where the digest is of
the thread id: the host finds a thread's runs by their ids alone (nothing is kept outside
the store, so a restarted host, or another host on the same store, finds the same thread).
Each run's ``run.started`` records ``metadata.request.agui: {threadId, runId, messageId}`` — the
thread, the AG-UI run that started it and the user message that was its task — for the
operator's tools (``wop runs``, ``wop events``) and for the thread's replay.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
from collections.abc import AsyncIterator
from typing import Final

from wopdsl import EventStore

__all__ = ["Threads", "thread_base"]

_REMEMBERED: Final = 10_000
"""Threads whose last run number is remembered (the store is asked again after that)."""


def thread_base(council_id: str, thread_id: str) -> str:
    """The prefix of the run ids of thread ``thread_id`` of council ``council_id``."""
    digest = hashlib.sha256(thread_id.encode()).hexdigest()[:20]
    return f"{council_id[:38]}-t{digest}"


class Threads:
    """Finds a thread's runs in ``store`` and serialises what one thread's requests do.

    Args:
        store: The host's store.
    """

    def __init__(self, store: EventStore) -> None:
        self.store = store
        self._last: dict[str, int] = {}
        self._locks: dict[str, tuple[asyncio.Lock, list[int]]] = {}

    async def runs(self, base: str) -> list[str]:
        """The ids of the thread's runs, oldest first (read off the loop)."""
        number = self._last.get(base, 0)
        while await self.store.call(self.store.exists, f"{base}-{number + 1}"):
            number += 1
        if len(self._last) >= _REMEMBERED:
            self._last.clear()
        self._last[base] = number
        return [f"{base}-{n}" for n in range(1, number + 1)]

    @contextlib.asynccontextmanager
    async def lock(self, base: str) -> AsyncIterator[None]:
        """Hold the thread while a request decides what it does (start, post or replay)."""
        lock, users = self._locks.setdefault(base, (asyncio.Lock(), [0]))
        users[0] += 1
        try:
            async with lock:
                yield
        finally:
            users[0] -= 1
            if not users[0]:
                del self._locks[base]
