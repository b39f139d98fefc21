"""The PostgreSQL event store: one database shared by many host processes and machines.

Needs the ``postgres`` extra (``pip install 'wopdsl[postgres]'``: psycopg 3 and its pool).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, TypeVar

import psycopg

from wopdsl.errors import EventInvalid, StoreError
from wopdsl.protocol.envelope import RunEventDoc
from wopdsl.store import _pg_schema as sql
from wopdsl.store._answers_sql import from_row
from wopdsl.store._answers_sql import params as answer_params
from wopdsl.store._codec import as_stored, encode_event
from wopdsl.store._pg_claims import Claims, held_by_any
from wopdsl.store._pg_connect import Target, parse
from wopdsl.store._pg_listen import Listener
from wopdsl.store._pg_pool import Connections
from wopdsl.store._rows import decode_rows
from wopdsl.store.base import Answer, EventStore, RunInfo, append_conflict, run_started_at

__all__ = ["PostgresStore"]

_T = TypeVar("_T")


class PostgresStore(EventStore):
    """Keeps every run's events in a PostgreSQL database that many hosts share.

    Appends are one round trip and one transaction each (a server-side function checks the
    run's length, inserts the batch and notifies at commit), with the ``(run_id, sequence)``
    primary key as the optimistic-concurrency backstop. Subscribers are woken by
    ``LISTEN/NOTIFY`` across processes and machines; claims are session advisory locks on
    the store's driving connection, which the server releases when the holder dies. The
    tables (``wopdsl_*``, in the connection's current schema) are created and migrated by
    the store itself.

    Args:
        url: ``postgresql://USER:PASSWORD@HOST:PORT/DATABASE`` (``postgres://`` too, and
            any libpq parameter, e.g. ``?sslmode=require``). The password never appears in
            an error, a log line or :func:`repr`.
        pool_size: Most connections the store opens for reads and appends at once.
        timeout: Seconds to wait for a pooled connection before failing.
        create: When false, a database without the store's tables is not given them;
            :class:`~wopdsl.RunNotFound` is raised instead (reading needs existing runs).
        reconnect_s: How long a driver waits for the server to come back when it becomes
            unreachable, before the run stops (default: ``WOP_STORE_RECONNECT_S``, else 60).

    Raises:
        StoreError: the string is invalid, the server is down or refuses the credentials,
            the database is missing, or its tables are newer than this wopdsl.

    Example:
        >>> store = PostgresStore("postgresql://wop@db.internal/councils")  # doctest: +SKIP
    """

    blocking = True

    def __init__(self, url: str, *, pool_size: int = 4, timeout: float = 15.0,
                 create: bool = True, reconnect_s: float | None = None) -> None:
        self.reconnect_s = _reconnect_s() if reconnect_s is None else reconnect_s
        self.target: Target = parse(url)
        """The server and database (``target.where`` prints them without the password)."""
        self.timeout = timeout
        self._closed = False
        conn = self.target.connect("setup")
        try:
            self.schema = sql.prepare(conn, self.target, create=create)
            """The schema holding the store's tables."""
        finally:
            conn.close()
        self._channel = sql.channel(self.schema)
        self._connections = Connections(self.target, size=pool_size, timeout=timeout,
                                        label=repr(self))
        self._claims = Claims(self.target, self.schema)
        self._listener = Listener(self.target, self._channel)
        # A store nobody closed (``council.arun(store="postgresql://…")`` opens one for its
        # run) still closes its connections when it is collected or the process exits.
        self._finalizer = weakref.finalize(self, _close_parts, self._listener, self._claims,
                                           self._connections)

    def __repr__(self) -> str:
        return f"PostgresStore({self.target.where!r})"

    # -- claims ----------------------------------------------------------------------------

    @contextlib.contextmanager
    def claim(self, run_id: str) -> Iterator[None]:
        """Hold the right to execute ``run_id``, in this process and on every host.

        Takes a session advisory lock on the store's driving connection, through which the
        run's appends then go. The server releases it when the holder ends in any way
        (``kill -9``, a lost connection), so another host can resume the run at once; and
        an old driver that lost its connection cannot append any more.

        Raises:
            RunBusy: another driver (here or on another host) holds the run.
            StoreError: the server cannot be reached.
        """
        with super().claim(run_id):
            self._check_open()
            self._claims.acquire(run_id)
            try:
                yield
            finally:
                self._claims.release(run_id)

    def driven(self, run_id: str) -> bool | None:
        """Whether a session of any process or host holds the run's advisory lock."""
        return super().driven(run_id) or self._with_conn(
            f"read the claim of run {run_id} from", held_by_any(self.schema, run_id))

    # -- writing ---------------------------------------------------------------------------

    def append_answered(self, run_id: str, events: Sequence[RunEventDoc],
                        expected_sequence: int, answer: Answer) -> None:
        """Append and keep ``answer`` in one transaction (``EventStore.append_answered``)."""
        self.append(run_id, events, expected_sequence, answer=answer)

    def append(self, run_id: str, events: Sequence[RunEventDoc], expected_sequence: int, *,
               answer: Answer | None = None) -> None:
        """Append atomically in one transaction (see :meth:`EventStore.append`).

        Raises:
            StoreConflict: the run's length is not ``expected_sequence``; nothing was written.
            EventInvalid: an event cannot be encoded as JSON; nothing was written.
            StoreError: the server cannot be reached, or the run's claim was lost.
        """
        if not events:
            current = self.last_sequence(run_id)
            if current + 1 != expected_sequence:
                raise append_conflict(run_id, expected_sequence, current)
            return
        self.check_expected(run_id, events, expected_sequence)
        try:
            events = as_stored(events, lambda: self._era(run_id))
            bodies = [encode_event(event) for event in events]
        except (TypeError, ValueError, RecursionError) as exc:
            raise EventInvalid(
                f"run {run_id}: an event cannot be stored as JSON: {exc}",
                hint="payloads must hold only JSON values (no NaN, sets, objects or cycles)",
            ) from None
        first = events[0]
        params = (run_id, expected_sequence, [e["type"] for e in events], bodies,
                  str(first["payload"].get("workflowId", "")), run_started_at(first),
                  self._channel)

        def call(conn: psycopg.Connection[Any]) -> int:
            try:
                if answer is None:
                    return _held(conn.execute(sql.APPEND, params).fetchone())
                with conn.transaction():  # The answer is kept exactly when the events are.
                    held = _held(conn.execute(sql.APPEND, params).fetchone())
                    if held + 1 != expected_sequence:
                        raise append_conflict(run_id, expected_sequence, held)
                    conn.execute(sql.REMEMBER, answer_params(answer))
                    return held
            except psycopg.errors.UniqueViolation:
                # Another writer committed the same sequence while this one waited for it.
                raise append_conflict(run_id, expected_sequence, None) from None

        self._check_open()
        with self._claims.connection_for(run_id) as driver:
            if driver is not None:
                held = call(driver)  # Its failures are translated by connection_for.
            else:
                held = self._with_conn(f"append to run {run_id} on", call,
                                       retry=lambda: self._landed(run_id, events))
        if held + 1 != expected_sequence:
            raise append_conflict(run_id, expected_sequence, held)
        self._listener.wake(run_id)  # Subscribers in this process, without the round trip.

    def _landed(self, run_id: str, events: Sequence[RunEventDoc]) -> int | None:
        """After a connection died mid-append: did the batch commit before it did?

        Returns:
            The run's length before the batch if it did (the append succeeded), ``None`` if
            it did not (the append is made again).
        """
        last = events[-1]
        rows = self.read(run_id, last["sequence"] - 1)
        if rows and rows[0] == last:
            return events[0]["sequence"] - 1
        return None

    def save_private(self, run_id: str, entries: Mapping[str, str]) -> None:
        """Keep records beside the log in one transaction (see ``EventStore.save_private``)."""
        if not entries:
            return
        params = (run_id, list(entries), list(entries.values()))
        self._check_open()
        self._with_conn(f"write private records of run {run_id} to",
                        lambda conn: conn.execute(sql.SAVE_PRIVATE, params))

    def read_private(self, run_id: str, prefix: str = "") -> dict[str, str]:
        """Return the run's private records under ``prefix``."""
        rows: list[tuple[str, str]] = self._with_conn(
            f"read private records of run {run_id} from",
            lambda conn: conn.execute(sql.READ_PRIVATE, (run_id, len(prefix), prefix))
            .fetchall())
        return {str(key): str(value) for key, value in rows}

    # -- reading ---------------------------------------------------------------------------

    def read(self, run_id: str, after: int = -1) -> list[RunEventDoc]:
        """Return events with ``sequence > after``, checked as they are decoded.

        Raises:
            EventInvalid: a record is not JSON, is not a valid ``RunEventDoc``, has an
                unsupported ``schemaVersion``, or does not match its row (run, sequence).
        """
        rows: list[tuple[int, str]] = self._with_conn(
            f"read run {run_id} from",
            lambda conn: conn.execute(sql.SELECT_EVENTS, (run_id, after)).fetchall())
        return decode_rows(self.target.where, run_id, after, rows)

    def runs(self) -> list[RunInfo]:
        """List every run, oldest first (no event is decoded)."""
        rows = self._with_conn("list runs in",
                               lambda conn: conn.execute(sql.SELECT_RUNS).fetchall())
        return [RunInfo(str(r[0]), str(r[1]), str(r[2]), int(r[3]), str(r[4])) for r in rows]

    def last_sequence(self, run_id: str) -> int:
        """Return the run's last sequence, or -1 when it has no events."""
        row = self._with_conn(f"read run {run_id} from",
                              lambda conn: conn.execute(sql.SELECT_LAST, (run_id,)).fetchone())
        return -1 if row is None or row[0] is None else int(row[0])

    async def wait_for_change(self, run_id: str, after: int) -> None:
        """Wait until the run has events after ``after``, woken by ``LISTEN/NOTIFY``.

        Appends by any host wake the waiter at commit; there is no polling. If the listening
        connection is lost, it is made again and every waiter re-checks, so a subscriber
        catches up from its own last sequence without a gap or a duplicate.
        """
        self._check_open()
        listener = self._listener
        if not listener.started:
            await asyncio.to_thread(listener.start, self.timeout)
        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()
        # Register before checking, so an append between the two is never missed.
        listener.add(run_id, loop, future)
        try:
            if await self.call(self.last_sequence, run_id) > after:
                return
            await future
        finally:
            listener.discard(run_id, future)

    # -- idempotency answers (the ``wopdsl_idempotency`` table) ----------------------------

    def remember_answer(self, answer: Answer) -> Answer:
        """Keep ``answer`` unless its scope has one; return the one kept (first wins)."""

        def call(conn: psycopg.Connection[Any]) -> Answer | None:
            conn.execute(sql.REMEMBER, answer_params(answer))
            return from_row(conn.execute(sql.RECALL, (answer.scope,)).fetchone())

        return self._with_conn("keep an idempotency answer in", call) or answer

    def recall_answer(self, scope: str) -> Answer | None:
        """Return the answer kept for ``scope``, if any."""
        return self._with_conn("read an idempotency answer from", lambda conn: from_row(
            conn.execute(sql.RECALL, (scope,)).fetchone()))

    def forget_answers(self, before: float) -> int:
        """Drop the answers created before ``before`` (epoch seconds); return how many."""
        return self._with_conn("drop old idempotency answers from",
                               lambda conn: conn.execute(sql.FORGET, (before,)).rowcount)

    def close(self) -> None:
        """Close every connection (claims are released); later calls raise ``StoreError``."""
        if self._closed:
            return
        self._closed = True
        self._finalizer()

    # -- internals -------------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise StoreError(f"{self!r} is closed", hint="open the store again; close() is final")

    def _with_conn(self, doing: str, use: Callable[[psycopg.Connection[Any]], _T],
                   retry: Callable[[], _T | None] | None = None) -> _T:
        """Run ``use`` on a pooled connection (see :meth:`Connections.run`)."""
        self._check_open()
        return self._connections.run(doing, use, retry)


def _reconnect_s() -> float:
    raw = os.environ.get("WOP_STORE_RECONNECT_S", "")
    try:
        return max(0.0, float(raw)) if raw.strip() else 60.0
    except ValueError:
        raise StoreError(f"WOP_STORE_RECONNECT_S is not a number of seconds: {raw!r}",
                         hint="e.g. WOP_STORE_RECONNECT_S=60") from None


def _held(row: tuple[Any, ...] | None) -> int:
    """The run's last sequence before an append, from ``wopdsl_append``'s row."""
    return -1 if row is None or row[0] is None else int(row[0])


def _close_parts(listener: Listener, claims: Claims, connections: Connections) -> None:
    """Close a store's connections: its listener, its claims' and its pool's."""
    listener.stop()
    claims.close()
    connections.close()
