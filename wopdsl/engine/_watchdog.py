"""Private: report an async handler that holds the event loop past its turn timeout.

An ``async def`` handler that calls ``time.sleep`` (or any blocking call) stops the event
loop: asyncio's timeout cannot fire until the handler yields. A daemon thread watches every
such turn; once one runs past its ``turn_timeout_ms`` plus a grace second without the loop
ending it, it logs a warning on the ``wopdsl`` logger (shown on stderr by default) naming the
member. When the handler finally returns, its turn fails with ``TIMEOUT``.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from typing import Final

__all__ = ["GRACE_S", "done", "watch"]

GRACE_S: Final = 1.0
"""How long past its timeout a turn may run before the watchdog reports it."""
_LOG = logging.getLogger("wopdsl")


class _Watchdog:
    def __init__(self) -> None:
        self._due: list[tuple[float, int, str, float]] = []
        self._live: set[int] = set()
        self._ids = itertools.count()
        self._wake = threading.Condition()
        self._thread: threading.Thread | None = None

    def watch(self, member: str, timeout: float) -> int:
        ident = next(self._ids)
        with self._wake:
            heapq.heappush(self._due, (time.monotonic() + timeout + GRACE_S, ident, member,
                                       timeout))
            self._live.add(ident)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="wopdsl-watchdog",
                                                daemon=True)
                self._thread.start()
            self._wake.notify()
        return ident

    def done(self, ident: int) -> None:
        with self._wake:
            self._live.discard(ident)

    def _run(self) -> None:
        while True:
            with self._wake:
                while not self._due:
                    self._wake.wait()
                due, ident, member, timeout = self._due[0]
                wait = due - time.monotonic()
                if wait > 0:
                    self._wake.wait(wait)
                    continue
                heapq.heappop(self._due)
                late = ident in self._live
                self._live.discard(ident)
            if late:
                _LOG.warning(
                    "member %s has held the event loop for more than %.3g s, past its "
                    "turn_timeout_ms of %.3g s: a blocking call (time.sleep, blocking I/O) in an "
                    "async handler stops every other turn; its turn fails with TIMEOUT when it "
                    "returns", member, timeout + GRACE_S, timeout)


_WATCHDOG = _Watchdog()


def watch(member: str, timeout: float) -> int:
    """Start watching a turn of ``member``; pass the returned id to :func:`done`."""
    return _WATCHDOG.watch(member, timeout)


def done(ident: int) -> None:
    """Stop watching a turn (it ended, one way or another)."""
    _WATCHDOG.done(ident)
