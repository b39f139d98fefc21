"""Private: what a SQLite store keeps beside the log — private records and idempotency answers.

:class:`SqliteRecords` is the part of :class:`~wopdsl.store.sqlite.SqliteStore` that reads and
writes the ``private`` table (records a run keeps out of its public log, e.g. a tool call's
arguments) and the ``idempotency`` table (the answer kept for a request's key, so a retried
request gets the same answer). Each call is one statement or one transaction on the store's
connection, under its lock.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Mapping
from typing import Final

from wopdsl.errors import StoreError
from wopdsl.store._answers_sql import COLUMNS, from_row, params
from wopdsl.store.base import Answer

__all__ = ["INSERT_ANSWER", "SqliteRecords"]

_SELECT_ANSWER: Final = f"SELECT {COLUMNS} FROM idempotency WHERE scope = ?"
INSERT_ANSWER: Final = "INSERT OR IGNORE INTO idempotency VALUES (?, ?, ?, ?, ?)"
_SAVE_PRIVATE: Final = "INSERT OR REPLACE INTO private (run_id, key, value) VALUES (?, ?, ?)"
_READ_PRIVATE: Final = ("SELECT key, value FROM private WHERE run_id = ? AND substr(key, 1, ?) "
                        "= ?")


class SqliteRecords:
    """Private records and idempotency answers of a SQLite store (see ``EventStore``)."""

    _lock: threading.Lock
    _conn: sqlite3.Connection

    def _writable(self) -> None:
        raise NotImplementedError  # SqliteStore._writable

    def _failure(self, exc: sqlite3.Error, doing: str) -> StoreError:
        raise NotImplementedError  # SqliteStore._failure

    # -- private records (the ``private`` table) -------------------------------------------

    def save_private(self, run_id: str, entries: Mapping[str, str]) -> None:
        """Keep records beside the log in one transaction (see ``EventStore.save_private``)."""
        self._writable()
        if not entries:
            return
        rows = [(run_id, key, value) for key, value in entries.items()]
        with self._lock:
            conn = self._conn
            try:
                conn.execute("BEGIN IMMEDIATE")
                try:
                    conn.executemany(_SAVE_PRIVATE, rows)
                    conn.execute("COMMIT")
                except BaseException:
                    if conn.in_transaction:
                        conn.execute("ROLLBACK")
                    raise
            except sqlite3.Error as exc:
                raise self._failure(exc, "write private records to") from exc

    def read_private(self, run_id: str, prefix: str = "") -> dict[str, str]:
        """Return the run's private records under ``prefix`` (none in an older file)."""
        with self._lock:
            try:
                rows = self._conn.execute(_READ_PRIVATE, (run_id, len(prefix), prefix)
                                          ).fetchall()
            except sqlite3.OperationalError as exc:
                if "no such table" in str(exc):
                    return {}
                raise self._failure(exc, "read private records from") from exc
            except sqlite3.Error as exc:
                raise self._failure(exc, "read private records from") from exc
        return {str(key): str(value) for key, value in rows}

    # -- idempotency answers (the ``idempotency`` table) ------------------------------------

    def remember_answer(self, answer: Answer) -> Answer:
        """Keep ``answer`` unless its scope has one; return the one kept (first wins)."""
        self._writable()
        with self._lock:
            try:
                self._conn.execute(INSERT_ANSWER, params(answer))
                row = self._conn.execute(_SELECT_ANSWER, (answer.scope,)).fetchone()
            except sqlite3.Error as exc:
                raise self._failure(exc, "write to") from exc
        return from_row(row) or answer

    def recall_answer(self, scope: str) -> Answer | None:
        """Return the answer kept for ``scope`` (``None`` also on a store without the table)."""
        with self._lock:
            try:
                return from_row(self._conn.execute(_SELECT_ANSWER, (scope,)).fetchone())
            except sqlite3.OperationalError as exc:
                if "no such table" in str(exc):  # A read-only file of an older release.
                    return None
                raise self._failure(exc, "read") from exc

    def forget_answers(self, before: float) -> int:
        """Drop the answers created before ``before`` (epoch seconds); return how many."""
        self._writable()
        with self._lock:
            try:
                return self._conn.execute("DELETE FROM idempotency WHERE created_at < ?",
                                          (before,)).rowcount
            except sqlite3.Error as exc:
                raise self._failure(exc, "write to") from exc
