"""The SQLite event store: one file, WAL, optimistic concurrency across processes."""

from __future__ import annotations

import contextlib
import sqlite3
import threading
from collections.abc import AsyncIterator, Callable, Collection, Iterator, Sequence
from functools import partial
from itertools import chain
from pathlib import Path
from typing import Final

from wopdsl.errors import EventInvalid, StoreError
from wopdsl.protocol.envelope import RunEventDoc
from wopdsl.store._answers_sql import params
from wopdsl.store._claims import claim_held, lock_run
from wopdsl.store._codec import as_stored, decode_record, encode_event
from wopdsl.store._recent import CommitObservers, RecentCommits, follow_kept
from wopdsl.store._rows import decode_rows
from wopdsl.store._sqlite_open import connect_reader, connect_writer, read_only_hint
from wopdsl.store._sqlite_records import INSERT_ANSWER, SqliteRecords
from wopdsl.store._wakeups import Follower, waiters_for
from wopdsl.store.base import Answer, EventStore, RunInfo, append_conflict, run_started_at

__all__ = ["SqliteStore"]

_SELECT_LAST: Final = "SELECT max(sequence) FROM events WHERE run_id = ?"
_INSERT_EVENT: Final = "INSERT INTO events (run_id, sequence, type, body) VALUES (?, ?, ?, ?)"
_INSERT_RUN: Final = "INSERT INTO runs (run_id, workflow_id, started_at) VALUES (?, ?, ?)"
_SELECT_EVENTS: Final = (
    "SELECT sequence, body FROM events WHERE run_id = ? AND sequence > ? ORDER BY sequence"
)
_SELECT_RUNS: Final = """
SELECT r.run_id, r.workflow_id, r.started_at, e.sequence, e.type
FROM runs AS r JOIN events AS e
  ON e.run_id = r.run_id
 AND e.sequence = (SELECT max(sequence) FROM events WHERE run_id = r.run_id)
ORDER BY r.rowid
"""


_ONE_STATEMENT_ROWS: Final = 8
"""An append of at most this many events that continues this object's own commits is one
``INSERT`` statement: in autocommit a statement is a transaction of its own, so it needs no
``BEGIN`` and ``COMMIT`` (two calls into SQLite, ~2 µs of a turn's ~70)."""
_INSERTS: Final = {
    n: "INSERT INTO events (run_id, sequence, type, body) VALUES "
       + ", ".join(["(?, ?, ?, ?)"] * n) for n in range(1, _ONE_STATEMENT_ROWS + 1)
}


