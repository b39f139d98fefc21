"""Live wake-ups for the PostgreSQL store: one ``LISTEN`` connection on a background thread.

Every append notifies the store's channel with the run id at commit. The listener thread
wakes the asyncio futures waiting on that run, on whatever event loop each belongs to.
When its connection is lost it reconnects (with backoff) and then wakes *every* waiter:
notifications sent while it was away are gone, so each subscriber re-reads the log from its
own last sequence, which is how it catches up without a gap or a duplicate.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from typing import TYPE_CHECKING, Final

from wopdsl.errors import StoreError
from wopdsl.store._pg_connect import Target

if TYPE_CHECKING:
    import psycopg

log = logging.getLogger("wopdsl.store.postgres")

_TICK: Final = 1.0
"""Seconds between the thread's checks that it should stop (no query is sent)."""
_PING_EVERY: Final = 15.0
"""Seconds of silence after which the listener checks its connection with ``SELECT 1``:
a connection that died without a word (a network partition) is noticed this way."""
_BACKOFF: Final = (0.05, 0.1, 0.25, 0.5, 1.0, 2.0)
"""Seconds between reconnection attempts, the last one repeated."""


class Listener:
    """Wakes subscribers of one store when its channel is notified.

    Args:
        target: Where to connect.
        channel: The channel to ``LISTEN`` on.
    """

    def __init__(self, target: Target, channel: str) -> None:
        self.target = target
        self.channel = channel
        self.reconnects = 0
        """How many times the connection was lost and made again (for tests and logs)."""
        self._lock = threading.Lock()
        self._waiters: dict[str, dict[asyncio.Future[None], asyncio.AbstractEventLoop]] = {}
        self._thread: threading.Thread | None = None
        self._listening = threading.Event()
        self._failure: StoreError | None = None
        self._stopping = threading.Event()
        self._conn: psycopg.Connection | None = None

    # -- for the store ---------------------------------------------------------------------

    def start(self, timeout: float = 30.0) -> None:
        """Start the thread (once) and block until it listens.

        Raises:
            StoreError: the first connection failed (later losses are retried instead).
        """
        with self._lock:
            if self._stopping.is_set():
                raise StoreError(f"the store on {self.target.where} is closed",
                                 hint="open the store again; close() is final")
            if self._thread is None:
                self._failure = None
                self._thread = threading.Thread(target=self._run, name="wopdsl-pg-listen",
                                                daemon=True)
                self._thread.start()
            thread = self._thread
        deadline = time.monotonic() + timeout
        while not self._listening.wait(0.05):
            if self._failure is not None and not thread.is_alive():
                with self._lock:
                    self._thread = None
                raise self._failure
            if time.monotonic() > deadline:
                raise self.target.error("listen on", "no LISTEN connection within "
                                        f"{timeout:g} s")

    @property
    def started(self) -> bool:
        """Whether the thread has listened at least once (waiters may register)."""
        return self._listening.is_set()

    def add(self, run_id: str, loop: asyncio.AbstractEventLoop, future: asyncio.Future[None]) \
            -> None:
        """Wake ``future`` (on ``loop``) at the run's next notification or reconnection."""
        with self._lock:
            self._waiters.setdefault(run_id, {})[future] = loop

    def discard(self, run_id: str, future: asyncio.Future[None]) -> None:
        """Forget a waiter (it was woken, or gave up)."""
        with self._lock:
            waiting = self._waiters.get(run_id)
            if waiting is not None:
                waiting.pop(future, None)
                if not waiting:
                    del self._waiters[run_id]

    def wake(self, run_id: str | None) -> None:
        """Wake the run's waiters now (``None``: everybody's)."""
        if not self._waiters:
            return
        with self._lock:
            if run_id is None:
                woken = [w for waiting in self._waiters.values() for w in waiting.items()]
                self._waiters.clear()
            else:
                woken = list(self._waiters.pop(run_id, {}).items())
        for future, loop in woken:
            # A closed loop raises RuntimeError: that subscriber is gone, nobody waits.
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(_resolve, future)

    @property
    def backend_pid(self) -> int | None:
        """The server process serving the ``LISTEN`` connection, while connected."""
        conn = self._conn
        return None if conn is None else conn.info.backend_pid

    def stop(self) -> None:
        """Stop listening; the thread closes its connection within a second."""
        self._stopping.set()
        self.wake(None)

    # -- the thread ------------------------------------------------------------------------

    def _run(self) -> None:
        import psycopg

        attempt = 0
        first = True
        while not self._stopping.is_set():
            try:
                conn = self.target.connect("listen")
            except StoreError as exc:
                if first:  # The caller of start() reports it; later it is retried.
                    self._failure = exc
                    return
                # Once per outage, not once per attempt: a long outage floods no log.
                (log.warning if attempt == 0 else log.debug)("%s; retrying", exc)
                self._stopping.wait(_BACKOFF[min(attempt, len(_BACKOFF) - 1)])
                attempt += 1
                continue
            self._conn = conn
            try:
                conn.execute(f'LISTEN "{self.channel}"')  # a fixed name
                if not first:
                    self.reconnects += 1
                    log.info("listening on %s again; subscribers catch up", self.target.where)
                self._listening.set()
                first, attempt = False, 0
                # Anything appended while nobody listened went unnotified: every waiter
                # re-reads from its own cursor.
                self.wake(None)
                self._listen(conn)
            except psycopg.Error as exc:
                if first:
                    self._failure = self.target.error("listen on", exc)
                    return
                if not self._stopping.is_set():
                    log.warning("lost the LISTEN connection to %s (%s); reconnecting",
                                self.target.where, self.target.scrub(str(exc).strip()))
            finally:
                self._conn = None
                with contextlib.suppress(Exception):
                    conn.close()

    def _listen(self, conn: psycopg.Connection) -> None:
        quiet_since = time.monotonic()
        while not self._stopping.is_set():
            got = False
            for notify in conn.notifies(timeout=_TICK):
                got = True
                self.wake(notify.payload)
            if got:
                quiet_since = time.monotonic()
            elif time.monotonic() - quiet_since > _PING_EVERY:
                conn.execute("SELECT 1")
                quiet_since = time.monotonic()


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)
