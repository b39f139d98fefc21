"""Run claims for the PostgreSQL store: session advisory locks on one driving connection.

A store's claims are held by one connection of its own (``wopdsl claims`` in
``pg_stat_activity``), and the appends of the runs it claims go through that same
connection. The server drops a session's advisory locks when the session ends, however it
ends (the process was killed, the host vanished and TCP keepalives gave up, an operator
terminated the backend), so another host can resume those runs; and since the old driver's
appends need that very session, they fail instead of racing the new driver.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, Final

from wopdsl.errors import StoreError, StoreUnavailable
from wopdsl.store._pg_connect import Target
from wopdsl.store._pg_schema import key
from wopdsl.store.base import busy

if TYPE_CHECKING:
    import psycopg

_SERVER_KEEPALIVES: Final = (
    # The server's side of the connection: a driver host that vanishes without closing it
    # releases its runs after about 10 + 3 × 5 s. Ignored on Unix-socket connections.
    "SET tcp_keepalives_idle = 10",
    "SET tcp_keepalives_interval = 5",
    "SET tcp_keepalives_count = 3",
)


_HELD: Final = ("SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted"
                " AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"
                " AND classid = %s AND objid = %s AND objsubid = 1)")
"""Whether any session holds an advisory lock (pg_locks lists a bigint key as its high and
low 32 bits, ``objsubid`` 1); reading ``pg_locks`` takes no lock and needs no privilege."""


def held_by_any(schema: str, run_id: str) -> Callable[[psycopg.Connection[Any]], bool]:
    """A query for a pooled connection: whether any session holds ``run_id``'s claim."""
    unsigned = key(schema, run_id) & 0xFFFF_FFFF_FFFF_FFFF

    def query(conn: psycopg.Connection[Any]) -> bool:
        row = conn.execute(_HELD, (unsigned >> 32, unsigned & 0xFFFF_FFFF)).fetchone()
        return bool(row and row[0])

    return query


class Claims:
    """The advisory locks one store holds, on its driving connection.

    Args:
        target: Where to connect.
        schema: The store's schema (lock keys are per schema).
    """

    def __init__(self, target: Target, schema: str) -> None:
        self.target = target
        self.schema = schema
        self._lock = threading.RLock()
        self._conn: psycopg.Connection | None = None
        self._held: set[str] = set()
        self._lost: set[str] = set()
        """Runs whose claim went with a lost connection: they may not append here again."""

    @property
    def backend_pid(self) -> int | None:
        """The server process holding this store's claims, while connected."""
        conn = self._conn
        return None if conn is None else conn.info.backend_pid

    def acquire(self, run_id: str) -> None:
        """Take the run's advisory lock without waiting.

        Raises:
            RunBusy: another session (another process or host) holds it.
            StoreError: the server cannot be reached.
        """
        import psycopg

        with self._lock:
            conn = self._connection()
            try:
                row = conn.execute("SELECT pg_try_advisory_lock(%s)",
                                   (key(self.schema, run_id),)).fetchone()
            except psycopg.Error as exc:
                self._drop()
                raise self.target.error(f"claim run {run_id} on", exc) from None
            if not row or not row[0]:
                raise busy(run_id, f"another process or host sharing {self.target.where}")
            self._held.add(run_id)

    def release(self, run_id: str) -> None:
        """Let the run go (a claim lost with its connection is already gone)."""
        import psycopg

        with self._lock:
            if run_id in self._lost:
                self._lost.discard(run_id)
                return
            if run_id not in self._held:
                return
            self._held.discard(run_id)
            conn = self._conn
            if conn is None:
                return
            try:
                conn.execute("SELECT pg_advisory_unlock(%s)", (key(self.schema, run_id),))
            except psycopg.Error:
                self._drop()  # The session is gone, and its locks with it.

    @contextlib.contextmanager
    def connection_for(self, run_id: str) -> Iterator[psycopg.Connection | None]:
        """Yield the driving connection if this store claims ``run_id``, else ``None``.

        A failure of that connection while in use loses every claim on it.

        Raises:
            StoreError: the run's claim was lost with its connection (the run is not
                appended to from here again), or the server refused the statement.
        """
        import psycopg

        if run_id not in self._held and run_id not in self._lost:
            yield None
            return
        with self._lock:
            if run_id in self._lost or self._conn is None:
                raise self._lost_error(run_id)
            conn = self._conn
            try:
                yield conn
            except psycopg.Error as exc:
                if conn.broken or conn.closed:
                    self._drop()
                    raise self._lost_error(run_id) from None
                raise self.target.error(f"append to run {run_id} on", exc) from None

    def close(self) -> None:
        """Close the driving connection: the server releases every claim."""
        with self._lock:
            self._lost |= self._held
            self._held.clear()
            conn, self._conn = self._conn, None
        if conn is not None:
            with contextlib.suppress(Exception):
                conn.close()

    # -- internals -------------------------------------------------------------------------

    def _connection(self) -> psycopg.Connection:
        conn = self._conn
        if conn is not None and (conn.broken or conn.closed):
            self._drop()
            conn = None
        if conn is None:
            conn = self.target.connect("claims")
            try:
                for statement in _SERVER_KEEPALIVES:
                    conn.execute(statement)
            except Exception:
                conn.close()
                raise
            self._conn = conn
        return conn

    def _drop(self) -> None:
        """The connection is gone: so are its claims."""
        self._lost |= self._held
        self._held.clear()
        conn, self._conn = self._conn, None
        if conn is not None:
            with contextlib.suppress(Exception):
                conn.close()

    def _lost_error(self, run_id: str) -> StoreError:
        return StoreUnavailable(
            f"run {run_id}: lost the connection to {self.target.where} that held its claim; "
            f"another host may be driving it now, so this driver stops",
            hint="resume the run (wop resume RUN) once no other host drives it; nothing "
                 "is lost, the log holds every completed turn",
        )
