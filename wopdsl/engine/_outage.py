"""Private: how a drive waits for its store to come back after it became unreachable.

A lost PostgreSQL connection, a server restarting: the drive stops on
:class:`~wopdsl.errors.StoreUnavailable`, waits (backoff) and goes on from the log, marking the
run ``run.resumed {reason: "store-recovery"}``, as long as the store's ``reconnect_s`` allows.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Final

from wopdsl.errors import StoreError, StoreUnavailable

__all__ = ["Outage"]

_BACKOFF: Final = (0.1, 0.2, 0.5, 1.0, 2.0)
"""Seconds between attempts to go on with a run whose store is unreachable (the last repeats)."""

_log = logging.getLogger("wopdsl")


class Outage:
    """A drive's wait for its store to come back: backoff, bounded by ``reconnect_s``."""

    def __init__(self, run_id: str, reconnect_s: float, failure: StoreError) -> None:
        self.run_id = run_id
        self.reconnect_s = reconnect_s
        self.failure = failure
        self.since = time.monotonic()
        self.attempts = 0
        if reconnect_s > 0:
            _log.warning("run %s: the store is unreachable (%s); retrying for up to %g s",
                         run_id, failure.message, reconnect_s)

    async def wait(self) -> None:
        """Sleep before the next attempt, or raise once ``reconnect_s`` has passed."""
        waited = time.monotonic() - self.since
        if waited >= self.reconnect_s:
            raise StoreUnavailable(
                f"run {self.run_id}: the store stayed unreachable for {waited:.3g} s "
                f"({self.failure.message}); the run stops here, as its log says",
                hint="resume it (wop resume RUN) once the store answers again: nothing is "
                     "lost, the log holds every completed turn") from self.failure
        delay = _BACKOFF[min(self.attempts, len(_BACKOFF) - 1)]
        self.attempts += 1
        await asyncio.sleep(min(delay, max(0.0, self.reconnect_s - waited)))
