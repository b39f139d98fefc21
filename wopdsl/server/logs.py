"""One log line per condition per interval: a host under attack never floods its log.

A :class:`Throttle` is a logging filter: the first record of a condition (its logger, its
message template and its exception type) in an interval passes; the next ones in the same
interval are counted and dropped (their tracebacks too), and the first record after the
interval says how many were dropped. ``wop serve`` puts one on the host's loggers (its own,
uvicorn's and asyncio's), so a flood of failing requests, refused connections or accept
errors writes a few lines a minute, not megabytes.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterable
from typing import Final

__all__ = ["HOST_LOGGERS", "INTERVAL_S", "Throttle", "throttle"]

INTERVAL_S: Final = 60.0
"""Seconds during which a condition is logged once."""

HOST_LOGGERS: Final = ("wopdsl.server", "uvicorn.error", "asyncio")
"""The loggers a serving host throttles."""


class Throttle(logging.Filter):
    """Pass the first record of each condition per ``interval`` seconds (see the module).

    Args:
        interval: Seconds during which a condition is logged once.
    """

    def __init__(self, interval: float = INTERVAL_S) -> None:
        super().__init__()
        self.interval = interval
        self._lock = threading.Lock()
        self._seen: dict[tuple[str, str, str], tuple[float, int]] = {}
        """Per condition: when it was last logged, and how many were dropped since."""

    def filter(self, record: logging.LogRecord) -> bool:
        """Whether to log ``record`` (a passing record may say how many were dropped)."""
        exc = record.exc_info[0].__name__ if record.exc_info and record.exc_info[0] else ""
        key = (record.name, str(record.msg), exc)
        now = time.monotonic()
        with self._lock:
            last, dropped = self._seen.get(key, (float("-inf"), 0))
            if now - last < self.interval:
                self._seen[key] = (last, dropped + 1)
                return False
            self._seen[key] = (now, 0)
            if len(self._seen) > 10_000:  # Conditions are few; never grow without bound.
                self._seen = {key: (now, 0)}
        if dropped:
            record.msg = f"{record.msg} ({dropped} more like this in the last " \
                         f"{self.interval:g} s were not logged)"
        return True


def throttle(names: Iterable[str] = HOST_LOGGERS, interval: float = INTERVAL_S) -> Throttle:
    """Put one :class:`Throttle` on each logger of ``names`` (once); return it."""
    shared = Throttle(interval)
    for name in names:
        logger = logging.getLogger(name)
        if not any(isinstance(f, Throttle) for f in logger.filters):
            logger.addFilter(shared)
    return shared