class SqliteStore(SqliteRecords, EventStore):
    """Keeps every run's events in one SQLite file (default ``.wop/runs.db``).

    The file is in WAL mode, so readers never block the writer, and several processes may
    share it: each append is one transaction that checks the run's length first (optimistic
    concurrency), with ``UNIQUE(run_id, sequence)`` as the backstop. An append that continues
    this object's own last commit to the run is checked by the key alone, so a short one is a
    single ``INSERT`` statement; any other takes ``BEGIN IMMEDIATE`` and reads the length.
    :meth:`subscribe` follows appends made by this process at once and appends made by other
    processes within :attr:`poll_interval`.

    Args:
        path: The database file; missing parent directories are created.
        busy_timeout: Seconds a writer waits for another process's transaction to finish
            before giving up with :class:`~wopdsl.errors.StoreError`.
        read_only: Open an existing file for reading only (``mode=ro``; ``immutable=1``
            when its folder is read-only too): works on a file this process cannot write,
            and every append or claim raises :class:`~wopdsl.errors.StoreError`.

    Raises:
        StoreError: the path is a folder; a writer cannot write the file or its folder;
            the file is not a SQLite store.

    Example:
        >>> store = SqliteStore(tmp_path / "runs.db")  # doctest: +SKIP
        >>> store.append("r1", events, expected_sequence=0)  # doctest: +SKIP
    """

    def __init__(self, path: Path | str, *, busy_timeout: float = 5.0,
                 read_only: bool = False) -> None:
        self.path = Path(path)
        """The database file."""
        self.busy_timeout = busy_timeout
        self.read_only = read_only
        """Whether the file was opened for reading only."""
        if self.path.is_dir():
            raise StoreError(f"{self.path} is a folder, not a store file",
                             hint=f"point --store (or WOP_STORE) at a file, e.g. "
                                  f"{self.path / 'runs.db'}")
        self._lock = threading.Lock()
        self._closed = False
        self._written: dict[str, int] = {}
        """Per run: the last sequence this object committed (see :meth:`append`)."""
        try:
            if not read_only:
                self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(
                f"{self.path}: cannot create the store directory: {exc}",
                hint="pass --store (or WOP_STORE) pointing at a writable location",
            ) from exc
        self._waiters = waiters_for(self.path)
        self._recent = RecentCommits()
        """What this object just committed, for its own subscribers (see :meth:`subscribe`)."""
        self._follower = Follower(self._waiters, self._data_version)
        self._observers = CommitObservers()
        self._fast_decode = True
        """Whether bodies may be read with orjson (layout 2 and later, see LAYOUT_VERSION)."""
        self._conn = self._connect()
        self._cursor = self._conn.cursor()

    def __repr__(self) -> str:
        return f"SqliteStore({str(self.path)!r})"

    # -- claims ----------------------------------------------------------------------------

    @contextlib.contextmanager
    def claim(self, run_id: str) -> Iterator[None]:
        """Hold the right to execute ``run_id``, in this process and across processes.

        Besides the in-process claim, takes an exclusive lock on one byte of the file
        ``<db>-claims`` (the byte is chosen by the run id), which the operating system
        releases when the holder ends in any way, ``kill -9`` included: a crashed run can be
        resumed at once, a live one cannot. Where POSIX locks are unavailable (Windows),
        claims hold within the process only.

        Raises:
            StoreConflict: another driver (here or in another process) holds the run.
        """
        self._writable()
        with super().claim(run_id):
            release = lock_run(self.path, run_id)
            try:
                yield
            finally:
                release()

    def claim_key(self) -> object:
        """Stores on the same file share in-process claims."""
        return str(self.path.resolve())

    def driven(self, run_id: str) -> bool | None:
        """Whether a driver holds the run: here, or in a process locking its claims byte."""
        return super().driven(run_id) or claim_held(self.path, run_id)

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
            StoreError: the file stayed locked longer than ``busy_timeout``, or SQLite failed.
        """
        if self.read_only:
            self._writable()  # Raises: nothing is appended to a file opened read-only.
        if not events:
            current = self.last_sequence(run_id)
            if current + 1 != expected_sequence:
                raise append_conflict(run_id, expected_sequence, current)
            return
        self.check_expected(run_id, events, expected_sequence)
        # Encode before taking the write lock, so other writers wait only for SQLite itself.
        try:
            rows = [(run_id, e["sequence"], e["type"], encode_event(e))
                    for e in as_stored(events, lambda: self._era(run_id))]
        except (TypeError, ValueError, RecursionError) as exc:
            raise EventInvalid(
                f"run {run_id}: an event cannot be stored as JSON: {exc}",
                hint="payloads must hold only JSON values (no NaN, sets, objects or cycles)",
            ) from None
        first = events[0]
        with self._lock:
            conn = self._conn
            cursor = self._cursor  # One cursor for appends: conn.execute makes one per call.
            # The last sequence this object committed for the run: while nobody else
            # appended, the run still ends there (see _transact).
            known = self._written.pop(run_id, None)
            try:
                if known is not None and known + 1 == expected_sequence and answer is None \
                        and len(rows) <= _ONE_STATEMENT_ROWS:
                    try:
                        cursor.execute(_INSERTS[len(rows)], list(chain.from_iterable(rows)))
                    except sqlite3.IntegrityError:  # Another writer appended meanwhile.
                        (held,) = conn.execute(_SELECT_LAST, (run_id,)).fetchone()
                        raise append_conflict(run_id, expected_sequence, held) from None
                else:
                    self._transact(run_id, rows, expected_sequence, known, first, answer)
            except sqlite3.IntegrityError:
                # The check above makes this a backstop: a damaged file, or another tool.
                raise append_conflict(run_id, expected_sequence, None) from None
            except sqlite3.Error as exc:
                raise self._failure(exc, "append to") from exc
            self._written[run_id] = events[-1]["sequence"]
            self._recent.keep(run_id, expected_sequence, rows)
        observers = self._observers.runs.get(run_id)
        if observers:
            self._observers.tell(run_id, observers, events)
        self._waiters.wake(run_id)

    def _transact(self, run_id: str, rows: list[tuple[str, int, str, str]], expected: int,
                  known: int | None, first: RunEventDoc, answer: Answer | None) -> None:
        """Insert ``rows`` in a ``BEGIN IMMEDIATE`` transaction, the run's length checked first.

        ``known``: the last sequence this object committed for the run, if any. While nobody
        else appended, the run still ends there (the log only grows); if anybody did, the row
        ``known + 1`` exists and the insert fails on the primary key. Either way the check
        holds without reading the run's last event first.
        """
        conn, cursor = self._conn, self._cursor
        cursor.execute("BEGIN IMMEDIATE")
        try:
            if known is not None and known + 1 == expected:
                found: int | None = known
            else:
                (found,) = conn.execute(_SELECT_LAST, (run_id,)).fetchone()
                current = -1 if found is None else found
                if current + 1 != expected:
                    raise append_conflict(run_id, expected, current)
            try:
                cursor.executemany(_INSERT_EVENT, rows)
            except sqlite3.IntegrityError:
                if found != known:
                    raise
                # Another writer appended since our last commit: say how much.
                (held,) = conn.execute(_SELECT_LAST, (run_id,)).fetchone()
                raise append_conflict(run_id, expected, held) from None
            if found is None:
                workflow = str(first["payload"].get("workflowId", ""))
                conn.execute(_INSERT_RUN, (run_id, workflow, run_started_at(first)))
            if answer is not None:
                conn.execute(INSERT_ANSWER, params(answer))
            cursor.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise

    # -- reading ---------------------------------------------------------------------------

    def read(self, run_id: str, after: int = -1) -> list[RunEventDoc]:
        """Return events with ``sequence > after``, checked as they are decoded.

        Raises:
            EventInvalid: a record is not JSON, is not a valid ``RunEventDoc``, has an
                unsupported ``schemaVersion``, or does not match its row (run, sequence).
        """
        with self._lock:
            try:
                rows = self._conn.execute(_SELECT_EVENTS, (run_id, after)).fetchall()
            except sqlite3.Error as exc:
                raise self._failure(exc, "read") from exc
        return decode_rows(str(self.path), run_id, after, rows, fast=self._fast_decode)

    def runs(self) -> list[RunInfo]:
        """List every run, oldest first (from the ``runs`` table; no event is decoded)."""
        with self._lock:
            try:
                rows = self._conn.execute(_SELECT_RUNS).fetchall()
            except sqlite3.Error as exc:
                raise self._failure(exc, "list runs in") from exc
        return [RunInfo(*row) for row in rows]

    def last_sequence(self, run_id: str) -> int:
        """Return the run's last sequence, or -1 when it has no events."""
        with self._lock:
            try:
                (found,) = self._conn.execute(_SELECT_LAST, (run_id,)).fetchone()
            except sqlite3.Error as exc:
                raise self._failure(exc, "read") from exc
        return -1 if found is None else int(found)

    def close(self) -> None:
        """Close the connection; later calls raise :class:`~wopdsl.errors.StoreError`."""
        with self._lock:
            if not self._closed:
                self._closed = True
                self._conn.close()
        self._follower.close()

    def subscribe(self, run_id: str, after: int = -1, *,
                  types: Collection[str] | None = None) -> AsyncIterator[RunEventDoc]:
        """Yield the run's events after ``after``: catch up first, then follow live.

        Never ends by itself; stop iterating (or cancel the task) when done. ``types``: only
        events of these (v1) types are yielded (a kept event of another type is not even
        decoded). Events this
        object has just committed are taken from what it keeps of its latest commits: the
        same bytes a read returns, decoded the same way, without reading them back
        (``wopdsl.store._recent``). Events any other writer committed, and whatever this
        object no longer keeps, are read from the log.
        """
        return follow_kept(self._recent, run_id, after, read=self.read,
                           decode=partial(decode_record, fast=self._fast_decode),
                           wait=self.wait_for_change, types=types)

    def observe_commits(self, run_id: str, observer: Callable[[Sequence[RunEventDoc]], None]
                        ) -> Callable[[], None]:
        """Tell ``observer`` of this object's commits (:meth:`EventStore.observe_commits`)."""
        return self._observers.add(run_id, observer)

    async def wait_for_change(self, run_id: str, after: int) -> None:
        """Wait until the run may have events after ``after``.

        Appends through any ``SqliteStore`` of this process wake the waiter at once; commits
        by other processes are seen within :attr:`poll_interval` by one cheap check for all
        the waiters of this object on the loop (``wopdsl.store._wakeups.Watch``).
        """
        await self._follower.wait(run_id, after, self.last_sequence, self.poll_interval)

    def _data_version(self) -> int:
        """A number that changes when another connection commits to the file."""
        with self._lock:
            try:
                (version,) = self._conn.execute("PRAGMA data_version").fetchone()
            except sqlite3.Error as exc:
                raise self._failure(exc, "read") from exc
        return int(version)

    # -- internals -------------------------------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        if self.read_only:
            conn, layout = connect_reader(self.path, self.busy_timeout)
        else:
            conn, layout = connect_writer(self.path, self.busy_timeout)
        self._fast_decode = layout >= 2
        return conn

    def _writable(self) -> None:
        if self.read_only:
            raise StoreError(f"{self.path} was opened read-only: nothing can be appended",
                             hint=read_only_hint(self.path))

    def _failure(self, exc: sqlite3.Error, doing: str) -> StoreError:
        text = str(exc)
        if self._closed or "closed database" in text:
            return StoreError(f"{self!r} is closed", hint="open the store again; close() is final")
        if getattr(exc, "sqlite_errorcode", None) in {5, 6} or "locked" in text:
            return StoreError(
                f"cannot {doing} {self.path}: the database stayed locked for "
                f"{self.busy_timeout:g} s ({text})",
                hint="another process holds a long transaction on this file; retry later",
            )
        if "not a database" in text:
            return StoreError(
                f"cannot {doing} {self.path}: the file is not a SQLite database",
                hint="point --store (or WOP_STORE) at a wopdsl store file or a new path",
            )
        if "readonly" in text:
            return StoreError(f"cannot {doing} {self.path}: {text}",
                              hint=read_only_hint(self.path))
        return StoreError(f"cannot {doing} {self.path}: {text}")
